package lvm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/execx"
)

func lvsFromFile(t *testing.T, path string) []LV {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := ParseReport(b, "lv")
	if err != nil {
		t.Fatal(err)
	}
	all, err := ParseLVRows(rows)
	if err != nil {
		t.Fatal(err)
	}
	return all
}

func codesOf(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Code)+"/"+f.Severity.String())
	}
	return out
}

func TestSeverityIsNagios(t *testing.T) {
	for i, name := range []string{"OK", "WARNING", "CRITICAL", "UNKNOWN"} {
		s := Severity(i)
		if s.String() != name || s.ExitCode() != i || SeverityOfExitCode(i) != s {
			t.Errorf("%d: %s exit %d", i, s, s.ExitCode())
		}
		if p, ok := ParseSeverity(strings.ToLower(name)); !ok || p != s {
			t.Errorf("parse %q: %v %v", name, p, ok)
		}
		b, _ := json.Marshal(s)
		var back Severity
		if string(b) != `"`+name+`"` || json.Unmarshal(b, &back) != nil || back != s {
			t.Errorf("JSON %s -> %s", b, back)
		}
	}
	if Severity(7).ExitCode() != 3 || SeverityOfExitCode(-1) != Unknown || SeverityOfExitCode(9) != Unknown {
		t.Error("out-of-range codes are UNKNOWN")
	}
	if _, ok := ParseSeverity("BAD"); ok {
		t.Error("BAD parsed")
	}
	// monitoring-plugins' max_state_alt: OK < UNKNOWN < WARNING < CRITICAL
	if Worse(OK, Unknown) != Unknown || Worse(Unknown, Warning) != Warning || Worse(Critical, Warning) != Critical || Worse(Warning, Unknown) != Warning {
		t.Error("Worse order")
	}
}

func TestFindingsFromHealthFields(t *testing.T) {
	cases := []struct {
		health, attr string
		integ, raid  int64
		want         string
	}{
		{"", "rwi-aor---", -1, 0, ""},
		{"partial", "rwi-aor-p-", -1, 0, "raid-degraded/CRITICAL raid-degraded/CRITICAL"},
		{"refresh needed", "rwi-aor-r-", -1, 0, "refresh-needed/CRITICAL refresh-needed/CRITICAL"},
		{"repair needed", "rwi-aor---", -1, 0, "repair-needed/CRITICAL"},
		{"failed", "rwi-aor---", -1, 0, "lv-failed/CRITICAL"},
		{"mismatches exist", "rwi-aor-m-", -1, 0, "mismatches-exist/WARNING mismatches-exist/WARNING"},
		{"writemostly", "rwi-aor-w-", -1, 0, "writemostly/WARNING writemostly/WARNING"},
		{"metadata_read_only", "rwi-aor---", -1, 0, "metadata-read-only/WARNING"},
		{"unknown", "rwi-aor-X-", -1, 0, "health-unknown/WARNING health-unknown/WARNING"},
		{"brand new state", "rwi-aor---", -1, 0, "health-unrecognized/WARNING"},
		{"", "rwi-aor-Q-", -1, 0, "health-unrecognized/WARNING"},
		{"", "rwi-aor---", 3, 0, "integrity-mismatches/WARNING"},
		{"", "rwi-aor---", 0, 8, "raid-mismatches/WARNING"},
	}
	for _, c := range cases {
		lv := LV{Name: "tables", VG: "vg-hdd", Health: c.health, Attr: c.attr, IntegrityMismatches: c.integ, RaidMismatchCount: c.raid}
		fs := lv.Findings()
		if got := strings.Join(codesOf(fs), " "); got != c.want {
			t.Errorf("%q %s: %q, want %q", c.health, c.attr, got, c.want)
		}
		// the texts are LV.Problems, unchanged
		if strings.Join(Texts(fs), "|") != strings.Join(lv.Problems(), "|") {
			t.Errorf("texts differ from Problems")
		}
		for _, f := range fs {
			if f.LV != "vg-hdd/tables" || f.Field == "" || f.Text == "" {
				t.Errorf("finding without subject: %+v", f)
			}
		}
	}
}

