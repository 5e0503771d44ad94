package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/lvm"
)

const syzygy = "../../../shared/syzygy"

func needSyzygy(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(syzygy, "tables")); err != nil {
		t.Skipf("real Syzygy data not found at %s (../shared/syzygy from the repo root)", syzygy)
	}
}

func TestIntegrityVerifyTablesRealData(t *testing.T) {
	needSyzygy(t)
	list := filepath.Join(syzygy, "checksums/syzygy-tables.info/sha256")
	code, out, stderr := runTB(t, nil, "integrity", "verify-tables", "--checksums", list, "--jobs", "3", filepath.Join(syzygy, "tables"))
	if code != cliutil.ExitProblem {
		t.Fatalf("exit %d, want 1 (stderr %q)", code, stderr)
	}
	for _, want := range []string{"24 ok, 6 mismatching", "KQvK.rtbz", "size 5328 bytes, published 5392", "2992 listed files not in these directories"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runTB(t, nil, "integrity", "verify-tables", "--json", "--checksums", list, filepath.Join(syzygy, "tables"))
	var rep struct {
		OK         int `json:"ok"`
		Mismatches int `json:"mismatches"`
		Files      []struct {
			Name, Verdict, Expected, Actual string
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 {
		t.Fatalf("exit %d, JSON %v:\n%s", code, err, out)
	}
	if rep.OK != 24 || rep.Mismatches != 6 || len(rep.Files) != 30 {
		t.Fatalf("%+v", rep)
	}
}

func TestIntegrityVerifyTablesCleanCopyExitsZero(t *testing.T) {
	needSyzygy(t)
	dir := t.TempDir()
	b, _ := os.ReadFile(filepath.Join(syzygy, "tables/KQvKQ.rtbw"))
	os.WriteFile(filepath.Join(dir, "KQvKQ.rtbw"), b, 0o644)
	list := filepath.Join(syzygy, "checksums/syzygy-tables.info/md5")
	if code, out, stderr := runTB(t, nil, "integrity", "verify-tables", "-c", list, dir); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	// the same with the whole set required is a problem
	if code, out, _ := runTB(t, nil, "integrity", "verify-tables", "-c", list, "--complete", dir); code != 1 || !strings.Contains(out, "MISSING: 3021") {
		t.Fatalf("--complete: exit %d\n%s", code, out)
	}
}

func TestIntegrityVerifyTablesUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"integrity", "verify-tables", "/tmp"},                               // no --checksums
		{"integrity", "verify-tables", "--checksums", "x"},                   // no DIR
		{"integrity", "verify-tables", "--algo", "crc32", "-c", "x", "/tmp"}, // bad algo
		{"integrity", "verify-tables", "--rate", "fast", "-c", "x", "/tmp"},  // bad rate
		{"integrity", "verify-tables", "--no-hash", "/tmp"},                  // nothing to check against
		{"integrity", "no-such-subcommand"},
	} {
		if code, _, stderr := runTB(t, nil, args...); code != cliutil.ExitUsage {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, stderr)
		}
	}
}

func recordedLVS(t *testing.T, fixture string, names ...string) *execx.Recorded {
	t.Helper()
	b, err := os.ReadFile("../../integrity/testdata/" + fixture)
	if err != nil {
		t.Fatal(err)
	}
	return execx.NewRecorded().On(execx.Reply{Stdout: string(b)}, lvm.LVsArgv(names...)...)
}

func TestIntegrityStatusCleanThenMismatch(t *testing.T) {
	code, out, stderr := runTB(t, recordedLVS(t, "lvs-a-2.03.16-tables-clean.json", "vg-hdd/tables"), "integrity", "status", "vg-hdd/tables")
	if code != 0 || !strings.Contains(out, "OK vg-hdd/tables") || !strings.Contains(out, "/dev/sdf") {
		t.Fatalf("clean: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = runTB(t, recordedLVS(t, "lvs-a-2.03.16-tables-mismatch-sdc.json"), "integrity", "status")
	if code != 1 || !strings.Contains(out, "PROBLEM: vg-hdd/tables_rimage_2 on /dev/sdc: 5 integrity mismatches") {
		t.Fatalf("mismatch: exit %d\n%s", code, out)
	}
	code, out, _ = runTB(t, recordedLVS(t, "lvs-a-2.03.16-tables-mismatch-sdc.json"), "integrity", "status", "--json")
	var arrays []struct {
		LV     string
		OK     bool
		Images []struct {
			Name       string
			Disks      []string
			Mismatches int64 `json:"integrity_mismatches"`
		}
	}
	if err := json.Unmarshal([]byte(out), &arrays); err != nil || code != 1 || len(arrays) != 1 || arrays[0].OK {
		t.Fatalf("exit %d %v\n%s", code, err, out)
	}
	if img := arrays[0].Images[2]; img.Mismatches != 5 || img.Disks[0] != "/dev/sdc" {
		t.Fatalf("%+v", img)
	}
}

func TestIntegrityStatusLVMFailureIsCannotRun(t *testing.T) {
	rec := execx.NewRecorded().On(execx.Reply{Stderr: "  /dev/mapper/control: open failed: No such device", ExitCode: 5}, lvm.LVsArgv()...)
	if code, _, stderr := runTB(t, rec, "integrity", "status"); code != cliutil.ExitCannotRun || !strings.Contains(stderr, "mapper/control") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}
