package monitor

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/lvm"
	"github.com/tbhost/tbhost/lvm/lvmfake"
)

func discover(t *testing.T, root string, names ...string) Topology {
	t.Helper()
	topo, err := Discover(context.Background(), DiscoverOptions{Root: root, LVM: FileReport{Dir: root + "/lvm"}, Names: names})
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func memberDisks(a Array) []string {
	var out []string
	for _, m := range a.Members {
		out = append(out, m.Label())
	}
	return out
}

func TestDiscoverBalanced(t *testing.T) {
	topo := discover(t, derived(t, "balanced"))
	if len(topo.Arrays) != 2 {
		t.Fatalf("arrays: %+v", topo.Arrays)
	}
	tables := topo.Arrays[0]
	if tables.Name != "vg-hdd/tables" || tables.Device != "dm-24" || tables.Level != "raid5" || tables.Images != 6 {
		t.Errorf("tables: %+v", tables)
	}
	if got, want := memberDisks(tables), []string{"sda", "sdb", "sdc", "sdd", "sde", "sdf"}; !reflect.DeepEqual(got, want) {
		t.Errorf("disks %v, want %v", got, want)
	}
	m := tables.Members[2]
	if m.ID != "scsi-0QEMU_QEMU_HARDDISK_HDD3" || !reflect.DeepEqual(m.Images, []string{"tables_rimage_2"}) || m.IntegrityMismatches != 0 {
		t.Errorf("member sdc: %+v", m)
	}
	if tables.Members[0].ID != "wwn-0x5000c500a0000001" {
		t.Errorf("sda id %q: wwn- must win over the scsi- id (internal/blockdev's rule, as in lvm plan)", tables.Members[0].ID)
	}
	if len(tables.Problems) != 0 {
		t.Errorf("healthy array has problems: %+v", tables.Problems)
	}
	prefix := topo.Arrays[1]
	if prefix.Name != "vg-nvme/prefix" || !reflect.DeepEqual(memberDisks(prefix), []string{"nvme0n1", "nvme1n1"}) {
		t.Errorf("prefix: %+v", prefix)
	}
	if prefix.Members[0].ID != "nvme-QEMU_NVMe_Ctrl_NVME1" {
		t.Errorf("nvme id %q", prefix.Members[0].ID)
	}
}

func TestDiscoverSysfsOnlyMatchesLVM(t *testing.T) {
	root := derived(t, "balanced")
	topo, err := Discover(context.Background(), DiscoverOptions{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.Arrays) != 2 {
		t.Fatalf("arrays: %+v", topo.Arrays)
	}
	withLVM := discover(t, root)
	for i := range topo.Arrays {
		if got, want := memberDisks(topo.Arrays[i]), memberDisks(withLVM.Arrays[i]); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: sysfs alone %v, with LVM %v", topo.Arrays[i].Name, got, want)
		}
	}
}

func TestDiscoverMisbuiltImagesSpanTwoDisks(t *testing.T) {
	topo := discover(t, derived(t, "misbuilt"))
	if len(topo.Arrays) != 1 {
		t.Fatalf("arrays: %+v", topo.Arrays)
	}
	a := topo.Arrays[0]
	if a.Images != 3 || len(a.Members) != 6 {
		t.Fatalf("images %d members %v", a.Images, memberDisks(a))
	}
	if got := a.Members[1].Images; !reflect.DeepEqual(got, []string{"probe_rimage_0"}) || a.Members[1].Disk != "sdd" {
		t.Errorf("second member: %+v", a.Members[1])
	}
	found := false
	for _, p := range a.Problems {
		if p.Severity == Warning && strings.Contains(p.Text, "3 of them span several disks (probe_rimage_0 on sda+sdd, probe_rimage_1 on sdb+sde") {
			found = true
		}
	}
	if !found {
		t.Errorf("no spanning warning: %+v", a.Problems)
	}
}

func TestDiscoverMissingMember(t *testing.T) {
	topo := discover(t, derived(t, "missing"), "vg-hdd/tables")
	a := topo.Arrays[0]
	last := a.Members[len(a.Members)-1]
	if !last.Missing || last.Disk != "" || !reflect.DeepEqual(last.Images, []string{"tables_rimage_5"}) {
		t.Errorf("missing member: %+v", last)
	}
	var crit []string
	for _, p := range a.Problems {
		if p.Severity == Critical {
			crit = append(crit, p.Text)
		}
	}
	if len(crit) != 2 || !strings.Contains(strings.Join(crit, "|"), "partial") {
		t.Errorf("critical problems %q", crit)
	}
}

func TestUnusedPVsAreMembers(t *testing.T) {
	// the misbuilt tree's VG, with the array on sda-sdc only: sdd-sdf hold nothing
	topo := discover(t, derived(t, "misbuilt"))
	a := topo.Arrays[0]
	for _, m := range a.Members {
		if len(m.Images) == 0 {
			t.Errorf("%s has no image but every PV holds part of one", m.Disk)
		}
	}
}

func TestSelectArrays(t *testing.T) {
	root := derived(t, "balanced")
	for _, n := range []string{"vg-nvme/prefix", "/dev/vg-nvme/prefix", "/dev/mapper/vg--nvme-prefix", "vg--nvme-prefix", "dm-27"} {
		topo := discover(t, root, n)
		if len(topo.Arrays) != 1 || topo.Arrays[0].Name != "vg-nvme/prefix" {
			t.Errorf("%s: %+v", n, topo.Arrays)
		}
	}
	_, err := Discover(context.Background(), DiscoverOptions{Root: root, Names: []string{"vg-hdd/nope"}})
	if err == nil || !strings.Contains(err.Error(), "vg-hdd/tables") {
		t.Errorf("unknown array: %v (must list the arrays found)", err)
	}
}

func TestSplitDMName(t *testing.T) {
	for _, c := range [][3]string{{"vg--hdd-tables_rimage_0", "vg-hdd", "tables_rimage_0"}, {"vg-lv", "vg", "lv"}, {"a--b-c--d", "a-b", "c-d"}} {
		vg, lv, ok := SplitDMName(c[0])
		if !ok || vg != c[1] || lv != c[2] {
			t.Errorf("%s -> %s %s %v", c[0], vg, lv, ok)
		}
		if DMName(vg, lv) != c[0] {
			t.Errorf("DMName(%s,%s) = %s", vg, lv, DMName(vg, lv))
		}
	}
}

// A counter LVM reports in a form tbhost cannot read (an image's
// integritymismatches "abc", the array's raid_mismatch_count "lots") is
// UNKNOWN, once each, naming the LV and the value: the check cannot judge
// the array, which must not pass as OK.
func TestUnreadableCounterIsUnknown(t *testing.T) {
	root := derived(t, "balanced")
	path := filepath.Join(root, "lvm", "lvs.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if b, err = lvmfake.EditedReport(b, lvmfake.Edit{LV: "tables_rimage_2", Field: "integritymismatches", Value: "abc"},
		lvmfake.Edit{LV: "tables", Field: "raid_mismatch_count", Value: "lots"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range discover(t, root).Arrays {
		for _, p := range a.Problems {
			if p.Code == lvm.CodeValueUnrecognized {
				if p.Severity != Unknown {
					t.Errorf("%s: severity %v, want UNKNOWN", p.Text, p.Severity)
				}
				got = append(got, p.Text)
			}
		}
	}
	if len(got) != 2 || !strings.Contains(strings.Join(got, "\n"), `integritymismatches="abc" for vg-hdd/tables_rimage_2`) ||
		!strings.Contains(strings.Join(got, "\n"), `raid_mismatch_count="lots" for vg-hdd/tables`) {
		t.Errorf("problems %q, want the two unreadable counters once each", got)
	}
}
