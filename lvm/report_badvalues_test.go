package lvm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/fixturetree"
	"github.com/tbhost/tbhost/lvm/lvmfake"
)

// editedReport is a recorded lvs report (a file) with edits applied.
func editedReport(t *testing.T, fixture string, edits ...lvmfake.Edit) string {
	t.Helper()
	b, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	out, err := lvmfake.EditedReport(b, edits...)
	if err != nil {
		t.Fatalf("%s: %v", fixture, err)
	}
	return string(out)
}

func statusOfReport(t *testing.T, report string) *StatusReport {
	t.Helper()
	rec := execx.NewRecorded().On(execx.Reply{Stdout: report}, LVsArgv()...)
	rep, err := Status(context.Background(), rec, StatusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

const cleanTables = "../integrity/testdata/lvs-a-2.03.16-tables-clean.json"

// A counter tbhost cannot read used to become -1 ("no such counter") and
// the array said OK: lvs's integritymismatches "abc" on an image hid that
// image's mismatches. Each case is the recorded clean report with one field
// edited; lvm status must say NOT OK, naming the LV, the field and the value.
func TestStatusCounterTbhostCannotReadIsNotOK(t *testing.T) {
	for _, tc := range []struct {
		lv, field, value, want string
	}{
		{"tables_rimage_2", "integritymismatches", "abc", `lvs reported integritymismatches="abc" for vg-hdd/tables_rimage_2: not a count; tbhost cannot judge it`},
		{"tables_rimage_2", "integritymismatches", "", `lvs reported integritymismatches="" for vg-hdd/tables_rimage_2: empty where an active LV reports it`},
		{"tables_rimage_2", "integritymismatches", "-1", `lvs reported integritymismatches="-1" for vg-hdd/tables_rimage_2: not a count`},
		{"tables_rimage_2", "integritymismatches", "18446744073709551616", `lvs reported integritymismatches="18446744073709551616" for vg-hdd/tables_rimage_2: not a count`},
		{"tables_rimage_2", "integritymismatches", "2.5", `integritymismatches="2.5" for vg-hdd/tables_rimage_2: not a count`},
		{"tables", "integritymismatches", "", `lvs reported integritymismatches="" for vg-hdd/tables: empty where an active LV reports it`},
		{"tables", "raid_mismatch_count", "lots", `lvs reported raid_mismatch_count="lots" for vg-hdd/tables: not a count; tbhost cannot judge it`},
		{"tables", "raid_mismatch_count", "", `raid_mismatch_count="" for vg-hdd/tables: empty where an active LV reports it`},
		{"tables", "sync_percent", "garbage", `lvs reported sync_percent="garbage" for vg-hdd/tables: not a percent from 0 to 100; tbhost cannot judge it`},
		{"tables", "sync_percent", "NaN", `sync_percent="NaN" for vg-hdd/tables: not a percent`},
		{"tables", "sync_percent", "250", `sync_percent="250" for vg-hdd/tables: not a percent`},
		{"tables", "sync_percent", "", `sync_percent="" for vg-hdd/tables: empty where an active LV reports it`},
	} {
		rep := statusOfReport(t, editedReport(t, cleanTables, lvmfake.Edit{LV: tc.lv, Field: tc.field, Value: tc.value}))
		what := tc.lv + " " + tc.field + "=" + tc.value
		if rep.OK || len(rep.Arrays) != 1 || rep.Arrays[0].State != "problem" {
			t.Errorf("%s: want NOT OK, got %+v", what, rep)
			continue
		}
		a := rep.Arrays[0]
		if !strings.Contains(strings.Join(a.Problems, "\n"), tc.want) {
			t.Errorf("%s: problems lack %q:\n%s", what, tc.want, strings.Join(a.Problems, "\n"))
		}
		var found bool
		for _, f := range a.Findings {
			found = found || f.Code == CodeValueUnrecognized && f.Field == tc.field && f.Value == tc.value && f.LV == "vg-hdd/"+tc.lv
		}
		if !found {
			t.Errorf("%s: no %s finding with field, value and LV: %+v", what, CodeValueUnrecognized, a.Findings)
		}
	}
}

// Where LVM leaves a counter empty on purpose (no integrity layer, no raid
// sync, an inactive LV, a column not asked for) it stays "not reported"
// (-1), and every recorded report of the repository is read without a
// value-unrecognized finding.
func TestRecordedReportsHaveNoUnreadableCounters(t *testing.T) {
	files := []string{}
	for _, pat := range []string{"testdata/lvs*.json", "testdata/lab-apply-2.03.16/lvs*.json", "../integrity/testdata/lvs*.json"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	captures, err := filepath.Glob("../internal/lab/testdata/captures/*.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range captures {
		files = append(files, filepath.Join(fixturetree.Dir(t, c), "lvm", "lvs.json"))
	}
	if len(files) < 10 {
		t.Fatalf("only %d recorded reports found: the fixtures moved?", len(files))
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := ParseReport(b, "lv")
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		lvs, _ := ParseLVRows(rows)
		for _, lv := range lvs {
			if len(lv.BadValues) > 0 {
				t.Errorf("%s: %s: %+v", file, lv.FullName(), lv.BadValues)
			}
		}
	}
	// an active LV without integrity, and an active raid0 (no sync state)
	lvs := parseLVs(t, "lab-apply-2.03.16/lvs.json")
	imeta, ok := Find(lvs, "vg-hdd", "tables_rimage_0_imeta")
	if !ok || imeta.IntegrityMismatches != -1 || imeta.SyncPercent != -1 || imeta.RaidMismatchCount != -1 {
		t.Errorf("imeta: want -1 (not reported), got %+v", imeta)
	}
	prefix, ok := Find(lvs, "vg-nvme", "prefix")
	if !ok || prefix.SyncPercent != -1 || prefix.IntegrityMismatches != -1 || prefix.RaidMismatchCount != 0 {
		t.Errorf("raid0: want sync and integrity not reported, 0 raid mismatches, got %+v", prefix)
	}
}

// An empty counter on an LV that is not active is not reported (LVM reads
// the counters from the kernel), not a bad value: the recorded
// missing-at-boot capture shows it on every image.
func TestInactiveLVLeavesCountersEmpty(t *testing.T) {
	report := editedReport(t, cleanTables,
		lvmfake.Edit{LV: "tables_rimage_2", Field: "lv_attr", Value: "gwi---r---"},
		lvmfake.Edit{LV: "tables_rimage_2", Field: "integritymismatches", Value: ""})
	rows, err := ParseReport([]byte(report), "lv")
	if err != nil {
		t.Fatal(err)
	}
	lvs, _ := ParseLVRows(rows)
	img, _ := Find(lvs, "vg-hdd", "tables_rimage_2")
	if len(img.BadValues) != 0 || img.IntegrityMismatches != -1 {
		t.Errorf("inactive image with an empty counter: %+v", img)
	}
}

// An answer that is not a JSON report is ErrBadReport, which callers tell
// from a verdict (exit 3, LVM answered nothing usable) without reading the
// message.
func TestUnparseableReportIsErrBadReport(t *testing.T) {
	for _, out := range []string{"", "not json", `{"report":[{"lv":[{"lv_name":"t"`, `{"x":1}`, `{"report":"no"}`} {
		rec := execx.NewRecorded().On(execx.Reply{Stdout: out}, LVsArgv()...)
		_, err := Client{Runner: rec}.LVs(context.Background())
		if !errors.Is(err, ErrBadReport) {
			t.Errorf("%q: want ErrBadReport, got %v", out, err)
		}
		if _, err := Status(context.Background(), rec, StatusOptions{}); !errors.Is(err, ErrBadReport) {
			t.Errorf("%q: Status: want ErrBadReport, got %v", out, err)
		}
	}
}
