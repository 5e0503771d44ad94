package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tbhost/tbhost/internal/bench"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/realdata"
)

func TestBenchHelpAndUsageErrors(t *testing.T) {
	code, out, _ := runTB(t, nil, "bench", "probe", "--help")
	if code != 0 || !strings.Contains(out, "--matrix") || !strings.Contains(out, "slow/probe") {
		t.Fatalf("probe --help: exit %d\n%s", code, out)
	}
	dir := t.TempDir()
	for _, args := range [][]string{
		{"bench", "probe", "--tables", dir, "--io", "aio"},
		{"bench", "probe", "--tables", dir, "--advise", "sequential"},
		{"bench", "probe", "--tables", dir, "--cache", "flush"},
		{"bench", "probe", "--tables", dir, "--requests", "10", "--warmup", "10"},
		{"bench", "probe", "--tables", dir, "--mix", "23"},
		{"bench", "probe", "--tables", dir, "--raw"},
		{"bench", "replay", "--log", "x", "--target", "http://127.0.0.1:1", "--warmup", "100%"},
		{"bench", "nonsense"},
		{"bench", "probe"},
		{"bench", "replay", "--log", "x"},
		{"bench", "serve"},
	} {
		if code, _, stderr := runTB(t, nil, args...); code != cliutil.ExitUsage {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, stderr)
		}
	}
	// an empty table directory cannot be benchmarked: exit 3, naming it
	code, _, stderr := runTB(t, nil, "bench", "probe", "--tables", dir)
	if code != cliutil.ExitCannotRun || !strings.Contains(stderr, dir) {
		t.Errorf("empty tables: exit %d, stderr %q", code, stderr)
	}
}

