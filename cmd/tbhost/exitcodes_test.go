package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/realdata"
)

// Issue 18: one exit-code rule (README): the same situation gives the same
// code in every command. Each case below differed before.

// noArrays is a --root tree with block devices but no RAID array.
func noArrays(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"sys/block/sda/queue", "proc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	line := "   8       0 sda 100 0 800 10 0 0 0 0 0 10 10 0 0 0 0 0 0\n"
	for _, f := range []string{"proc/diskstats", "proc/diskstats.0", "proc/diskstats.1"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "sys/block/sda/dev"), []byte("8:0\n"), 0o644)
	return root
}

// monitor topology exited 0 with no arrays while check and watch exit 3:
// nothing to monitor is "could not run" (UNKNOWN for check) in all three.
func TestExitCodeNoArraysIsThreeInEveryMonitorCommand(t *testing.T) {
	root := noArrays(t)
	for _, args := range [][]string{
		{"monitor", "topology"},
		{"monitor", "check", "--for", "1s", "--interval", "1s"},
		{"monitor", "watch", "--count", "1", "--interval", "1s"},
	} {
		code, out, stderr := runTB(t, nil, append([]string{"--root", root}, args...)...)
		if code != 3 || !strings.Contains(out+stderr, "no RAID arrays") {
			t.Errorf("tbhost %s: exit %d, want 3 naming the reason\n%s%s", strings.Join(args, " "), code, out, stderr)
		}
	}
}

// A missing --store was 3 but a missing --tables 1: both are a directory
// that is not there, 3.
func TestExitCodeMissingTablesAndMissingStoreAreThree(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone")
	tables := realdata.Tables(t)
	for _, args := range [][]string{
		{"prefix", "verify", "--tables", missing, "--store", t.TempDir()},
		{"prefix", "verify", "--tables", tables, "--store", missing},
		{"prefix", "extract", "--tables", missing, "--store", t.TempDir()},
		{"prefix", "extract", "--tables", tables, "--store", missing},
		{"prefix", "stats", missing},
		{"prefix", "plan", "--tables", missing, "--capacity", "1GiB"},
		{"prefix", "stats", t.TempDir()}, // no tables under it: nothing to work on
	} {
		code, _, stderr := runTB(t, nil, args...)
		if code != 3 {
			t.Errorf("tbhost %s: exit %d, want 3\n%s", strings.Join(args, " "), code, stderr)
		}
	}
}

// A bad plan was 1 but a bad checksum list 2 (and a bad sizes list 3): a
// file that was read and refused is 1 in every command; a missing one 3.
func TestExitCodeRefusedInputFileIsOneMissingIsThree(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	os.WriteFile(garbage, []byte("this is not\x00 what you think {[\n"), 0o644)
	tables := filepath.Join(dir, "tables")
	os.MkdirAll(tables, 0o755)
	os.WriteFile(filepath.Join(tables, "KRvK.rtbw"), []byte("x"), 0o644)
	missing := filepath.Join(dir, "missing")
	badYAML := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badYAML, []byte("name: [\n"), 0o644)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"lvm", "apply", "--dry-run", garbage}, 1},
		{[]string{"lvm", "status", "--plan", garbage}, 1},
		{[]string{"integrity", "verify-tables", "--checksums", garbage, tables}, 1},
		{[]string{"integrity", "verify-tables", "--no-hash", "--sizes", garbage, tables}, 1},
		{[]string{"integrity", "verify-tables", "--no-hash", "--tbcheck", garbage, tables}, 1},
		{[]string{"playbook", "validate", garbage + ".yaml"}, 3}, // missing: garbage.yaml does not exist
		{[]string{"playbook", "show", badYAML}, 1},
		{[]string{"playbook", "validate", badYAML}, 1},
		{[]string{"lvm", "apply", "--dry-run", missing}, 3},
		{[]string{"lvm", "status", "--plan", missing}, 3},
		{[]string{"integrity", "verify-tables", "--checksums", missing, tables}, 3},
		{[]string{"integrity", "verify-tables", "--no-hash", "--sizes", missing, tables}, 3},
		{[]string{"playbook", "show", missing + ".yaml"}, 3},
		{[]string{"playbook", "run", "--dry-run", missing + ".yaml"}, 3},
	} {
		code, _, stderr := runTB(t, nil, tc.args...)
		if code != tc.code {
			t.Errorf("tbhost %s: exit %d, want %d\n%s", strings.Join(tc.args, " "), code, tc.code, stderr)
		}
	}
}

// A --log-level tbhost does not know was taken as warn without a word:
// a bad flag value is a usage error (2), before the command runs.
func TestExitCodeBadLogLevelIsUsage(t *testing.T) {
	code, out, stderr := runTB(t, nil, "--log-level", "loud", "lvm", "plan", "--example")
	if code != 2 || !strings.Contains(stderr, `--log-level "loud"`) || out != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 naming the value and no plan", code, out, stderr)
	}
	if code, _, stderr := runTB(t, nil, "--log-level", "debug", "lvm", "plan", "--example"); code != 0 {
		t.Errorf("--log-level debug: exit %d %s", code, stderr)
	}
}

// lvm status given a name that is no VG/LV was 3 (could not run) after
// asking lvm: the command line is wrong, 2, and lvm is not asked.
func TestExitCodeLVMStatusBadNameIsUsage(t *testing.T) {
	for _, name := range []string{"tables", "/tables", "vg-hdd/"} {
		rec := execx.NewRecorded()
		code, _, stderr := runTB(t, rec, "lvm", "status", name)
		if code != 2 || !strings.Contains(stderr, "name an LV as VG/LV") || len(rec.Calls) != 0 {
			t.Errorf("lvm status %s: exit %d, %d lvm calls, stderr %q; want 2, none", name, code, len(rec.Calls), stderr)
		}
	}
}
