package monitor

import (
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/fixturetree"
	"github.com/tbhost/tbhost/monitor/monitortest"
)

// Real trees captured in the VM lab (lvm2 2.03.16, kernel 6.1) under a read
// load. The lab's copy is the only one: see
// ../internal/lab/testdata/captures/README.md for how each was made.

// captured unpacks the lab capture name (a committed archive) and returns
// its root.
func captured(t testing.TB, name string) string {
	t.Helper()
	return fixturetree.Dir(t, "../internal/lab/testdata/captures/"+name+".tar.gz")
}

// derived writes one of the derived trees (monitortest; see
// testdata/README.md) into a fresh temporary directory and returns its root.
func derived(t testing.TB, name string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), name)
	if err := monitortest.Write(root, name); err != nil {
		t.Fatal(err)
	}
	return root
}

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
	r := checkTree(t, captured(t, "raid5-no-stripes"))
	if r.Status != Critical {
		t.Fatalf("%s: %s", r.Status, r.Summary)
	}
	// the second PV of each image: HDD4, HDD5, HDD6 (sdc, sde, sdf in that boot),
	// named by their wwn- links (the lab's WWNs: HDD6, HDD5, HDD4 in sorted order)
	want := []string{"wwn-0x5000c50d0b981330", "wwn-0x5000c50d1b982c60", "wwn-0x5000c50d2b984590"}
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
	r := checkTree(t, captured(t, "raid5-integrity-stripes5"))
	if r.Status != OK {
		t.Fatalf("%s: %s", r.Status, r.Summary)
	}
	tables := r.Arrays[0]
	if tables.Name != "vg-hdd/tables" || tables.Images != 6 || len(tables.Members) != 6 || tables.Judged != 1 {
		t.Fatalf("%+v", tables.Array)
	}
	for _, m := range tables.Members {
		if m.Share < 0.16 || m.Share > 0.175 || m.IntegrityMismatches != 0 || !strings.HasPrefix(m.ID, "wwn-0x5000c50d") {
			t.Errorf("member %s: share %.3f mismatches %d id %s", m.Disk, m.Share, m.IntegrityMismatches, m.ID)
		}
	}
	// sysfs alone finds the same disks per image as LVM's report
	withLVM := discover(t, captured(t, "raid5-integrity-stripes5"))
	if a := withLVM.Arrays[0]; a.Members[3].Disk != "sdc" || a.Members[3].Images[0] != "tables_rimage_3" {
		t.Errorf("image 3: %+v (HDD4 is sdc in that boot)", a.Members[3])
	}
}

func TestCapturedExporterPassesPromtool(t *testing.T) {
	needPromtool(t)
	for _, tree := range []string{"raid5-no-stripes", "raid5-integrity-stripes5"} {
		e := &Exporter{Env: Env{Root: captured(t, tree)}, Interval: 5e9, TopologyEvery: 6e10, Thresholds: DefaultThresholds()}
		stepAll(t, e, 2)
		promtoolCheckMetrics(t, scrape(t, e))
	}
}

// Booted without HDD3: lvm2 2.03.16 refuses degraded activation of raid with
// integrity, so the LV is inactive and partial. One saved diskstats, no load.
func TestCapturedMissingMemberAtBoot(t *testing.T) {
	r := checkTree(t, captured(t, "raid5-missing-member-boot"), "vg-hdd/tables")
	if r.Status != Critical {
		t.Fatalf("%s: %s", r.Status, r.Summary)
	}
	a := r.Arrays[0]
	var missing []string
	for _, m := range a.Members {
		if m.Flag == FlagMissing {
			missing = append(missing, m.ImageLabel())
		}
	}
	if !reflect.DeepEqual(missing, []string{"tables_rimage_2"}) || len(a.Members) != 6 {
		t.Errorf("missing %v of %d members", missing, len(a.Members))
	}
	text := ""
	for _, p := range a.Problems {
		text += p.Text + "\n"
	}
	for _, want := range []string{"tables_rimage_2 has no disk", "not active", "partial"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in\n%s", want, text)
		}
	}
	if strings.Contains(text, "runs degraded") { // inactive: nothing runs
		t.Errorf("an array not activated at boot said to run degraded:\n%s", text)
	}
}

// HDD3 dropped while the array ran under load: active, degraded, readable.
func TestCapturedMemberDroppedWhileRunning(t *testing.T) {
	r := checkTree(t, captured(t, "raid5-member-dropped"), "vg-hdd/tables")
	if r.Status != Critical || !strings.Contains(r.Summary, "tables_rimage_2 has no disk") {
		t.Fatalf("%s: %s", r.Status, r.Summary)
	}
	a := r.Arrays[0]
	if !a.Degraded || a.Judged != 1 {
		t.Errorf("degraded %v judged %d", a.Degraded, a.Judged)
	}
	// the five survivors read evenly (parity reconstruction spreads the load)
	for _, m := range a.Members {
		if m.Flag != FlagOK && m.Flag != FlagMissing {
			t.Errorf("%s flagged %s", m.Disk, m.Flag)
		}
	}
	e := &Exporter{Env: Env{Root: captured(t, "raid5-member-dropped")}, Interval: 5e9, TopologyEvery: 6e10, Thresholds: DefaultThresholds()}
	stepAll(t, e, 2)
	out := scrape(t, e)
	for _, want := range []string{`tbhost_array_degraded{array="vg-hdd/tables"} 1`, `tbhost_array_member_missing{array="vg-hdd/tables",image="tables_rimage_2"} 1`} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	promtoolCheckMetrics(t, out)
}

// Audit: the correct array's capture with one image cut out of LVM's report
// (tables_rimage_2 with its rmeta and integrity sub-LVs) said "balanced (5
// disks)" OK: the images were counted from the rows present, while the
// array's row still says 6 stripes and names tables_rimage_2. A report
// that contradicts itself cannot be judged: UNKNOWN, naming the image.
func TestCapturedImageLeftOutOfTheReportIsNotOK(t *testing.T) {
	root := captured(t, "raid5-integrity-stripes5")
	if err := monitortest.DropLVs(root, func(n string) bool {
		return strings.HasPrefix(n, "tables_rimage_2") || n == "tables_rmeta_2"
	}); err != nil {
		t.Fatal(err)
	}
	r := checkTree(t, root, "vg-hdd/tables")
	if r.Status == OK || r.Status == Warning {
		t.Fatalf("%s: %s", r.Status, r.Summary)
	}
	if r.Status != Unknown || !strings.Contains(r.Summary, `names "tables_rimage_2"`) {
		t.Errorf("want UNKNOWN naming tables_rimage_2: %s: %s", r.Status, r.Summary)
	}
}
