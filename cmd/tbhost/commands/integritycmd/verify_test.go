package integritycmd

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/integrity"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/urfave/cli/v2"
)

// runCLI runs `tbhost ...` in-process with only the integrity group installed.
// onTerminal is an env as on an interactive terminal.
func onTerminal() *cliutil.Env {
	return &cliutil.Env{Runner: execx.NewRecorded(), IsTerminal: func() bool { return true }}
}

func runCLI(t *testing.T, env *cliutil.Env, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if env == nil {
		env = &cliutil.Env{Runner: execx.NewRecorded()}
	}
	env.Stdin, env.Stdout, env.Stderr = strings.NewReader(""), &out, &errb
	code := cliutil.Run(cliutil.NewApp(env, []*cli.Command{Command()}), env, append([]string{"tbhost"}, args...))
	return code, out.String(), errb.String()
}

// tablesWithList writes n files and their sha256 list; it returns the
// directory and the list.
func tablesWithList(t *testing.T, n int) (string, string) {
	t.Helper()
	dir := t.TempDir()
	var list strings.Builder
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("K%dvK.rtbw", i)
		body := []byte(strings.Repeat(name, 100+i))
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(body)
		fmt.Fprintf(&list, "%s  %s\n", hex.EncodeToString(sum[:]), name)
	}
	lp := filepath.Join(t.TempDir(), "sha256")
	if err := os.WriteFile(lp, []byte(list.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, lp
}

// Issue 13: `verify-tables -c SUMS link/` on a symlinked tables directory
// verified 0 files and exited 0.
func TestVerifyTablesThroughSymlinkedDirectoryVerifiesEveryFile(t *testing.T) {
	dir, list := tablesWithList(t, 5)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{link, link + "/"} {
		// on a terminal: a clean run is silent without one (cron-quiet)
		code, out, errs := runCLI(t, onTerminal(), "integrity", "verify-tables", "-c", list, arg)
		if code != 0 || !strings.Contains(out, "5 ok, 0 mismatching") {
			t.Fatalf("%s: exit %d, want 0 with 5 ok:\n%s%s", arg, code, out, errs)
		}
	}
	// a symlinked subdirectory too
	root := t.TempDir()
	if err := os.Symlink(dir, filepath.Join(root, "sub")); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, onTerminal(), "integrity", "verify-tables", "-c", list, root); code != 0 || !strings.Contains(out, "5 ok") {
		t.Fatalf("symlinked subdirectory: exit %d:\n%s%s", code, out, errs)
	}
}

// A run that checks nothing fails. With table files there but none in the
// list (the wrong list, or the wrong directory of tables), the check says
// so: exit 1, NOTHING CHECKED.
func TestVerifyTablesCheckingNothingFails(t *testing.T) {
	_, list := tablesWithList(t, 3)
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "KQRvKQR.rtbw"), []byte("a table the list does not name"), 0o644)
	code, out, errs := runCLI(t, nil, "integrity", "verify-tables", "-c", list, other)
	if code != cliutil.ExitProblem || !strings.Contains(out, "NOTHING CHECKED") {
		t.Fatalf("0 files checked against a 3-file list: exit %d, want 1 with NOTHING CHECKED:\n%s%s", code, out, errs)
	}
}

// Audit: an empty directory gave exit 1 here and 3 in the prefix
// commands. No table file under the directories at all (empty, or only a
// README: an unmounted mount point) is nothing to work on: 3, as in prefix.
func TestVerifyTablesNoTableFileCannotRun(t *testing.T) {
	_, list := tablesWithList(t, 3)
	empty := t.TempDir()
	readme := t.TempDir()
	os.WriteFile(filepath.Join(readme, "README"), []byte("not a table"), 0o644)
	for _, dir := range []string{empty, readme} {
		code, out, errs := runCLI(t, nil, "integrity", "verify-tables", "-c", list, dir)
		if code != cliutil.ExitCannotRun || !strings.Contains(errs, "no table file under "+dir) {
			t.Errorf("%s: exit %d, want 3 saying there is no table file:\n%s%s", dir, code, out, errs)
		}
	}
}

