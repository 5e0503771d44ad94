package integrity

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/lvm"
)

func droppedCapture(t *testing.T) string {
	return filepath.Join(capture(t, "raid5-member-dropped"), "lvm", "lvs.json")
}

// integrity status carries the model's codes next to its (unchanged) texts.
func TestStatusFindingsCarryCodes(t *testing.T) {
	s := statusOf(t, "lvs-a-2.03.16-tables-mismatch-sdc.json")
	if len(s.Findings) != len(s.Problems) {
		t.Fatalf("findings %d, problems %d: every problem has a finding", len(s.Findings), len(s.Problems))
	}
	var mm []lvm.Finding
	for i, f := range s.Findings {
		if f.Text != s.Problems[i] {
			t.Errorf("finding %d text %q, problem %q", i, f.Text, s.Problems[i])
		}
		if f.Code == lvm.CodeIntegrityMismatches {
			mm = append(mm, f)
		}
	}
	if len(mm) != 1 || mm[0].Image == "" || strings.Join(mm[0].Disks, ",") != "/dev/sdc" || mm[0].Count <= 0 || mm[0].Severity != lvm.Warning {
		t.Errorf("want one integrity-mismatches finding on the image on /dev/sdc, got %+v", mm)
	}
	if clean := statusOf(t, "lvs-a-2.03.16-tables-clean.json"); len(clean.Findings) != 0 || !clean.OK {
		t.Errorf("clean array: %+v", clean.Findings)
	}
	running := statusOf(t, "lvs-a-2.03.16-tables-check-running.json")
	if len(running.Findings) != 0 || len(running.Notes) != 1 {
		t.Errorf("a running check is a note, not a problem: findings %+v notes %q", running.Findings, running.Notes)
	}
}

func TestStatusOfDroppedMemberCodes(t *testing.T) {
	s := tablesStatus(t, lvsFile(t, droppedCapture(t)))
	if !lvm.HasCode(s.Findings, lvm.CodeRAIDDegraded) || s.OK {
		t.Errorf("dropped member: %+v", s.Findings)
	}
}

// degradedBy used to look for "[unknown]" among PhysicalDevices, which
// never lists it: an image on a vanished PV went unseen when LVM had not
// (yet) marked the LV partial. The model's image-missing finding sees it.
func TestPlanLVScrubRefusesImageOnMissingPVWithoutPartialAttr(t *testing.T) {
	all := lvsFile(t, droppedCapture(t))
	for i := range all {
		if all[i].Name == "tables" || strings.HasPrefix(all[i].Name, "tables_") {
			all[i].Health = ""
			if len(all[i].Attr) >= 9 {
				all[i].Attr = all[i].Attr[:8] + "-" + all[i].Attr[9:]
			}
		}
	}
	_, err := PlanLVScrub(all, "vg-hdd", "tables", fakeRoot(t, 4096))
	if !errors.Is(err, ErrDegraded) || !strings.Contains(err.Error(), "tables_rimage_2 is on a missing PV") {
		t.Fatalf("want ErrDegraded naming tables_rimage_2, got %v", err)
	}
}

func TestDegradedByReasons(t *testing.T) {
	all := lvsFile(t, droppedCapture(t))
	top, _ := lvm.Find(all, "vg-hdd", "tables")
	if got := degradedBy(all, top); got != "attr rwi-aor-p-: partial, a PV is missing" {
		t.Errorf("partial attr: %q", got)
	}
	top.Attr = "rwi-aor---"
	if got := degradedBy(all, top); got != "health partial" {
		t.Errorf("health partial: %q", got)
	}
	clean := fixtureLVs(t, "lvs-a-2.03.16-tables-clean.json")
	ctop, _ := lvm.Find(clean, "vg-hdd", "tables")
	if got := degradedBy(clean, ctop); got != "" {
		t.Errorf("clean: %q", got)
	}
}
