package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/realdata"
)

// runPiped runs tbhost with stdin, stdout and stderr on real pipes, as cron
// runs it (no terminal anywhere), and returns what came out of the pipes.
func runPiped(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	inW.Close()
	defer inR.Close()
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	read := func(r *os.File) <-chan string {
		ch := make(chan string, 1)
		go func() { b, _ := io.ReadAll(r); r.Close(); ch <- string(b) }()
		return ch
	}
	outC, errC := read(outR), read(errR)
	env := &cliutil.Env{Stdin: inR, Stdout: outW, Stderr: errW, Runner: execx.NewRecorded(),
		IsTerminal: cliutil.TerminalStreams(inR, errW)}
	code := run(append([]string{"tbhost"}, args...), env)
	outW.Close()
	errW.Close()
	return code, <-outC, <-errC
}

// Issue 18, cron-quiet: the checks cron runs print nothing when all is well
// without a terminal ("verify store ...: 30 ok" made cron mail every night),
// or with --quiet on one; what they find is always printed.
func TestCronQuietPrefixVerify(t *testing.T) {
	tables := realdata.CopyTables(t)
	store := t.TempDir()
	if code, _, stderr := runTB(t, nil, "prefix", "extract", "--tables", tables, "--store", store); code != 0 {
		t.Fatalf("extract: exit %d %s", code, stderr)
	}
	args := []string{"prefix", "verify", "--tables", tables, "--store", store}
	if code, out, stderr := runPiped(t, args...); code != 0 || out != "" || stderr != "" {
		t.Errorf("clean, piped: exit %d, stdout %q, stderr %q; want silence", code, out, stderr)
	}
	if code, out, stderr := runTBTerminal(t, nil, append(args, "--quiet")...); code != 0 || out != "" || stderr != "" {
		t.Errorf("clean, --quiet on a terminal: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if code, out, _ := runTBTerminal(t, nil, args...); code != 0 || !strings.Contains(out, "30 ok, 0 findings") {
		t.Errorf("clean on a terminal: exit %d, stdout %q; want the summary", code, out)
	}
	if code, out, _ := runPiped(t, append(args, "--json")...); code != 0 || !json.Valid([]byte(out)) || !strings.Contains(out, `"ok": 30`) {
		t.Errorf("--json piped: exit %d, %q; want the document", code, out)
	}
	// a finding is printed, piped and with --quiet
	p := filepath.Join(store, "KQvK.rtbw.prefix")
	b, _ := os.ReadFile(p)
	b[len(b)-1] ^= 0xff
	os.WriteFile(p, b, 0o644)
	for _, a := range [][]string{args, append(args, "--quiet")} {
		if code, out, _ := runPiped(t, a...); code != 1 || !strings.Contains(out, "KQvK.rtbw") || !strings.Contains(out, "1 findings") {
			t.Errorf("%v with a corrupt prefix: exit %d, stdout %q", a, code, out)
		}
	}
}

func TestCronQuietIntegrityStatus(t *testing.T) {
	clean := []string{"--root", captured(t, "raid5-integrity-stripes5"), "integrity", "status"}
	if code, out, stderr := runPiped(t, clean...); code != 0 || out != "" || stderr != "" {
		t.Errorf("clean, piped: exit %d, stdout %q, stderr %q; want silence", code, out, stderr)
	}
	if code, out, stderr := runTBTerminal(t, nil, append(clean, "--quiet")...); code != 0 || out != "" || stderr != "" {
		t.Errorf("clean, --quiet: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	bad := []string{"--root", captured(t, "raid5-member-dropped"), "integrity", "status", "--quiet"}
	if code, out, _ := runPiped(t, bad...); code != 1 || !strings.Contains(out, "PROBLEM vg-hdd/tables") {
		t.Errorf("problem, piped --quiet: exit %d, stdout %q", code, out)
	}
}

func TestCronQuietIntegrityVerifyTables(t *testing.T) {
	syzygy := realdata.Dir(t)
	dir := t.TempDir()
	b, _ := os.ReadFile(filepath.Join(syzygy, "tables/KQvKQ.rtbw"))
	os.WriteFile(filepath.Join(dir, "KQvKQ.rtbw"), b, 0o644)
	args := []string{"integrity", "verify-tables", "-c", filepath.Join(syzygy, "checksums/syzygy-tables.info/md5"), dir}
	if code, out, stderr := runPiped(t, args...); code != 0 || out != "" || stderr != "" {
		t.Errorf("clean, piped: exit %d, stdout %q, stderr %q; want silence", code, out, stderr)
	}
	if code, out, stderr := runTBTerminal(t, nil, append(args, "--quiet")...); code != 0 || out != "" || stderr != "" {
		t.Errorf("clean, --quiet: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if code, out, stderr := runTBTerminal(t, nil, args...); code != 0 || !strings.Contains(out, "1 ok") || !strings.Contains(stderr, "verify-tables: ") {
		t.Errorf("clean on a terminal: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	// --all asks for every file: printed without a terminal too (a report
	// redirected to a file), unless --quiet is given as well
	if code, out, _ := runPiped(t, append(args, "--all")...); code != 0 || !strings.Contains(out, "KQvKQ.rtbw") || !strings.Contains(out, "1 ok") {
		t.Errorf("clean, piped --all: exit %d, stdout %q; want every file's line", code, out)
	}
	if code, out, stderr := runPiped(t, append(args, "--all", "--quiet")...); code != 0 || out != "" || stderr != "" {
		t.Errorf("clean, piped --all --quiet: exit %d, stdout %q, stderr %q; want silence", code, out, stderr)
	}
	b[100] ^= 0xff
	os.WriteFile(filepath.Join(dir, "KQvKQ.rtbw"), b, 0o644)
	if code, out, _ := runPiped(t, append(args, "--quiet")...); code != 1 || !strings.Contains(out, "KQvKQ.rtbw") {
		t.Errorf("mismatch, piped --quiet: exit %d, stdout %q", code, out)
	}
}

// monitor check keeps its one status line without a terminal (Nagios reads
// it); --quiet is what makes it silent when OK (cron); --json always prints.
func TestCronQuietMonitorCheck(t *testing.T) {
	args := []string{"--root", derived(t, "balanced"), "monitor", "check", "vg-hdd/tables"}
	if code, out, _ := runPiped(t, args...); code != 0 || !strings.HasPrefix(out, "OK: vg-hdd/tables balanced") {
		t.Errorf("piped, no --quiet: exit %d, stdout %q; Nagios needs the line", code, out)
	}
	if code, out, stderr := runPiped(t, append(args, "--quiet")...); code != 0 || out != "" || stderr != "" {
		t.Errorf("--quiet OK: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if code, out, _ := runPiped(t, append(args, "--quiet", "--json")...); code != 0 || !strings.Contains(out, `"status": "OK"`) {
		t.Errorf("--quiet --json OK: exit %d, stdout %q; want the document", code, out)
	}
	bad := []string{"--root", derived(t, "misbuilt"), "monitor", "check", "--quiet"}
	if code, out, _ := runPiped(t, bad...); code != 2 || !strings.HasPrefix(out, "CRITICAL") {
		t.Errorf("--quiet CRITICAL: exit %d, stdout %q", code, out)
	}
}
