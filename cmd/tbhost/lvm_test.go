package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
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
	// a bad filesystem or mount point on the command line is a usage
	// error like a bad --integrity-mode, naming the flag (it was 1)
	for _, bad := range [][]string{{"--tables-fs", "btrfs"}, {"--prefix-fs", "ext3"}, {"--tables-mount", "relative/path"}, {"--prefix-mount", "/srv/a:b"}} {
		code, out, stderr := runTB(t, nil, append([]string{"lvm", "plan", "--example"}, bad...)...)
		if code != 2 || !strings.Contains(stderr, bad[0]+" "+strconv.Quote(bad[1])) || out != "" {
			t.Errorf("%v: exit %d, want 2 naming the flag\n%s%s", bad, code, out, stderr)
		}
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

// lvm plan --example --json carries the capacity and timeline of the
// reference host; the figures are derived in internal/capacity's and
// internal/timeline's tests and pinned here as the user reads them.
func TestLVMPlanExampleCapacityAndTimeline(t *testing.T) {
	code, out, stderr := runTB(t, nil, "lvm", "plan", "--example", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var plan struct {
		Capacity struct {
			Set struct {
				Files       int   `json:"files"`
				Bytes       int64 `json:"bytes"`
				PrefixBytes int64 `json:"prefix_bytes"`
			} `json:"set"`
			Filesystems []struct {
				Array string   `json:"array"`
				Mkfs  []string `json:"mkfs"`
				Usage struct {
					FS        string `json:"fs"`
					Available int64  `json:"available"`
				} `json:"usage"`
			} `json:"filesystems"`
			Fits []struct {
				What     string `json:"what"`
				Fits     bool   `json:"fits"`
				Headroom int64  `json:"headroom"`
			} `json:"fits"`
		} `json:"capacity"`
		Timeline struct {
			Steps []struct {
				Name    string  `json:"name"`
				Seconds float64 `json:"seconds"`
				Nights  int     `json:"nights"`
			} `json:"steps"`
		} `json:"timeline"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	c := plan.Capacity
	if c.Set.Files != 3022 || c.Set.Bytes != 18_550_113_699_360 || c.Set.PrefixBytes != 413_834_902_592 {
		t.Errorf("set: %+v", c.Set)
	}
	avail := map[string]int64{}
	for _, fs := range c.Filesystems {
		avail[fs.Array+" "+fs.Usage.FS] = fs.Usage.Available
	}
	// ext4 -m 0 -i 1048576 on 102,910 x 4 MiB: f_bavail 105,062,065 blocks
	if got := avail["vg-nvme/prefix ext4"]; got != 105_062_065*4096 {
		t.Errorf("prefix ext4 available %d, want %d", got, int64(105_062_065*4096))
	}
	// ext4 -m 1 -i 4194304 on 7,097,085 x 4 MiB: f_bavail 7,193,497,366 blocks
	if got := avail["vg-hdd/tables ext4"]; got != 7_193_497_366*4096 {
		t.Errorf("tables ext4 available %d, want %d", got, int64(7_193_497_366*4096))
	}
	if len(c.Fits) != 4 {
		t.Errorf("%d fit checks, want 4 (tables and prefix, ext4 and xfs)", len(c.Fits))
	}
	for _, f := range c.Fits {
		if !f.Fits {
			t.Errorf("%s does not fit on the reference host", f.What)
		}
	}
	steps := map[string]float64{}
	for _, s := range plan.Timeline.Steps {
		steps[s.Name] = s.Seconds
		if s.Name == "scrub-pass" && s.Nights != 12 {
			t.Errorf("scrub pass %d nights, want 12", s.Nights)
		}
	}
	// 1,419,417 extents of 4 MiB per image at 160 MiB/s
	if got := steps["initial-sync"]; got < 35485.4 || got > 35485.5 {
		t.Errorf("initial sync %.1f s, want 35485.4", got)
	}
	for _, w := range plan.Warnings {
		if strings.Contains(w, "does not fit") || strings.Contains(w, "timeline") {
			t.Errorf("warning on the reference host: %s", w)
		}
	}
	code, out, _ = runTB(t, nil, "lvm", "plan", "--example", "--scrub-rate", "100MiB/s", "--scrub-budget", "30m")
	if code != 0 || !strings.Contains(out, "190 nights (target 14)") {
		t.Errorf("old scrub defaults: exit %d, want a warning naming 190 nights:\n%s", code, out)
	}
	code, out, _ = runTB(t, nil, "lvm", "plan", "--example", "--prefix-size", "300GiB")
	if code != 0 || !strings.Contains(out, "prefix store 3-7 on ext4 does not fit") || !strings.Contains(out, "add NVMe space") {
		t.Errorf("a 300 GiB prefix LV: exit %d, want a warning that the store does not fit and the way out:\n%s", code, out)
	}
	if code, _, _ := runTB(t, nil, "lvm", "plan", "--example", "--hdd-rate", "fast"); code != 2 {
		t.Errorf("--hdd-rate fast: exit %d, want 2", code)
	}
	// --help said "(default 2h, health-check's) (default: 0s)", and 0s is refused
	_, help, _ := runTB(t, nil, "lvm", "plan", "--help")
	if !strings.Contains(help, "(default: 2h0m0s)") || strings.Contains(help, "(default: 0s)") {
		t.Errorf("lvm plan --help: --scrub-budget's default is 2h:\n%s", help)
	}
	if code, _, _ := runTB(t, nil, "lvm", "plan", "--example", "--scrub-budget", "0s"); code != 2 {
		t.Errorf("--scrub-budget 0s: exit %d, want 2", code)
	}
}
