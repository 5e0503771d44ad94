package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/realdata"
	"github.com/tbhost/tbhost/internal/smallfs"
	"github.com/tbhost/tbhost/lvm"
)

func TestIntegrityVerifyTablesRealData(t *testing.T) {
	syzygy := realdata.Dir(t)
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
	syzygy := realdata.Dir(t)
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
	code, out, stderr := runTBTerminal(t, recordedLVS(t, "lvs-a-2.03.16-tables-clean.json", "vg-hdd"), "integrity", "status", "vg-hdd/tables")
	if code != 0 || !strings.Contains(out, "OK vg-hdd/tables") || !strings.Contains(out, "/dev/sdf") {
		t.Fatalf("clean: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = runTB(t, recordedLVS(t, "lvs-a-2.03.16-tables-mismatch-sdc.json"), "integrity", "status")
	if code != 1 || !strings.Contains(out, "PROBLEM: vg-hdd/tables_rimage_2 on /dev/sdc: 5 integrity mismatches") {
		t.Fatalf("mismatch: exit %d\n%s", code, out)
	}
	code, out, _ = runTB(t, recordedLVS(t, "lvs-a-2.03.16-tables-mismatch-sdc.json"), "integrity", "status", "--json")
	var doc struct {
		Arrays []struct {
			LV     string
			OK     bool
			Images []struct {
				Name       string
				Disks      []string
				Mismatches int64 `json:"integrity_mismatches"`
			}
		}
		Error struct {
			ExitCode int `json:"exit_code"`
		}
	}
	err := json.Unmarshal([]byte(out), &doc)
	arrays := doc.Arrays
	if err != nil || code != 1 || len(arrays) != 1 || arrays[0].OK || doc.Error.ExitCode != 1 {
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

// scrubRoot is a --root tree whose /dev/mapper holds regular files standing
// in for the six image devices of vg-hdd/tables, plus a /proc/diskstats.
func scrubRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	m := filepath.Join(root, "dev/mapper")
	os.MkdirAll(m, 0o755)
	for i := 0; i < 6; i++ {
		os.WriteFile(filepath.Join(m, fmt.Sprintf("vg--hdd-tables_rimage_%d", i)), make([]byte, 3<<20), 0o644)
	}
	os.WriteFile(filepath.Join(m, "vg--hdd-tables"), make([]byte, 15<<20), 0o644)
	os.MkdirAll(filepath.Join(root, "proc"), 0o755)
	os.MkdirAll(filepath.Join(root, "sys"), 0o755)
	b, _ := os.ReadFile("../../integrity/testdata/diskstats/t0/proc/diskstats")
	os.WriteFile(filepath.Join(root, "proc/diskstats"), b, 0o644)
	return root
}

func TestIntegrityScrubCleanThenCountersRise(t *testing.T) {
	root := scrubRoot(t)
	state := filepath.Join(t.TempDir(), "scrub.json")
	rec := recordedLVS(t, "lvs-a-2.03.16-tables-clean.json", "vg-hdd")
	code, out, stderr := runTB(t, rec, "--root", root, "integrity", "scrub", "--state", state, "--rate", "0", "vg-hdd/tables")
	if code != 0 || !strings.Contains(out, "pass 1 complete") || !strings.Contains(out, "tables_rimage_5  /dev/sdf") {
		t.Fatalf("clean scrub: exit %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "note: kernel log not readable") {
		t.Errorf("an unreadable kernel log must be mentioned:\n%s", out)
	}
	// second run: pass 2; the counters rose on image 2 meanwhile -> exit 1 naming /dev/sdc
	rec = recordedLVS(t, "lvs-a-2.03.16-tables-clean.json", "vg-hdd")
	b, _ := os.ReadFile("../../integrity/testdata/lvs-a-2.03.16-tables-mismatch-sdc.json")
	rec.On(execx.Reply{Stdout: string(b)}, lvm.LVsArgv("vg-hdd")...)
	code, out, _ = runTB(t, rec, "--root", root, "integrity", "scrub", "--json", "--state", state, "--rate", "1GiB/s", "vg-hdd/tables")
	var rep struct {
		Result struct {
			Pass   int
			Passes []struct{ Pass int } `json:"passes_completed"`
		}
		Problems []string
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 {
		t.Fatalf("exit %d %v\n%s", code, err, out)
	}
	if rep.Result.Pass != 2 || len(rep.Result.Passes) != 2 || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "tables_rimage_2 on /dev/sdc: integrity mismatches 0 -> 5") {
		t.Fatalf("%+v", rep)
	}
}

// The state's file system has room for the first checkpoint only (/var
// filling up in the night): the scrub's report is printed all the same,
// then the state's error; exit 3 when the scrub found nothing, 1 when it
// found a problem (a health check's CRITICAL, not UNKNOWN).
func TestIntegrityScrubOnAFullStateDiskReportsAndKeepsItsExitCode(t *testing.T) {
	for _, c := range []struct {
		lvsAfter string
		code     int
		want     string
	}{
		{"lvs-a-2.03.16-tables-clean.json", 3, "pass 1 complete"},
		{"lvs-a-2.03.16-tables-mismatch-sdc.json", 1, "tables_rimage_2 on /dev/sdc: integrity mismatches 0 -> 5"},
	} {
		root := scrubRoot(t)
		dir := smallfs.Mount(t, "8k", "a full /var")
		os.WriteFile(filepath.Join(dir, "filler"), make([]byte, 4096), 0o644) // one page left: the first checkpoint
		state := filepath.Join(dir, "scrub.json")
		rec := recordedLVS(t, "lvs-a-2.03.16-tables-clean.json", "vg-hdd")
		b, _ := os.ReadFile("../../integrity/testdata/" + c.lvsAfter)
		rec.On(execx.Reply{Stdout: string(b)}, lvm.LVsArgv("vg-hdd")...)
		code, out, stderr := runTB(t, rec, "--root", root, "integrity", "scrub", "--state", state, "--rate", "0", "vg-hdd/tables")
		if code != c.code || !strings.Contains(out, c.want) || !strings.Contains(stderr, "scrub state not written") || !strings.Contains(stderr, state) {
			t.Fatalf("%s: exit %d (want %d), stdout must hold %q and stderr the state's error\nstdout:\n%s\nstderr:\n%s", c.lvsAfter, code, c.code, c.want, out, stderr)
		}
	}
}

func TestIntegrityScrubRefusals(t *testing.T) {
	root := scrubRoot(t)
	state := filepath.Join(t.TempDir(), "scrub.json")
	os.WriteFile(state, []byte(`{"version":1,"identity":"some-other-uuid","pass":4,"images":{}}`), 0o644)
	rec := recordedLVS(t, "lvs-a-2.03.16-tables-clean.json", "vg-hdd")
	code, _, stderr := runTB(t, rec, "--root", root, "integrity", "scrub", "--state", state, "vg-hdd/tables")
	if code != 1 || !strings.Contains(stderr, "some-other-uuid") {
		t.Fatalf("another array's state: exit %d, %q", code, stderr)
	}
	for _, args := range [][]string{
		{"integrity", "scrub"},
		{"integrity", "scrub", "tables"},
		{"integrity", "scrub", "--budget", "1h", "--until", "06:00", "vg/lv"},
		{"integrity", "scrub", "--until", "25:99", "vg/lv"},
		{"integrity", "scrub", "--chunk", "1000", "vg/lv"},
	} {
		if code, _, stderr := runTB(t, nil, args...); code != cliutil.ExitUsage {
			t.Errorf("%v: exit %d, want 2 (%q)", args, code, stderr)
		}
	}
}

func TestIntegrityScrubSyncactionNeverRepairs(t *testing.T) {
	rec := recordedLVS(t, "lvs-a-2.03.16-tables-clean.json", "vg-hdd")
	for _, f := range []string{"lvs-a-2.03.16-tables-check-running.json", "lvs-a-2.03.16-tables-clean.json"} {
		b, _ := os.ReadFile("../../integrity/testdata/" + f)
		rec.On(execx.Reply{Stdout: string(b)}, lvm.LVsArgv("vg-hdd")...)
	}
	rec.On(execx.Reply{}, "lvm", "lvchange", "--syncaction", "check", "vg-hdd/tables")
	// --budget bounds the wait: one poll (5 s) at most, then the check goes on in the kernel
	code, out, stderr := runTB(t, rec, "integrity", "scrub", "--syncaction", "--budget", "1s", "vg-hdd/tables")
	if code != 0 || !strings.Contains(out, "ran: lvm lvchange --syncaction check vg-hdd/tables") {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	for _, c := range rec.Calls {
		if strings.Contains(strings.Join(c, " "), "repair") {
			t.Fatalf("ran %q", c)
		}
	}
}
