package prefixcmd

import (
	"os"
	"path/filepath"
	"strings"
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
