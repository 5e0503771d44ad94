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

func TestVerifyTablesCheckingNothingFails(t *testing.T) {
	_, list := tablesWithList(t, 3)
	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, "README"), []byte("not a table"), 0o644)
	code, out, errs := runCLI(t, nil, "integrity", "verify-tables", "-c", list, empty)
	if code != cliutil.ExitProblem || !strings.Contains(out, "NOTHING CHECKED") {
		t.Fatalf("0 files checked against a 3-file list: exit %d, want 1 with NOTHING CHECKED:\n%s%s", code, out, errs)
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
