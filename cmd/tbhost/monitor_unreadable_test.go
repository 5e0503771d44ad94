package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// issue 12 defect 3: an LVM report that cannot be read is UNKNOWN (exit 3),
// with a line naming what could not be read, also under --quiet; never OK.
func TestMonitorCheckUnreadableLVMReportIsUnknown(t *testing.T) {
	good, err := os.ReadFile(filepath.Join(derived(t, "balanced"), "lvm", "lvs.json"))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"empty":     "",
		"garbage":   "lvs: command not found\n",
		"truncated": string(good[:len(good)-40]),
	} {
		root := t.TempDir()
		if out, err := exec.Command("cp", "-a", derived(t, "balanced")+"/.", root).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		lvs := filepath.Join(root, "lvm", "lvs.json")
		if err := os.WriteFile(lvs, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"--quiet"}, {"--quiet", "vg-hdd/tables"}, {}} {
			argv := append([]string{"--root", root, "monitor", "check", "--for", "10s"}, args...)
			code, out, stderr := runTB(t, nil, argv...)
			if code != 3 || !strings.HasPrefix(out, "UNKNOWN: cannot read LVM health") || !strings.Contains(out, lvs) {
				t.Errorf("%s lvs.json, %v: exit %d, want 3 with a line naming %s\nstdout %q\nstderr %q", name, args, code, lvs, out, stderr)
			}
		}
		code, out, _ := runTB(t, nil, "--root", root, "--json", "monitor", "check", "--for", "10s")
		var j struct{ Status string }
		if err := json.Unmarshal([]byte(out), &j); code != 3 || err != nil || j.Status != "UNKNOWN" {
			t.Errorf("%s lvs.json --json: exit %d status %q (%v)", name, code, j.Status, err)
		}
	}
}
