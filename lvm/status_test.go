package lvm

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/execx"
)

func TestStatusAfterApply(t *testing.T) {
	l := newLab(t, PlanOptions{})
	l.lvm.Sync = []string{"42.00"}
	if _, err := l.apply(t, ApplyOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	inv, err := l.applier(t).Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Status(context.Background(), l.lvm, StatusOptions{Plan: l.plan, Inventory: inv})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || len(rep.Arrays) != 2 {
		t.Fatalf("%+v", rep)
	}
	tb := rep.Arrays[0]
	if tb.State != "syncing" || tb.DataStripes != 5 || len(tb.Images) != 6 || tb.Integrity == nil || tb.Integrity.BlockSize != 4096 {
		t.Errorf("tables %+v", tb)
	}
	if len(tb.Checks) == 0 || !AllOK(tb.Checks) {
		t.Errorf("checks %v", tb.Checks)
	}
	var buf bytes.Buffer
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "vg-hdd/tables  SYNCING  raid5, 5 data stripes of 6 devices") || !strings.Contains(buf.String(), "tables_rimage_5  integrity  /dev/sdf (serial HDD6)") {
		t.Errorf("text:\n%s", buf.String())
	}
	// without a plan: every raid LV
	rep, _ = Status(context.Background(), l.lvm, StatusOptions{})
	if len(rep.Arrays) != 2 {
		t.Errorf("%d arrays found", len(rep.Arrays))
	}
}

func TestStatusUnknownHealthIsAProblem(t *testing.T) {
	rec := execx.NewRecorded()
	rec.On(execx.Reply{Stdout: string(readFixture(t, "lvs-2.03.26-typed-with-log.json"))},
		"lvm", "lvs", "--reportformat", "json", "--units", "b", "--nosuffix", "-o", strings.Join(lvFields, ","), "-a")
	rep, err := Status(context.Background(), rec, StatusOptions{Names: []string{"vg-hdd/tables", "vg-hdd/odd", "vg-hdd/gone"}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK {
		t.Fatal("mismatches and unknown health must not be OK")
	}
	all := ""
	for _, a := range rep.Arrays {
		all += strings.Join(a.Problems, "\n") + "\n"
	}
	for _, w := range []string{"mismatches exist", "unknown health value", "vg-hdd/gone does not exist", "tables_rimage_2: 3 integrity mismatches"} {
		if !strings.Contains(all, w) {
			t.Errorf("problems lack %q:\n%s", w, all)
		}
	}
}

// No RAID LV at all is nothing to work on (README: exit 3), not an array
// with a problem: Status says so with ErrNoRAIDLV instead of a report whose
// one "array" has no name (it printed as "/: no RAID LV found").
func TestStatusNoArrays(t *testing.T) {
	rec := execx.NewRecorded()
	rec.On(execx.Reply{Stdout: `{"report":[{"lv":[]}]}`},
		"lvm", "lvs", "--reportformat", "json", "--units", "b", "--nosuffix", "-o", strings.Join(lvFields, ","), "-a")
	rep, err := Status(context.Background(), rec, StatusOptions{})
	if !errors.Is(err, ErrNoRAIDLV) || rep != nil {
		t.Fatalf("no RAID LV: want ErrNoRAIDLV and no report, got %+v, %v", rep, err)
	}
	// named arrays that do not exist stay a problem found (exit 1)
	rep, err = Status(context.Background(), rec, StatusOptions{Names: []string{"vg-hdd/tables"}})
	if err != nil || rep.OK || len(rep.Arrays) != 1 || !HasCode(rep.Arrays[0].Findings, CodeLVNotFound) {
		t.Fatalf("a named LV that does not exist: want a lv-not-found problem, got %+v, %v", rep, err)
	}
}

// An inactive array has no readable integrity counter (-1 in JSON): its
// images said "mismatches unknown" and the array's own line "mismatches -1".
func TestStatusTextUnknownIntegrityCount(t *testing.T) {
	r := &StatusReport{Arrays: []ArrayStatus{{
		VG: "vg-hdd", LV: "tables", Exists: true, SegType: "raid5", Stripes: 3, DataStripes: 2,
		Attr: "rwi---r-p-", Health: "partial", SyncPercent: -1, RaidMismatches: -1, State: "problem",
		Integrity: &Integrity{Enabled: true, Mode: "journal", BlockSize: 4096}, IntegrityMism: -1,
		Images: []ImageStatus{{Name: "tables_rimage_0", SegType: "integrity", Devices: []string{"/dev/sda"}, IntegrityMismatches: -1}},
	}}}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Contains(out, "mismatches -1") || !strings.Contains(out, "integrity journal, block size 4096, mismatches unknown") {
		t.Errorf("an unreadable integrity counter in the text:\n%s", out)
	}
}
