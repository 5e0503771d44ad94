package monitor

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/lvm"
)

// An old-style pvs report has no pv_pe_alloc_count column (the derived
// trees' and the lab captures' pvs.json: lvm2's default columns), so a PV's
// use is unknown. With a member disk gone from /sys/block while the pvs
// report still names its PV by path (/dev/sdf), monitor listed that disk
// twice: once as the missing image, once more as an "unused" PV of the VG
// (a disk without sysfs or diskstats). Each disk must appear once, and the
// missing one only as the missing image.
func TestMissingMemberOnceWithOldStylePVs(t *testing.T) {
	edit := func(t *testing.T, path string, pairs ...string) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for i := 0; i < len(pairs); i += 2 {
			if !strings.Contains(s, pairs[i]) {
				t.Fatalf("%s: no %q to replace", path, pairs[i])
			}
			s = strings.ReplaceAll(s, pairs[i], pairs[i+1])
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// the missing tree (sdf gone from sysfs, its image on an error target),
	// with pvs.json naming the lost PV /dev/sdf instead of [unknown]
	pvsNamesSDF := func(t *testing.T, root string) {
		edit(t, filepath.Join(root, "lvm", "pvs.json"), `"pv_name":"[unknown]"`, `"pv_name":"/dev/sdf"`)
	}
	cases := []struct {
		name string
		edit func(t *testing.T, root string)
	}{
		// LVM has noticed: lvs puts image 5 on [unknown], the array is partial
		{"lvs-unknown", pvsNamesSDF},
		// LVM has not noticed yet (the disk vanished after LVM's scan): lvs
		// still puts image 5 on /dev/sdf, the array is not partial
		{"lvs-stale", func(t *testing.T, root string) {
			pvsNamesSDF(t, root)
			edit(t, filepath.Join(root, "lvm", "lvs.json"), "[unknown]", "/dev/sdf", "rwi-a-r-p-", "rwi-a-r---", `"partial"`, `""`)
		}},
		// control: the same with the column lvm gives live
		{"with-alloc-column", func(t *testing.T, root string) {
			pvsNamesSDF(t, root)
			edit(t, filepath.Join(root, "lvm", "pvs.json"), `"pv_pe_count":"63"`, `"pv_pe_count":"63", "pv_pe_alloc_count":"63"`)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := derived(t, "missing")
			c.edit(t, root)
			topo := discover(t, root, "vg-hdd/tables")
			a := topo.Arrays[0]
			want := []string{"sda", "sdb", "sdc", "sdd", "sde", "missing:tables_rimage_5"}
			if got := memberDisks(a); !reflect.DeepEqual(got, want) {
				t.Errorf("members %v, want %v (each disk once)", got, want)
			}
			for _, p := range a.Problems {
				if p.Code == lvm.CodePVUnused {
					t.Errorf("a pv-unused finding for the missing disk: %s", p.Text)
				}
			}
		})
	}
}
