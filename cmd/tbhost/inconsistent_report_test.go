package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/fixturetree"
	"github.com/tbhost/tbhost/monitor/monitortest"
)

// dropImage2 cuts tables_rimage_2 (with its rmeta and integrity sub-LVs)
// out of root/lvm/lvs.json and clears the partial flags of the rest.
func dropImage2(t *testing.T, root string) {
	t.Helper()
	if err := monitortest.DropLVs(root, func(n string) bool {
		return strings.HasPrefix(n, "tables_rimage_2") || n == "tables_rmeta_2"
	}); err != nil {
		t.Fatal(err)
	}
}

// Audit: an lvs report that leaves out one image while the array's row
// still says 6 stripes and names tables_rimage_2(0) was OK everywhere: lvm
// status "raid5, 5 data stripes of 6 devices" next to five images, exit 0;
// monitor check "balanced (5 disks)", exit 0; integrity status exit 0.
func TestImageLeftOutOfTheReportFailsEveryCheck(t *testing.T) {
	// the auditor's tree: the real applied guest's /sys and /dev, and
	// lvm2 2.03.16's reports of that guest (lvs from the degraded capture)
	guest := fixturetree.Dir(t, "../../internal/blockdev/testdata/lab-guest-real-applied.tar.gz")
	lab := "../../lvm/testdata/lab-apply-2.03.16"
	if err := os.MkdirAll(filepath.Join(guest, "lvm"), 0o755); err != nil {
		t.Fatal(err)
	}
	for dst, src := range map[string]string{"lvs.json": "lvs-degraded.json", "pvs.json": "pvs.json", "vgs.json": "vgs.json"} {
		b, err := os.ReadFile(filepath.Join(lab, src))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(guest, "lvm", dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dropImage2(t, guest)
	// the lab's capture of the correct array under a read load (diskstats
	// samples for monitor check)
	loaded := captured(t, "raid5-integrity-stripes5")
	dropImage2(t, loaded)

	for _, tc := range []struct {
		root string
		args []string
		code int
		want string
	}{
		{guest, []string{"lvm", "status"}, 1, "vg-hdd/tables  PROBLEM"},
		{guest, []string{"integrity", "status"}, 1, "PROBLEM vg-hdd/tables"},
		{loaded, []string{"lvm", "status"}, 1, "vg-hdd/tables  PROBLEM"},
		{loaded, []string{"integrity", "status"}, 1, "PROBLEM vg-hdd/tables"},
		{loaded, []string{"monitor", "check", "vg-hdd/tables"}, 3, "UNKNOWN: vg-hdd/tables"},
	} {
		code, out, stderr := runTB(t, nil, append([]string{"--root", tc.root}, tc.args...)...)
		if code != tc.code || !strings.Contains(out, tc.want) || !strings.Contains(out, `names "tables_rimage_2", which the lvs report does not list`) {
			t.Errorf("%s %s: exit %d, want %d, %q and the left-out image named\n%s%s",
				filepath.Base(tc.root), strings.Join(tc.args, " "), code, tc.code, tc.want, out, stderr)
		}
	}
}