// Audit: with a one-line list, 29 of 30 tables went unchecked and, without
// a terminal (cron), nothing was printed and the exit was 0. A table in
// no list is a finding: printed in every mode, exit 1.
func TestVerifyTablesUnlistedTablesAreFindings(t *testing.T) {
	dir, list := tablesWithList(t, 5)
	b, _ := os.ReadFile(list)
	one := filepath.Join(t.TempDir(), "sha256")
	os.WriteFile(one, []byte(strings.SplitN(string(b), "\n", 2)[0]+"\n"), 0o644)
	for _, args := range [][]string{{"-c", one, dir}, {"-c", one, "--quiet", dir}} {
		code, out, errs := runCLI(t, nil, append([]string{"integrity", "verify-tables"}, args...)...)
		if code != cliutil.ExitProblem || strings.Count(out, "UNLISTED") != 4 || !strings.Contains(out, "NOT CHECKED: 4 table files") {
			t.Errorf("%v, no terminal: exit %d, want 1 naming the 4 unlisted tables:\n%s%s", args, code, out, errs)
		}
	}
	code, out, _ := runCLI(t, nil, "integrity", "verify-tables", "--json", "-c", one, dir)
	if code != cliutil.ExitProblem || !strings.Contains(out, `"unlisted_tables": 4`) || !strings.Contains(out, "4 tables in no list") {
		t.Errorf("--json: exit %d:\n%s", code, out)
	}
	// A file that is not a table (a README, the list itself) in no list
	// is named on a terminal but is no problem: the check stays clean.
	os.WriteFile(filepath.Join(dir, "README"), []byte("not a table"), 0o644)
	if code, out, errs := runCLI(t, nil, "integrity", "verify-tables", "-c", list, dir); code != 0 || out != "" || errs != "" {
		t.Errorf("README next to listed tables, no terminal: exit %d, want 0 and silence:\n%s%s", code, out, errs)
	}
	if code, out, _ := runCLI(t, onTerminal(), "integrity", "verify-tables", "-c", list, dir); code != 0 || !strings.Contains(out, "README (not a table file, in no list") {
		t.Errorf("README on a terminal: exit %d:\n%s", code, out)
	}
}

// Audit: one dangling symlink anywhere under the tables (even notes.txt)
// made verify-tables exit 3 with no table checked. A link that cannot be a
// table is ignored; one with a table's name is that table unreadable.
func TestVerifyTablesDanglingSymlinks(t *testing.T) {
	dir, list := tablesWithList(t, 3)
	if err := os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, onTerminal(), "integrity", "verify-tables", "-c", list, dir); code != 0 || !strings.Contains(out, "3 ok, 0 mismatching, 0 unreadable, 0 not in the list") {
		t.Fatalf("dangling notes.txt: exit %d, want 0 with 3 ok:\n%s%s", code, out, errs)
	}
	// K1vK.rtbw, listed, replaced by a link to a missing disk
	table := filepath.Join(dir, "K1vK.rtbw")
	os.Remove(table)
	if err := os.Symlink("/unmounted/K1vK.rtbw", table); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, nil, "integrity", "verify-tables", "-c", list, dir)
	if code != cliutil.ExitProblem || !strings.Contains(out, "UNREADABLE "+table) || !strings.Contains(out, "symlink to a missing target") ||
		!strings.Contains(out, "2 ok, 0 mismatching, 1 unreadable") {
		t.Fatalf("dangling listed table: exit %d, want 1 naming it unreadable, the others checked:\n%s%s", code, out, errs)
	}
}

// Audit: messages about a bad --checksums path or line.
func TestVerifyTablesListMessages(t *testing.T) {
	dir, list := tablesWithList(t, 2)
	listDir := filepath.Dir(list)
	code, _, errs := runCLI(t, nil, "integrity", "verify-tables", "-c", listDir, dir)
	want := "checksum list " + listDir + ": is a directory, not a file (give a file such as " + list + ")"
	if code != cliutil.ExitCannotRun || !strings.Contains(errs, want) || strings.Contains(errs, ":1:") {
		t.Errorf("-c DIR: exit %d, want 3 with %q: %s", code, want, errs)
	}
	b, _ := os.ReadFile(list)
	long := filepath.Join(t.TempDir(), "sha256")
	os.WriteFile(long, append(b, []byte(strings.Repeat("f", 100000)+"\n")...), 0o644)
	code, _, errs = runCLI(t, nil, "integrity", "verify-tables", "-c", long, dir)
	if code != cliutil.ExitProblem || !strings.Contains(errs, long+":3: line too long: over 65536 bytes") ||
		!strings.Contains(errs, `a checksum list line is "<hex digest>  <file name>"`) || strings.Contains(errs, "bufio") {
		t.Errorf("a line over the limit: exit %d: %s", code, errs)
	}
	code, _, errs = runCLI(t, nil, "integrity", "verify-tables", "--no-hash", "--sizes", listDir, dir)
	if code != cliutil.ExitCannotRun || !strings.Contains(errs, "sizes list "+listDir+": is a directory, not a file") {
		t.Errorf("--sizes DIR: exit %d: %s", code, errs)
	}
}

