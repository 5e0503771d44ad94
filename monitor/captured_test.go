package monitor

import (
	"reflect"
	"sort"
	"strings"
	"testing"
)

// Real trees captured in the VM lab (lvm2 2.03.16, kernel 6.1) under a read
// load: see testdata/captured/README.md.

func flaggedIDs(r Report, array, flag string) []string {
	var ids []string
	for _, a := range r.Arrays {
		if a.Name != array {
			continue
		}
		for _, m := range a.Members {
			if m.Flag == flag {
				ids = append(ids, m.ID)
			}
		}
	}
	sort.Strings(ids)
	return ids
}

func TestCapturedMisbuiltIsCriticalNamingIdleDisks(t *testing.T) {
	r := checkTree(t, "testdata/captured/raid5-no-stripes")
	if r.Status != Critical {
		t.Fatalf("%s: %s", r.Status, r.Summary)
	}
	// the second PV of each image: HDD4, HDD5, HDD6 (sdc, sde, sdf in that boot)
	want := []string{"scsi-0QEMU_QEMU_HARDDISK_HDD4", "scsi-0QEMU_QEMU_HARDDISK_HDD5", "scsi-0QEMU_QEMU_HARDDISK_HDD6"}
	if got := flaggedIDs(r, "vg-hdd/tables", FlagIdle); !reflect.DeepEqual(got, want) {
		t.Errorf("idle %v, want %v", got, want)
	}
	if !strings.HasPrefix(r.Summary, "vg-hdd/tables: sdc, sde, sdf idle") {
		t.Errorf("summary %q", r.Summary)
	}
	tables := r.Arrays[0]
	if tables.Images != 3 || len(tables.Members) != 6 {
		t.Errorf("images %d members %d", tables.Images, len(tables.Members))
	}
}

func TestCapturedBalancedIsOK(t *testing.T) {
	r := checkTree(t, "testdata/captured/raid5-integrity-stripes5")
	if r.Status != OK {
		t.Fatalf("%s: %s", r.Status, r.Summary)
	}
	tables := r.Arrays[0]
	if tables.Name != "vg-hdd/tables" || tables.Images != 6 || len(tables.Members) != 6 || tables.Judged != 1 {
		t.Fatalf("%+v", tables.Array)
	}
	for _, m := range tables.Members {
		if m.Share < 0.16 || m.Share > 0.175 || m.IntegrityMismatches != 0 || !strings.HasPrefix(m.ID, "scsi-0QEMU_QEMU_HARDDISK_HDD") {
			t.Errorf("member %s: share %.3f mismatches %d id %s", m.Disk, m.Share, m.IntegrityMismatches, m.ID)
		}
	}
	// sysfs alone finds the same disks per image as LVM's report
	withLVM := discover(t, "testdata/captured/raid5-integrity-stripes5")
	if a := withLVM.Arrays[0]; a.Members[3].Disk != "sdc" || a.Members[3].Images[0] != "tables_rimage_3" {
		t.Errorf("image 3: %+v (HDD4 is sdc in that boot)", a.Members[3])
	}
}

func TestCapturedExporterPassesPromtool(t *testing.T) {
	for _, tree := range []string{"raid5-no-stripes", "raid5-integrity-stripes5"} {
		e := &Exporter{Env: Env{Root: "testdata/captured/" + tree}, Interval: 5e9, TopologyEvery: 6e10, Thresholds: DefaultThresholds()}
		stepAll(t, e, 2)
		promtoolCheckMetrics(t, scrape(t, e))
	}
}
