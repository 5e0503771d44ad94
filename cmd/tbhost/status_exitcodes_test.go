package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lvsRoot is a --root tree whose lvm/lvs.json holds report, for lvm
// status, integrity status and monitor check (an empty sys/block and one
// /proc/diskstats sample: no md device, nothing else to find).
func lvsRoot(t *testing.T, report string) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"lvm", "sys/block", "proc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "lvm/lvs.json"), []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "proc/diskstats"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// errorMessage is error.message of a --json document.
func errorMessage(t *testing.T, out string) string {
	t.Helper()
	var doc struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, out)
	}
	return doc.Error.Message
}

// An LVM answer that is no report (empty, truncated, not JSON, or
// lvm/lvs.json a directory) is "could not run" (3) in integrity status as
// in lvm status and monitor check; integrity status said 1, a finding.
func TestStatusCommandsUnusableLVMReportIsCannotRun(t *testing.T) {
	good, err := os.ReadFile("../../integrity/testdata/lvs-a-2.03.16-tables-clean.json")
	if err != nil {
		t.Fatal(err)
	}
	roots := map[string]string{
		"empty":     lvsRoot(t, ""),
		"truncated": lvsRoot(t, string(good[:len(good)/2])),
		"not JSON":  lvsRoot(t, "lvm2 said something else"),
		"no report": lvsRoot(t, `{"log":[]}`),
	}
	dir := lvsRoot(t, "")
	os.Remove(filepath.Join(dir, "lvm/lvs.json"))
	if err := os.Mkdir(filepath.Join(dir, "lvm/lvs.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	roots["a directory"] = dir
	for name, root := range roots {
		for _, args := range [][]string{{"integrity", "status"}, {"lvm", "status"}, {"monitor", "check", "--for", "1s"}} {
			code, out, stderr := runTB(t, nil, append([]string{"--root", root}, args...)...)
			if code != 3 {
				t.Errorf("lvs.json %s: %s: exit %d, want 3\n%s%s", name, strings.Join(args, " "), code, out, stderr)
			}
		}
	}
}

// No RAID LV at all is nothing to work on (README: 3), in lvm status and
// integrity status as in monitor check; lvm status said 1 and printed the
// nameless array as "/: no RAID LV found".
func TestStatusCommandsNoRAIDLVIsCannotRun(t *testing.T) {
	root := lvsRoot(t, `{"report":[{"lv":[]}]}`)
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"lvm", "status"}, "no RAID LV found"},
		{[]string{"integrity", "status"}, "no RAID LV with dm-integrity in any VG"},
		{[]string{"monitor", "check", "--for", "1s"}, "no RAID arrays found"},
	} {
		code, out, stderr := runTB(t, nil, append([]string{"--root", root}, tc.args...)...)
		if code != 3 || !strings.Contains(out+stderr, tc.says) || strings.Contains(out+stderr, "/: ") {
			t.Errorf("%s: exit %d, want 3 saying %q and no array named \"/\"\n%s%s", strings.Join(tc.args, " "), code, tc.says, out, stderr)
		}
		code, out, _ = runTB(t, nil, append([]string{"--json", "--root", root}, tc.args...)...)
		if m := errorMessage(t, out); code != 3 || !strings.Contains(m, tc.says) {
			t.Errorf("%s --json: exit %d, error.message %q; want 3 saying %q", strings.Join(tc.args, " "), code, m, tc.says)
		}
	}
	// an LV named that does not exist stays a problem found (1)
	for _, args := range [][]string{{"lvm", "status", "vg-hdd/tables"}, {"integrity", "status", "vg-hdd/tables"}} {
		if code, out, stderr := runTB(t, nil, append([]string{"--root", root}, args...)...); code != 1 {
			t.Errorf("%s: exit %d, want 1\n%s%s", strings.Join(args, " "), code, out, stderr)
		}
	}
}

// monitor check --json, UNKNOWN because there is no array, said only
// "UNKNOWN (see arrays)" over an empty arrays list: the reason was in the
// text output alone.
func TestMonitorCheckJSONSaysWhyWhenNoArray(t *testing.T) {
	code, out, _ := runTB(t, nil, "--json", "--root", lvsRoot(t, `{"report":[{"lv":[]}]}`), "monitor", "check", "--for", "1s")
	var doc struct {
		Status string            `json:"status"`
		Arrays []json.RawMessage `json:"arrays"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 3 || doc.Status != "UNKNOWN" || doc.Arrays == nil || len(doc.Arrays) != 0 {
		t.Fatalf("exit %d %v\n%s", code, err, out)
	}
	if m := errorMessage(t, out); m != "UNKNOWN: no RAID arrays found (no LVM RAID LV, no md device)" {
		t.Errorf("error.message %q: want the reason", m)
	}
}

// The help of monitor check said a bad command line exits 3; it is 2, as
// in every command (README).
func TestMonitorCheckHelpGivesTheUsageExitCode(t *testing.T) {
	code, out, _ := runTB(t, nil, "monitor", "check", "--help")
	help := strings.Join(strings.Fields(out), " ")
	if code != 0 || strings.Contains(help, "3 UNKNOWN (also for a bad command line") || !strings.Contains(help, "A bad command line (an unknown flag, a bad flag value) is 2") {
		t.Errorf("exit %d, help:\n%s", code, out)
	}
	if code, _, _ := runTB(t, nil, "monitor", "check", "--no-such-flag"); code != 2 {
		t.Errorf("a bad command line: exit %d, want 2 as the help says", code)
	}
}

// A counter the recorded report gives in a form tbhost cannot read makes
// lvm status and integrity status NOT OK (1), naming LV, field and value.
func TestStatusCommandsUnreadableCounterIsAProblem(t *testing.T) {
	b, err := os.ReadFile("../../integrity/testdata/lvs-a-2.03.16-tables-mismatch-sdc.json")
	if err != nil {
		t.Fatal(err)
	}
	report := strings.Replace(string(b), `"tables_rimage_2_iorig(0)", "seg_start_pe":"0", "seg_size_pe":"60", "sync_percent":"", "raid_sync_action":"", "raid_mismatch_count":"", "integritymismatches":"5"`,
		`"tables_rimage_2_iorig(0)", "seg_start_pe":"0", "seg_size_pe":"60", "sync_percent":"", "raid_sync_action":"", "raid_mismatch_count":"", "integritymismatches":"abc"`, 1)
	if report == string(b) {
		t.Fatal("the fixture changed: tables_rimage_2's integritymismatches not found")
	}
	root := lvsRoot(t, report)
	want := `lvs reported integritymismatches="abc" for vg-hdd/tables_rimage_2: not a count; tbhost cannot judge it`
	for _, args := range [][]string{{"lvm", "status"}, {"integrity", "status"}} {
		code, out, stderr := runTB(t, nil, append([]string{"--root", root}, args...)...)
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("%s: exit %d, want 1 and %q\n%s%s", strings.Join(args, " "), code, want, out, stderr)
		}
	}
}
