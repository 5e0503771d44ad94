package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/realdata"
)

// Issue 18: after a prefix was corrupted, a rerun of extract said
// "27 already valid" without reading them; it says what it knows now.
func TestExtractRerunSaysUnchangedNotValid(t *testing.T) {
	tables := realdata.CopyTables(t)
	store := t.TempDir()
	args := []string{"prefix", "extract", "--tables", tables, "--store", store}
	if code, _, stderr := runTB(t, nil, args...); code != 0 {
		t.Fatalf("extract: exit %d %s", code, stderr)
	}
	p := filepath.Join(store, "KQvK.rtbw.prefix")
	b, _ := os.ReadFile(p)
	b[len(b)-1] ^= 0xff
	os.WriteFile(p, b, 0o644)
	code, out, _ := runTB(t, nil, args...)
	if code != 0 || strings.Contains(out, "already valid") ||
		!strings.Contains(out, "0 written, 30 unchanged since the manifest (not re-read)") || !strings.Contains(out, "prefix verify checks their bytes") {
		t.Errorf("rerun: exit %d\n%s", code, out)
	}
}

// Issue 18: `lvm apply --dry-run` of the example plan on another machine
// said "... is not on vm any more" eight times.
func TestApplyExamplePlanElsewhereSaysWhoseItIs(t *testing.T) {
	plan := filepath.Join(t.TempDir(), "ref.yaml")
	if code, _, stderr := runTB(t, nil, "lvm", "plan", "--example", "-o", plan); code != 0 {
		t.Fatalf("plan: %d %s", code, stderr)
	}
	code, out, stderr := runTB(t, nil, "--root", captured(t, "raid5-integrity-stripes5"), "lvm", "apply", "--dry-run", plan)
	if code != 1 || strings.Count(stderr, "this plan was made for host tb-ref") != 1 || strings.Contains(stderr, "any more") {
		t.Errorf("exit %d\n%s%s", code, out, stderr)
	}
}