func TestSyncFindings(t *testing.T) {
	for action, want := range map[string]string{
		"resync": "sync-in-progress/WARNING", "": "sync-in-progress/WARNING", "recover": "rebuilding/WARNING",
		"check": "check-in-progress/OK", "frozen": "not-synced/WARNING", "idle": "not-synced/WARNING",
	} {
		h := AssessArray(nil, LV{Name: "t", VG: "v", Attr: "rwi-aor---", SyncPercent: 42, SyncAction: action})
		f, ok := h.Sync()
		if !ok || string(f.Code)+"/"+f.Severity.String() != want || f.Percent != 42 {
			t.Errorf("%q: %+v, want %s", action, f, want)
		}
		if f.Progress() != (f.Code != CodeNotSynced) {
			t.Errorf("%q: Progress %v", action, f.Progress())
		}
	}
	if _, ok := AssessArray(nil, LV{Attr: "rwi-aor---", SyncPercent: 100, SyncAction: "idle"}).Sync(); ok {
		t.Error("100% is synced")
	}
}

// The lab's real captures (lvm2 2.03.16), judged by codes.
func TestAssessRealCaptures(t *testing.T) {
	dropped := lvsFromFile(t, filepath.Join(labCapture(t, "raid5-member-dropped"), "lvm", "lvs.json"))
	top, _ := Find(dropped, "vg-hdd", "tables")
	h := AssessArray(dropped, top)
	if f, ok := h.Degraded(); !ok || f.Code != CodeRAIDDegraded || h.Worst() != Critical {
		t.Errorf("member dropped: %v", codesOf(h.All()))
	}
	var missing []string
	for _, img := range h.Images {
		if img.Missing {
			missing = append(missing, img.LV.Name)
			if !HasCode(img.Findings, CodeImageMissing) {
				t.Errorf("%s missing without an image-missing finding", img.LV.Name)
			}
		}
	}
	if strings.Join(missing, ",") != "tables_rimage_2" {
		t.Errorf("missing images %v", missing)
	}
	if HasCode(h.Findings, CodeLVInactive) {
		t.Error("the array is active")
	}
	prefix, _ := Find(dropped, "vg-nvme", "prefix")
	if ph := AssessArray(dropped, prefix); len(ph.All()) != 0 || ph.Worst() != OK {
		t.Errorf("prefix: %v", codesOf(ph.All()))
	}

	boot := lvsFromFile(t, filepath.Join(labCapture(t, "raid5-missing-member-boot"), "lvm", "lvs.json"))
	top, _ = Find(boot, "vg-hdd", "tables")
	h = AssessArray(boot, top)
	if !HasCode(h.Findings, CodeLVInactive) || !HasCode(h.Findings, CodeRAIDDegraded) {
		t.Errorf("missing at boot: %v", codesOf(h.Findings))
	}

	clean := lvsFromFile(t, filepath.Join(labCapture(t, "raid5-integrity-stripes5"), "lvm", "lvs.json"))
	top, _ = Find(clean, "vg-hdd", "tables")
	h = AssessArray(clean, top)
	if len(h.All()) != 0 || len(IntegrityCoverage(h)) != 0 {
		t.Errorf("clean: %v %v", codesOf(h.All()), codesOf(IntegrityCoverage(h)))
	}
	prefix, _ = Find(clean, "vg-nvme", "prefix")
	if cov := IntegrityCoverage(AssessArray(clean, prefix)); len(cov) != 1 || cov[0].Code != CodeIntegrityAbsent {
		t.Errorf("raid0 prefix has no integrity: %v", codesOf(cov))
	}
}

// lvm status: the JSON gains findings with codes; the problems keep their texts.
func TestStatusFindingsCarryCodes(t *testing.T) {
	b, err := os.ReadFile("testdata/lab-apply-2.03.16/lvs-degraded.json")
	if err != nil {
		t.Fatal(err)
	}
	r := execx.NewRecorded()
	r.On(execx.Reply{Stdout: string(b)}, LVsArgv()...)
	rep, err := Status(t.Context(), r, StatusOptions{Names: []string{"vg-hdd/tables"}})
	if err != nil {
		t.Fatal(err)
	}
	a := rep.Arrays[0]
	if rep.OK || a.State != "problem" || len(a.Findings) != len(a.Problems) {
		t.Fatalf("%+v", a)
	}
	for i, f := range a.Findings {
		if f.Text != a.Problems[i] {
			t.Errorf("finding %d %q, problem %q", i, f.Text, a.Problems[i])
		}
	}
	if !HasCode(a.Findings, CodeRAIDDegraded) || !HasCode(a.Findings, CodeImageMissing) {
		t.Errorf("codes %v", codesOf(a.Findings))
	}
	js, _ := json.Marshal(a)
	if !strings.Contains(string(js), `"code":"image-missing","severity":"CRITICAL"`) {
		t.Errorf("JSON %s", js)
	}
}