// Audit: a regular file given as the table directory: 3, saying so (as
// in the prefix commands).
func TestVerifyTablesDirectoryThatIsAFile(t *testing.T) {
	dir, list := tablesWithList(t, 1)
	file := filepath.Join(dir, "K0vK.rtbw")
	code, _, errs := runCLI(t, nil, "integrity", "verify-tables", "-c", list, file)
	if code != cliutil.ExitCannotRun || !strings.Contains(errs, file+": is a regular file, not a directory") {
		t.Errorf("exit %d, want 3: %s", code, errs)
	}
}

func TestVerifyTablesSymlinkLoopIsRefused(t *testing.T) {
	dir, list := tablesWithList(t, 2)
	if err := os.Symlink(".", filepath.Join(dir, "loop")); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, nil, "integrity", "verify-tables", "-c", list, dir)
	if code != cliutil.ExitCannotRun || !strings.Contains(errs, "loop") {
		t.Fatalf("symlink loop: exit %d, want 3 naming the loop: %s", code, errs)
	}
}

// Issue 12 defect 6: --jobs 1000000 took 4.5 GB RSS.
func TestVerifyTablesJobsAreBounded(t *testing.T) {
	dir, list := tablesWithList(t, 1)
	for _, jobs := range []string{"1000000", fmt.Sprint(integrity.MaxJobs + 1), "0", "-3"} {
		code, _, errs := runCLI(t, nil, "integrity", "verify-tables", "-c", list, "--jobs", jobs, dir)
		if code != cliutil.ExitUsage || !strings.Contains(errs, "--jobs") {
			t.Errorf("--jobs %s: exit %d, want 2: %s", jobs, code, errs)
		}
	}
	if code, _, errs := runCLI(t, nil, "integrity", "verify-tables", "-c", list, "--jobs", fmt.Sprint(integrity.MaxJobs), dir); code != 0 {
		t.Errorf("--jobs %d (the maximum): exit %d: %s", integrity.MaxJobs, code, errs)
	}
	if code, out, _ := runCLI(t, nil, "integrity", "verify-tables", "--help"); code != 0 || !strings.Contains(out, fmt.Sprintf("1-%d", integrity.MaxJobs)) {
		t.Errorf("--help does not state the --jobs bound:\n%s", out)
	}
}

func TestVerifyTablesDuplicateListEntries(t *testing.T) {
	dir, list := tablesWithList(t, 2)
	b, _ := os.ReadFile(list)
	first := strings.SplitN(string(b), "\n", 2)[0]
	same := filepath.Join(t.TempDir(), "sha256")
	os.WriteFile(same, append(b, []byte(first+"\n")...), 0o644)
	code, _, errs := runCLI(t, nil, "integrity", "verify-tables", "-c", same, dir)
	if code != 0 || !strings.Contains(errs, "warning:") || !strings.Contains(errs, "K0vK.rtbw is listed twice") {
		t.Fatalf("an agreeing duplicate: exit %d, want 0 with a warning: %s", code, errs)
	}
	differ := filepath.Join(t.TempDir(), "sha256")
	os.WriteFile(differ, append(b, []byte(strings.Repeat("0", 64)+"  K0vK.rtbw\n")...), 0o644)
	code, _, errs = runCLI(t, nil, "integrity", "verify-tables", "-c", differ, dir)
	if code == 0 || !strings.Contains(errs, "K0vK.rtbw on line 1") || !strings.Contains(errs, "line 3") {
		t.Fatalf("conflicting duplicate: exit %d, want a refusal naming both lines: %s", code, errs)
	}
}
