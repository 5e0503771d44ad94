package integrity

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/lvm"
	"github.com/tbhost/tbhost/lvm/lvmfake"
)

// mismatchReport is testdata/lvs-a-2.03.16-tables-mismatch-sdc.json with
// field of the LV lvName (without the brackets of a hidden LV) set to value.
func mismatchReport(t *testing.T, lvName, field, value string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/lvs-a-2.03.16-tables-mismatch-sdc.json")
	if err != nil {
		t.Fatal(err)
	}
	out, err := lvmfake.EditedReport(b, lvmfake.Edit{LV: lvName, Field: field, Value: value})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func editedStatus(t *testing.T, report string, names ...string) ([]ArrayStatus, error) {
	t.Helper()
	var vgs []string
	if len(names) > 0 {
		vgs = []string{"vg-hdd"}
	}
	rec := execx.NewRecorded().On(execx.Reply{Stdout: report}, lvm.LVsArgv(vgs...)...)
	return Status(context.Background(), lvm.Client{Runner: rec}, names...)
}

// The audit's case: the mismatch-sdc report with tables_rimage_2's
// counter replaced by a value tbhost cannot read said OK (exit 0), the
// counter silently -1 ("no integrity layer"). It is NOT OK now, and the
// problem names the LV, the field and the value as lvs reported them.
func TestStatusCounterTbhostCannotReadIsAProblem(t *testing.T) {
	for _, tc := range []struct {
		lv, field, value, want string
	}{
		{"tables_rimage_2", "integritymismatches", "abc", `lvs reported integritymismatches="abc" for vg-hdd/tables_rimage_2: not a count; tbhost cannot judge it (on /dev/sdc)`},
		{"tables_rimage_2", "integritymismatches", "", `lvs reported integritymismatches="" for vg-hdd/tables_rimage_2: empty where an active LV reports it; tbhost cannot judge it (on /dev/sdc)`},
		{"tables_rimage_2", "integritymismatches", "-1", `lvs reported integritymismatches="-1" for vg-hdd/tables_rimage_2: not a count`},
		{"tables_rimage_2", "integritymismatches", "18446744073709551616", `lvs reported integritymismatches="18446744073709551616" for vg-hdd/tables_rimage_2: not a count`},
		{"tables", "integritymismatches", "abc", `lvs reported integritymismatches="abc" for vg-hdd/tables: not a count`},
		{"tables", "raid_mismatch_count", "lots", `lvs reported raid_mismatch_count="lots" for vg-hdd/tables: not a count; tbhost cannot judge it`},
		{"tables", "sync_percent", "garbage", `lvs reported sync_percent="garbage" for vg-hdd/tables: not a percent from 0 to 100; tbhost cannot judge it`},
	} {
		what := tc.lv + " " + tc.field + "=" + tc.value
		for _, names := range [][]string{nil, {"vg-hdd/tables"}} {
			arrays, err := editedStatus(t, mismatchReport(t, tc.lv, tc.field, tc.value), names...)
			if err != nil || len(arrays) != 1 {
				t.Fatalf("%s %v: %v %+v", what, names, err, arrays)
			}
			a := arrays[0]
			if a.OK || !strings.Contains(strings.Join(a.Problems, "\n"), tc.want) {
				t.Errorf("%s %v: want NOT OK with %q, got OK=%v:\n%s", what, names, tc.want, a.OK, strings.Join(a.Problems, "\n"))
			}
			if !lvm.HasCode(a.Findings, lvm.CodeValueUnrecognized) {
				t.Errorf("%s: no %s finding: %+v", what, lvm.CodeValueUnrecognized, a.Findings)
			}
		}
	}
}

// The errors say whether integrity status judged anything: an answer from
// LVM that is no report is *LVMError, no RAID LV with integrity at all is
// ErrNoIntegrityLV (both exit 3 in the CLI); a named LV that does not exist
// is neither (refused, exit 1).
func TestStatusErrorsTellCouldNotRunFromRefused(t *testing.T) {
	for _, out := range []string{"", "not json", `{"report":[{"lv":[{"lv_name":"t"`, `{"x":1}`} {
		_, err := editedStatus(t, out)
		var le *LVMError
		if !errors.As(err, &le) || !errors.Is(err, lvm.ErrBadReport) {
			t.Errorf("%q: want *LVMError wrapping lvm.ErrBadReport, got %v", out, err)
		}
	}
	if _, err := editedStatus(t, `{"report":[{"lv":[]}]}`); !errors.Is(err, ErrNoIntegrityLV) {
		t.Errorf("no LV at all: want ErrNoIntegrityLV, got %v", err)
	}
	_, err := editedStatus(t, `{"report":[{"lv":[]}]}`, "vg-hdd/tables")
	var le *LVMError
	if err == nil || errors.As(err, &le) || errors.Is(err, ErrNoIntegrityLV) || !strings.Contains(err.Error(), "vg-hdd/tables: no such LV") {
		t.Errorf("a named LV that does not exist: want a refusal naming it, got %v", err)
	}
}
