package prefix

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/tbhost/tbhost/internal/stracetest"
	"github.com/tbhost/tbhost/prefix/prefixtest"
)

const syscallsHelperEnv = "TBHOST_PREFIX_SYSCALLS_HELPER_TABLES"

// TestHelperExtractAndVerify is not a test: run by
// TestExtractSystemCallsDoNotGrowWithWaste under strace, it extracts the
// tables of the directory named in its environment (by a relative path)
// into a new store beside it, checks the manifest names each table by its
// absolute path, and verifies the store with --full.
func TestHelperExtractAndVerify(t *testing.T) {
	tables := os.Getenv(syscallsHelperEnv)
	if tables == "" {
		t.Skip("helper process for TestExtractSystemCallsDoNotGrowWithWaste")
	}
	ctx := context.Background()
	t.Chdir(filepath.Dir(tables)) // relative paths: the manifest's sources need the working directory
	srcs, err := FindTables([]string{"tables"})
	if err != nil {
		t.Fatal(err)
	}
	store := "store" // made by the test
	rep, err := Extract(ctx, ParseAll(ctx, srcs, 4), ExtractOptions{Store: store, Jobs: 4})
	if err != nil || rep.Written != len(srcs) {
		t.Fatalf("extract wrote %d of %d: %v %v", rep.Written, len(srcs), err, rep.Failed)
	}
	man, err := LoadManifest(store)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range srcs {
		if want := filepath.Join(tables, filepath.Base(s.Path)); man[s.Name].Source != want {
			t.Errorf("manifest source of %s: %q, want %q", s.Name, man[s.Name].Source, want)
		}
	}
	vr, err := Verify(ctx, srcs, VerifyOptions{Store: store, Full: true, Jobs: 4})
	if err != nil || len(vr.Findings) > 0 {
		t.Fatalf("verify --full: %v %+v", err, vr.Findings)
	}
}

// Issue 16: extract makes no system call per table that does nothing. Each
// os.Open on Linux tried to put the file into the runtime's poller
// (epoll_ctl, refused for a regular file, with the descriptor switched to
// non-blocking and back around it), each table's copy read its device's
// read_ahead_kb from sysfs again, and each manifest line looked up the
// working directory again. Where a system call costs about a microsecond
// (the benchmark host), that was 40 % of extract's calls, and on 200 small
// prefixes extract/cp fell from 0.94-1.09 to 0.70-0.90 warm without them.
// Watched with strace (skips without it) over 40 tables, extract and
// verify --full: epoll_ctl calls stay a few a run (not a table), read_ahead_kb
// is read once a device, the working directory (stat of ".") once a run.
func TestExtractSystemCallsDoNotGrowWithWaste(t *testing.T) {
	const n = 40
	dir := t.TempDir()
	tables := filepath.Join(dir, "tables")
	for _, d := range []string{tables, filepath.Join(dir, "store")} { // the helper's store: made here, outside the trace
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range coldSpecs(n) {
		if _, _, err := prefixtest.WriteTable(tables, s); err != nil {
			t.Fatal(err)
		}
	}
	calls := stracetest.Trace(t, "epoll_ctl,openat,newfstatat,fsync,fdatasync,syncfs", "TestHelperExtractAndVerify", syscallsHelperEnv+"="+tables)
	count := func(re string) int { return len(regexp.MustCompile(re).FindAll(calls, -1)) }
	if opens := count(`openat\([^\n]*\.rtb[wz]"`); opens < 3*n {
		t.Fatalf("%d opens of the %d tables traced, want at least %d (parse, copy, verify): is the trace whole?\n%s", opens, n, 3*n, calls)
	}
	// a dozen a run, not a table: the runtime's own event descriptor, the
	// lock, the manifest, the store directory, /proc/self/io (12 here)
	if got := count(`\bepoll_ctl\(`); got > n/2 {
		t.Errorf("%d epoll_ctl calls for %d tables, want at most %d: table or prefix files are opened through os.Open again (use openFile)", got, n, n/2)
	}
	if got := count(`read_ahead_kb"`); got > 2 {
		t.Errorf("read_ahead_kb opened %d times for %d tables on one device, want at most 2 (a partition's and its disk's)", got, n)
	}
	if got := count(`newfstatat\(AT_FDCWD, "\."`); got > 1 {
		t.Errorf("the working directory looked up %d times for %d tables, want at most once", got, n)
	}
	// the prefixes made durable a batch at a time (finishBatches): syncfs,
	// not an fsync each; the fsyncs left are the run's own (the store
	// directory, the manifest). Before Linux 5.8 extract fsyncs each.
	if !syncfsTrusted() {
		return
	}
	if got := count(`\bsyncfs\(`); got < 1 || got > n {
		t.Errorf("%d syncfs calls for %d tables, want 1 to %d (one a batch)", got, n, n)
	}
	if got := count(`\bf(data)?sync\(`); got > n/4 {
		t.Errorf("%d fsync calls for %d tables, want at most %d: the prefixes are fsynced one by one", got, n, n/4)
	}
}
