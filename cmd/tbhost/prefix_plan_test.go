package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tbhost/tbhost/internal/realdata"
	"github.com/tbhost/tbhost/prefix"
)

// Issue 18: prefix plan --capacity left out the manifest and the store
// directory (220 KiB planned, 228 KiB used). The plan counts them now: it
// is never below what extract really uses, and at most a few blocks above.
func TestPrefixPlanCountsWhatTheStoreReallyUses(t *testing.T) {
	tables := realdata.Tables(t)
	store := t.TempDir()
	code, out, stderr := runTB(t, nil, "--json", "prefix", "plan", "--tables", tables, "--capacity", "1GiB")
	var plan prefix.Plan
	if code != 0 || json.Unmarshal([]byte(out), &plan) != nil {
		t.Fatalf("plan: exit %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr := runTB(t, nil, "prefix", "extract", "--tables", tables, "--store", store); code != 0 {
		t.Fatalf("extract: exit %d %s", code, stderr)
	}
	entries, err := os.ReadDir(store)
	if err != nil {
		t.Fatal(err)
	}
	var used int64
	for _, e := range entries {
		fi, err := os.Stat(filepath.Join(store, e.Name()))
		if err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		used += prefix.OnDisk(fi.Size())
	}
	dir, _ := os.Stat(store)
	used += max(prefix.FSBlock, prefix.OnDisk(dir.Size()))
	if plan.FullOnDisk < used || plan.FullOnDisk > used+2*prefix.FSBlock {
		t.Errorf("planned %d bytes on disk, the store uses %d (%d files)", plan.FullOnDisk, used, len(entries))
	}
	// a capacity of exactly what the store uses, as the plan counts it, fits
	code, _, _ = runTB(t, nil, "prefix", "plan", "--tables", tables, "--capacity", itoa(plan.FullOnDisk))
	if code != 0 {
		t.Errorf("--capacity %d (the plan's own figure): exit %d", plan.FullOnDisk, code)
	}
	if code, _, _ = runTB(t, nil, "prefix", "plan", "--tables", tables, "--capacity", itoa(used-1)); code != 1 {
		t.Errorf("--capacity %d (a byte less than the store uses): exit %d, want 1", used-1, code)
	}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
