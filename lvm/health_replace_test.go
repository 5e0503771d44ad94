package lvm

import (
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/execx"
)

// A member missing at boot (real capture): missing-at-boot, CRITICAL, and
// the advice is tbhost lvm replace, not an lvchange -ay lvm2 refuses.
func TestHealthMissingAtBootAdvisesReplace(t *testing.T) {
	c := loadCapture(t, "raid5-missing-member-boot")
	all := c.parsed(t)
	top, _ := Find(all, "vg-hdd", "tables")
	h := AssessArray(all, top)
	var found bool
	for _, f := range h.All() {
		switch f.Code {
		case CodeMissingAtBoot:
			found = true
			if f.Severity != Critical || !strings.Contains(f.Advice, "tbhost lvm replace") || !strings.Contains(f.Advice, "--old missing") {
				t.Errorf("missing-at-boot: %+v", f)
			}
		case CodeLVInactive, CodeImageMissing:
			if !strings.Contains(f.Advice, "tbhost lvm replace") {
				t.Errorf("%s advises %q, want tbhost lvm replace", f.Code, f.Advice)
			}
		}
	}
	if !found || h.Worst() != Critical {
		t.Errorf("codes %v", codesOf(h.All()))
	}
	rep := statusOf(t, c.lvs)
	if rep.OK || !strings.Contains(textOf(t, rep), "tbhost lvm replace --dry-run vg-hdd/tables --old missing") {
		t.Errorf("lvm status:\n%s", textOf(t, rep))
	}
	// Not activated at boot: nothing runs degraded, the tables are offline.
	if strings.Contains(textOf(t, rep), "runs degraded") {
		t.Errorf("lvm status says an inactive array runs degraded:\n%s", textOf(t, rep))
	}
	if strings.Contains(textOf(t, rep), "lvchange -ay vg-hdd/tables)") {
		t.Errorf("lvm status advises an activation lvm2 refuses:\n%s", textOf(t, rep))
	}
}

// The disk vanished while running: the image finding names the replace.
func TestHealthVanishedAdvisesReplace(t *testing.T) {
	c := loadCapture(t, "raid5-member-dropped")
	all := c.parsed(t)
	top, _ := Find(all, "vg-hdd", "tables")
	h := AssessArray(all, top)
	if HasCode(h.All(), CodeMissingAtBoot) {
		t.Error("an active array is not missing at boot")
	}
	for _, f := range h.All() {
		if f.Code == CodeImageMissing && (!strings.Contains(f.Advice, "tbhost lvm replace") || !strings.Contains(f.Text, "runs degraded")) {
			t.Errorf("image-missing: %q, advice %q", f.Text, f.Advice)
		}
	}
}

func editRows(rows []map[string]string, edit func(r map[string]string)) []map[string]string {
	out := cloneRows(rows)
	for _, r := range out {
		edit(r)
	}
	return out
}

// A rebuild is WARNING with its percent and an ETA; lvm status stays OK
// ("syncing"); a second member failing during it is CRITICAL.
func TestHealthRebuildingIsAWarningWithETA(t *testing.T) {
	c := loadCapture(t, "raid5-integrity-stripes5")
	rows := editRows(c.lvs, func(r map[string]string) {
		if r["lv_name"] == "tables" {
			r["sync_percent"], r["raid_sync_action"] = "42.50", "recover"
		}
	})
	all, _ := ParseLVRows(rows)
	top, _ := Find(all, "vg-hdd", "tables")
	h := AssessArray(all, top)
	f, ok := h.Sync()
	if !ok || f.Code != CodeRebuilding || f.Percent != 42.5 || !strings.Contains(f.Text, "ETA about") || h.Worst() != Warning {
		t.Errorf("rebuilding: %+v, worst %s", f, h.Worst())
	}
	rep := statusOf(t, rows)
	if !rep.OK || rep.Arrays[0].State != "syncing" || len(rep.Arrays[0].Progress) != 1 || !strings.Contains(textOf(t, rep), "ETA") {
		t.Errorf("lvm status while rebuilding: ok %v\n%s", rep.OK, textOf(t, rep))
	}
	second := editRows(rows, func(r map[string]string) {
		if r["lv_name"] == "[tables_rimage_4_iorig]" {
			r["devices"] = "[unknown](1)"
		}
	})
	all, _ = ParseLVRows(second)
	top, _ = Find(all, "vg-hdd", "tables")
	if h := AssessArray(all, top); h.Worst() != Critical {
		t.Errorf("a member gone during the rebuild: %s, want CRITICAL (%v)", h.Worst(), codesOf(h.All()))
	}
}

// Integrity re-initialisation (images below 100 % while the array is in
// sync): integrity-reinitialising, WARNING, slowest image's percent, ETA.
func TestHealthIntegrityReinitialising(t *testing.T) {
	c := loadCapture(t, "raid5-integrity-stripes5")
	rows := editRows(c.lvs, func(r map[string]string) {
		if r["segtype"] == "integrity" {
			r["sync_percent"] = "61.00"
			if r["lv_name"] == "[tables_rimage_3]" {
				r["sync_percent"] = "12.25"
			}
		}
	})
	all, _ := ParseLVRows(rows)
	top, _ := Find(all, "vg-hdd", "tables")
	h := AssessArray(all, top)
	var got *Finding
	for _, f := range h.Findings {
		if f.Code == CodeIntegrityReinit {
			got = &f
		}
	}
	if got == nil || got.Severity != Warning || got.Percent != 12.25 || got.Count != 6 || !strings.Contains(got.Text, "ETA about") || !got.Progress() {
		t.Fatalf("reinit finding %+v (codes %v)", got, codesOf(h.All()))
	}
	rep := statusOf(t, rows)
	if !rep.OK || rep.Arrays[0].State != "syncing" || !strings.Contains(textOf(t, rep), "re-initialising 6 images, 12.25%") {
		t.Errorf("lvm status while integrity re-initialises: ok %v\n%s", rep.OK, textOf(t, rep))
	}
}

func statusOf(t *testing.T, rows []map[string]string) *StatusReport {
	t.Helper()
	r := execx.NewRecorded()
	r.On(execx.Reply{Stdout: string(fakeReport("lv", rows))}, LVsArgv()...)
	rep, err := Status(t.Context(), r, StatusOptions{Names: []string{"vg-hdd/tables"}})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func textOf(t *testing.T, rep *StatusReport) string {
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
