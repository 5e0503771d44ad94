package prefixcmd

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/prefix/prefixtest"
)

// goodTables writes three valid synthetic tables into a new directory.
func goodTables(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, s := range []prefixtest.Spec{{Name: "KRvK.rtbw"}, {Name: "KPvK.rtbz"}, {Name: "KQvKQ.rtbw"}} {
		if _, _, err := prefixtest.WriteTable(dir, s); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// Audit: a dangling notes.txt under the tables made stats and extract fail
// (exit 1) with no table looked at. A link that cannot be a table is
// ignored like any other file that is not a table.
func TestDanglingNonTableLinkIsIgnored(t *testing.T) {
	dir := goodTables(t)
	symlink(t, filepath.Join(dir, "gone"), filepath.Join(dir, "notes.txt"))
	if code, out, errs := runCLI(t, "prefix", "stats", dir); code != 0 || !strings.Contains(out, "from the 3 tables parsed") {
		t.Fatalf("stats: exit %d, want 0 over the 3 tables:\n%s%s", code, out, errs)
	}
	store := t.TempDir()
	if code, out, errs := runCLI(t, "prefix", "extract", "--tables", dir, "--store", store); code != 0 || !strings.Contains(out, "3 written") {
		t.Fatalf("extract: exit %d:\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "prefix", "verify", "--tables", dir, "--store", store); code != 0 {
		t.Fatalf("verify: exit %d:\n%s%s", code, out, errs)
	}
}

// A dangling link with a table's name is that table unreadable: named,
// the others done, exit 1 (as for a truncated table).
func TestDanglingTableLinkIsThatTableFailing(t *testing.T) {
	dir := goodTables(t)
	link := filepath.Join(dir, "KBNvK.rtbw")
	symlink(t, "/unmounted/KBNvK.rtbw", link)
	code, out, errs := runCLI(t, "prefix", "stats", dir)
	if code != cliutil.ExitProblem || !strings.Contains(errs, link+": symlink to a missing target") || !strings.Contains(out, "from the 3 tables parsed") {
		t.Fatalf("stats: exit %d, want 1 naming %s and the 3 good tables counted:\n%s%s", code, link, out, errs)
	}
	store := t.TempDir()
	code, out, errs = runCLI(t, "prefix", "extract", "--tables", dir, "--store", store)
	if code != cliutil.ExitProblem || !strings.Contains(errs, "FAILED KBNvK.rtbw") || !strings.Contains(out, "3 written") || !strings.Contains(errs, "the other prefixes are in place") {
		t.Fatalf("extract: exit %d:\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, "prefix", "verify", "--tables", dir, "--store", store)
	if code != cliutil.ExitProblem || !strings.Contains(out, "BAD-TABLE KBNvK.rtbw") || !strings.Contains(out, "3 ok, 1 findings") {
		t.Fatalf("verify: exit %d:\n%s%s", code, out, errs)
	}
}

// Audit: a regular file given as the table directory exited 1 in the
// prefix commands and 3 in verify-tables. It is a path named on the
// command line that cannot be used: 3, saying it is a file.
func TestTableDirectoryThatIsAFileCannotRun(t *testing.T) {
	file := filepath.Join(goodTables(t), "KRvK.rtbw")
	store := t.TempDir()
	for _, args := range [][]string{
		{"prefix", "stats", file},
		{"prefix", "plan", "--tables", file, "--capacity", "1GiB"},
		{"prefix", "extract", "--tables", file, "--store", store},
		{"prefix", "verify", "--tables", file, "--store", store},
	} {
		code, _, errs := runCLI(t, args...)
		if code != cliutil.ExitCannotRun || !strings.Contains(errs, file+": is a regular file, not a directory") {
			t.Errorf("%v: exit %d, want 3 saying it is a file: %s", args, code, errs)
		}
	}
}

// Audit: verify --store FILE said "not a readable directory (<nil>)".
func TestStoreThatIsAFileCannotRun(t *testing.T) {
	dir := goodTables(t)
	file := filepath.Join(dir, "KRvK.rtbw")
	for _, cmd := range []string{"verify", "extract"} {
		code, _, errs := runCLI(t, "prefix", cmd, "--tables", dir, "--store", file)
		if code != cliutil.ExitCannotRun || !strings.Contains(errs, "store directory "+file+": is a regular file, not a directory") || strings.Contains(errs, "<nil>") {
			t.Errorf("%s --store FILE: exit %d, want 3 saying it is a file: %s", cmd, code, errs)
		}
	}
}

// Audit: with 30 good tables and 4 refused, stats said "from 34 files
// (4,026 per file)", the average taken over 30. Both figures are now the
// tables parsed, and the line says the refused ones are left out.
func TestStatsAverageCountsTheTablesParsed(t *testing.T) {
	dir := goodTables(t)
	for _, n := range []string{"KNvK.rtbw", "KBvK.rtbw"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("<html>502</html>"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runCLI(t, "prefix", "stats", dir)
	if code != cliutil.ExitProblem || !strings.Contains(out, "from the 3 tables parsed (") ||
		!strings.Contains(out, "the 2 refused files are not counted") || !strings.Contains(out, ": 5 files,") {
		t.Fatalf("exit %d:\n%s%s", code, out, errs)
	}
}

// Audit: extract with every table failing ended "0 written ... 4 failed"
// and "the other prefixes are in place": there were none.
func TestExtractEveryTableFailingSaysNothingIsInPlace(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"KRvK.rtbw", "KQvK.rtbw"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("version https://git-lfs.github.com/spec/v1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runCLI(t, "prefix", "extract", "--tables", dir, "--store", t.TempDir())
	if code != cliutil.ExitProblem || strings.Contains(errs, "in place") || !strings.Contains(errs, "2 of 2 tables failed") || !strings.Contains(errs, "nothing was extracted") {
		t.Fatalf("exit %d:\n%s%s", code, out, errs)
	}
}

// A dangling link whose name may be a directory's (7-pieces, a link to an
// unmounted disk) lost whatever tables were under it: stats names it and
// exits 1 over the tables it could read, where skipping it would report a
// smaller set as if complete.
func TestDanglingDirectoryLinkIsReported(t *testing.T) {
	dir := goodTables(t)
	link := filepath.Join(dir, "7-pieces")
	symlink(t, "/unmounted/7-pieces", link)
	code, out, errs := runCLI(t, "prefix", "stats", dir)
	if code != cliutil.ExitProblem || !strings.Contains(errs, link+": symlink to a missing target (a directory of tables?") || !strings.Contains(out, "from the 3 tables parsed") {
		t.Fatalf("stats: exit %d, want 1 naming %s and the 3 tables counted:\n%s%s", code, link, out, errs)
	}
}

// A store directory that cannot be used gets the fix for its own error:
// a missing store is mounted, or created (extract) or built (verify); a
// path through a file says only that; a store the user may not reach says
// to run as one who can. Every one exits 3.
func TestStoreDirectoryErrorsGiveTheirOwnFix(t *testing.T) {
	tables := goodTables(t)
	missing := filepath.Join(t.TempDir(), "not-mounted")
	throughFile := filepath.Join(tables, "KRvK.rtbw", "store")
	for _, tc := range []struct {
		cmd, store string
		want       string
		notWant    []string
	}{
		{"verify", missing, "no such file or directory (mount the store's file system there, or build the store with tbhost prefix extract)", nil},
		{"extract", missing, "no such file or directory (mount the NVMe array there, or create the directory)", []string{"build the store"}},
		{"verify", throughFile, "store directory " + throughFile + ": stat " + throughFile + ": not a directory", []string{"mount", "create the directory", "build the store"}},
		{"extract", throughFile, "not a directory", []string{"mount", "create the directory"}},
	} {
		code, _, errs := runCLI(t, "prefix", tc.cmd, "--tables", tables, "--store", tc.store)
		if code != cliutil.ExitCannotRun || !strings.Contains(errs, tc.want) {
			t.Errorf("%s --store %s: exit %d, want 3 saying %q: %s", tc.cmd, tc.store, code, tc.want, errs)
		}
		for _, nw := range tc.notWant {
			if strings.Contains(errs, nw) {
				t.Errorf("%s --store %s: %q should not say %q", tc.cmd, tc.store, errs, nw)
			}
		}
	}
}

// The same as a user who may not reach the store: the real binary, run as
// nobody (uid 65534) when the test runs as root, against a store under a
// directory only root may enter.
func TestStoreDirectoryRefusedSaysRunAsAUserWhoCan(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run the binary as another user (nobody) who may not enter a root-only directory")
	}
	bin := buildTbhost(t)
	tables := goodTables(t)
	for _, d := range []string{filepath.Dir(tables), tables} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	private := t.TempDir()
	if err := os.Chmod(private, 0o700); err != nil { // t.TempDir's own directories are 0777 less the umask
		t.Fatal(err)
	}
	store := filepath.Join(private, "store")
	if err := os.Mkdir(store, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"verify", "extract"} {
		code, msg := runAsNobody(t, bin, "prefix", c, "--tables", tables, "--store", store)
		if code != cliutil.ExitCannotRun {
			t.Fatalf("%s as nobody: exit %d, want 3: %s", c, code, msg)
		}
		if !strings.Contains(msg, "store directory "+store) || !strings.Contains(msg, "permission denied (run as a user that can reach it, or give another --store)") {
			t.Errorf("%s as nobody: %q", c, msg)
		}
		if strings.Contains(msg, "create the directory") || strings.Contains(msg, "build the store") {
			t.Errorf("%s as nobody: %q should not say to create or build a store that is there", c, msg)
		}
	}
	// a store nobody may read but not write: verify runs, extract is
	// refused at its lock, saying who may write there
	readOnly := filepath.Join(filepath.Dir(tables), "store-ro")
	if err := os.Mkdir(readOnly, 0o755); err != nil {
		t.Fatal(err)
	}
	code, out := runAsNobody(t, bin, "prefix", "extract", "--tables", tables, "--store", readOnly)
	if code != cliutil.ExitCannotRun ||
		!strings.Contains(out, "lock store: open "+filepath.Join(readOnly, ".tbhost-prefix.lock")+": permission denied (extract writes into the store: run it as the store's owner, or as root)") {
		t.Errorf("extract as nobody into a store it cannot write: exit %d\n%s", code, out)
	}
	if ents, _ := os.ReadDir(readOnly); len(ents) != 0 {
		t.Errorf("the refused extract left %d entries in the store", len(ents))
	}
}

// A store on a file system mounted read-only (a tmpfs mounted ro; root
// only): extract is refused at its lock, exit 3, saying to remount it.
func TestExtractIntoAReadOnlyStoreSaysRemount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP: only root can mount the read-only tmpfs that stands in for the store")
	}
	store := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "ro,size=1m", "tbhost-ro-store-test", store).CombinedOutput(); err != nil {
		t.Skipf("SKIP: cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", store).Run() })
	code, _, errs := runCLI(t, "prefix", "extract", "--tables", goodTables(t), "--store", store)
	if code != cliutil.ExitCannotRun || !strings.Contains(errs, "read-only file system (the store's file system is mounted read-only: remount it read-write for extract)") {
		t.Errorf("extract into a read-only store: exit %d, want 3 saying to remount it: %s", code, errs)
	}
}

// runAsNobody runs bin with args as uid and gid 65534 (the caller is
// root) and returns its exit code and its output, stdout and stderr.
func runAsNobody(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	t.Fatalf("run %s as nobody: %v", bin, err)
	return -1, ""
}
