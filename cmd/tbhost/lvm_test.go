package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/fixturetree"
)

// referenceTree unpacks the reference host (the one committed copy, which
// lvm embeds) and returns its root.
func referenceTree(t *testing.T) string {
	t.Helper()
	return fixturetree.Dir(t, "../../lvm/refhost/reference-host.tar.gz")
}

func TestLVMPlanExample(t *testing.T) {
	code, out, stderr := runTB(t, nil, "lvm", "plan", "--example")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{"vg-hdd/tables  raid5, 5 data stripes + parity over 6 devices", "vg-nvme/prefix  raid0, 2 stripes", "--stripes 5", "CAPACITY"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	code, out, _ = runTB(t, nil, "lvm", "plan", "--example", "--json")
	var doc struct {
		Arrays []struct {
			DataStripes int `json:"data_stripes"`
		} `json:"arrays"`
		Commands [][]string `json:"commands"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Arrays) != 2 || doc.Arrays[0].DataStripes != 5 || len(doc.Commands) == 0 {
		t.Fatalf("--json: exit %d, %s", code, out)
	}
}

func TestLVMPlanSavesAFileApplyCanRead(t *testing.T) {
	refTree := referenceTree(t)
	f := filepath.Join(t.TempDir(), "plan.yaml")
	code, out, stderr := runTB(t, nil, "--root", refTree, "lvm", "plan", "-o", f)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(f)
	if err != nil || !strings.Contains(string(b), "data_stripes: 5") || !strings.Contains(out, "plan saved to") {
		t.Fatalf("plan file: %v\n%s", err, b)
	}
}

func TestLVMPlanRefusalExits1(t *testing.T) {
	refTree := referenceTree(t)
	code, _, stderr := runTB(t, nil, "--root", refTree, "lvm", "plan", "--nvme", "nvme0n1")
	if code != 1 || !strings.Contains(stderr, "system disk") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	code, _, _ = runTB(t, nil, "lvm", "plan", "--integrity-mode", "fast")
	if code != 2 {
		t.Errorf("bad --integrity-mode: exit %d, want 2", code)
	}
	code, _, _ = runTB(t, nil, "--root", refTree, "lvm", "plan", "--example")
	if code != 2 {
		t.Errorf("--example with --root: exit %d, want 2", code)
	}
}

func TestInventoryOfATree(t *testing.T) {
	refTree := referenceTree(t)
	code, out, stderr := runTB(t, nil, "--root", refTree, "inventory")
	if code != 0 || !strings.Contains(out, "nvme0n1p4") || !strings.Contains(out, "ZAD0A1B1") {
		t.Fatalf("exit %d: %s %s", code, out, stderr)
	}
	code, out, _ = runTB(t, nil, "--root", refTree, "inventory", "--json")
	var inv struct {
		Disks []struct {
			Name string `json:"name"`
			Role string `json:"role"`
		} `json:"disks"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &inv) != nil || len(inv.Disks) != 8 {
		t.Fatalf("--json: %d %s", code, out)
	}
	snap := filepath.Join(t.TempDir(), "snap")
	if code, _, stderr := runTB(t, nil, "--root", refTree, "inventory", "--snapshot", snap); code != 0 {
		t.Fatalf("snapshot: %d %s", code, stderr)
	}
	code, out2, _ := runTB(t, nil, "--root", snap, "inventory", "--json")
	if code != 0 || strings.ReplaceAll(out2, snap, "") != strings.ReplaceAll(out, refTree, "") {
		t.Errorf("snapshot replay differs:\n%s\n%s", out, out2)
	}
}