func TestBenchProbeMatrixCLI(t *testing.T) {
	tables := realdata.CopyTables(t)
	out := t.TempDir()
	code, stdout, stderr := runTB(t, nil, "bench", "probe", "--tables", tables, "--matrix", "--requests", "30", "--warmup", "10",
		"--clients", "2", "--cache", "evict", "--out", out, "--raw", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, stdout)
	}
	if len(rep.Runs) != 16 {
		t.Fatalf("%d runs, want the 16-cell grid", len(rep.Runs))
	}
	for _, name := range []string{"ecdf.png", "ecdf.svg", "summary.json", "latencies.csv"} {
		if fi, err := os.Stat(filepath.Join(out, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	if !strings.Contains(strings.Join(rep.Notices, " "), "temporary prefix store") {
		t.Errorf("notices %q do not say the store was temporary", rep.Notices)
	}
}

func TestBenchProbeWeightLogCLI(t *testing.T) {
	tables := realdata.CopyTables(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "mix.log")
	os.WriteFile(log, []byte("8/8/8/8/8/8/8/KRk5 w - - 0 1\n8/8/8/8/8/8/8/KQQQk3 w - - 0 1\n"), 0o644)
	code, stdout, stderr := runTB(t, nil, "bench", "probe", "--tables", tables, "--weight", "bytes", "--weight-log", log,
		"--requests", "20", "--warmup", "5", "--clients", "2", "--cache", "keep")
	if code != 0 || !strings.Contains(stdout, "weighted by the 1 materials") || !strings.Contains(stdout, "1 requests of "+log+" have a material these tables lack (e.g. KQQQvK)") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	os.WriteFile(log, []byte("8/8/8/8/8/8/8/KQQQk3 w - - 0 1\n"), 0o644)
	if code, _, stderr := runTB(t, nil, "bench", "probe", "--tables", tables, "--weight-log", log); code != cliutil.ExitProblem || !strings.Contains(stderr, "KQQQvK") {
		t.Errorf("a mix with no known material: exit %d %s", code, stderr)
	}
	if code, _, _ := runTB(t, nil, "bench", "probe", "--tables", tables, "--weight", "files"); code != cliutil.ExitUsage {
		t.Errorf("--weight files: exit %d", code)
	}
}

// builtInTarget is bench serve's handler over a copy of the real tables
// (closed when the test ends) and the tables' directory.
func builtInTarget(t *testing.T) (*bench.Target, string) {
	t.Helper()
	tables := realdata.CopyTables(t)
	set, err := bench.LoadTables(context.Background(), []string{tables})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := bench.NewTarget(set, bench.ProbeConfig{IO: bench.IOPread, Advise: bench.AdviseNormal, Parallel: 1}, bench.Mix{WDL: 1, DTZ: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	return tg, tables
}

func TestBenchReplayCLI(t *testing.T) {
	tg, tables := builtInTarget(t)
	good := httptest.NewServer(tg)
	defer good.Close()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "backend down", http.StatusInternalServerError)
	}))
	defer broken.Close()

	dir := t.TempDir()
	log := filepath.Join(dir, "fens.log")
	code, _, stderr := runTB(t, nil, "bench", "fens", "--tables", tables, "--count", "500", "-o", log)
	if code != 0 {
		t.Fatalf("fens: exit %d %s", code, stderr)
	}
	b, _ := os.ReadFile(log)
	if n := strings.Count(string(b), "\n"); n != 500 {
		t.Fatalf("fens wrote %d lines", n)
	}

	out := filepath.Join(dir, "out")
	code, stdout, stderr := runTB(t, nil, "bench", "replay", "--log", log, "--target", good.URL, "--clients", "4", "--warmup", "100", "--out", out)
	if code != 0 || !strings.Contains(stdout, good.URL) {
		t.Fatalf("replay against the built-in target: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "failures.csv")); !os.IsNotExist(err) {
		t.Errorf("failures.csv written without failures: %v", err)
	}

	code, stdout, _ = runTB(t, nil, "bench", "replay", "--log", log, "--target", good.URL, "--target", broken.URL, "--clients", "4", "--out", out)
	if code != cliutil.ExitProblem {
		t.Fatalf("a target answering 500: exit %d, want 1\n%s", code, stdout)
	}
	if !strings.Contains(stdout, "100 of 100 measured requests FAILED (500: 100)") {
		t.Errorf("the 500s are not reported:\n%s", stdout)
	}
	fails, err := os.ReadFile(filepath.Join(out, "failures.csv"))
	if err != nil || strings.Count(string(fails), "\n") != 501 {
		t.Errorf("failures.csv: %v, %d lines (want header + 500)", err, strings.Count(string(fails), "\n"))
	}
}

// Under a limit on open files too low for the tables, bench probe --io
// pread is refused before it opens them, exit 3, with the fix; --matrix
// is refused before it extracts its temporary store; --io mmap runs.
func TestBenchProbeRefusesOverTheOpenFileLimit(t *testing.T) {
	tables := realdata.CopyTables(t) // 30 tables
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	saved := lim
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count this process's descriptors: %v", err)
	}
	// room for 24 more open files: not the 30 tables, with mmap two and the slack
	lim.Cur = uint64(len(ents) + 24)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_NOFILE, &saved) })

	for _, args := range [][]string{
		{"bench", "probe", "--tables", tables, "--requests", "20", "--warmup", "5", "--clients", "2", "--cache", "keep"},
		{"bench", "probe", "--tables", tables, "--matrix", "--requests", "20", "--warmup", "5", "--clients", "2", "--cache", "keep"},
	} {
		code, _, stderr := runTB(t, nil, args...)
		if code != cliutil.ExitCannotRun || !strings.Contains(stderr, "30 tables need about") || !strings.Contains(stderr, "ulimit -n 1024") {
			t.Errorf("%v with room for 24 more open files: exit %d, stderr %q", args[3:], code, stderr)
		}
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("the refused --matrix left %d entries in TMPDIR (a temporary store extracted before the refusal?)", len(ents))
	}
	code, stdout, stderr := runTB(t, nil, "bench", "probe", "--tables", tables, "--io", "mmap", "--requests", "20", "--warmup", "5", "--clients", "2", "--cache", "keep")
	if code != 0 {
		t.Errorf("--io mmap under the same limit: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// bench probe --store run by a user who may not read one prefix: the real
// binary as nobody (uid 65534; the test needs root). Exit 3, naming the
// prefix and saying to run as a user who can read the store, not to build
// a store that is there.
func TestBenchProbeStoreUnreadableSaysRunAsAUserWhoCan(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run the binary as another user (nobody) who may not read a root-only prefix")
	}
	tables := realdata.CopyTables(t)
	store := t.TempDir()
	if code, _, stderr := runTB(t, nil, "prefix", "extract", "--tables", tables, "--store", store); code != 0 {
		t.Fatalf("prefix extract: exit %d: %s", code, stderr)
	}
	bin := filepath.Join(t.TempDir(), "tbhost")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, d := range []string{filepath.Dir(tables), tables, filepath.Dir(store), store, filepath.Dir(bin)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hidden := filepath.Join(store, "KQvK.rtbw.prefix")
	if err := os.Chmod(hidden, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "bench", "probe", "--tables", tables, "--store", store, "--requests", "20", "--warmup", "5", "--clients", "2", "--cache", "keep")
	cmd.Dir = t.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != cliutil.ExitCannotRun {
		t.Fatalf("as nobody: %v, want exit 3:\n%s", err, out.String())
	}
	msg := out.String()
	if !strings.Contains(msg, hidden+": permission denied (run as a user that can read the store, or leave out --store)") {
		t.Errorf("as nobody: the error should name %s and say to run as a user who can read it:\n%s", hidden, msg)
	}
	if strings.Contains(msg, "build it with") {
		t.Errorf("as nobody: should not say to build a store that is there:\n%s", msg)
	}
}
