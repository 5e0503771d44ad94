package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/execx"
)

// runTB runs tbhost in-process with recorded commands and returns the exit
// code, stdout and stderr.
func runTB(t *testing.T, rec execx.Runner, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if rec == nil {
		rec = execx.NewRecorded()
	}
	env := &cliutil.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Runner: rec}
	code := run(append([]string{"tbhost"}, args...), env)
	return code, out.String(), errb.String()
}

// runTBTerminal is runTB as if on an interactive terminal (stdin and stderr).
func runTBTerminal(t *testing.T, rec execx.Runner, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if rec == nil {
		rec = execx.NewRecorded()
	}
	env := &cliutil.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Runner: rec, IsTerminal: func() bool { return true }}
	code := run(append([]string{"tbhost"}, args...), env)
	return code, out.String(), errb.String()
}

func TestHelpExitsZero(t *testing.T) {
	code, out, _ := runTB(t, nil, "--help")
	if code != 0 || !strings.Contains(out, "EXIT CODES") {
		t.Fatalf("code %d, out %q", code, out)
	}
}

func TestUnknownCommandIsUsageError(t *testing.T) {
	code, _, stderr := runTB(t, nil, "no-such-command")
	if code != cliutil.ExitUsage {
		t.Fatalf("exit %d, want %d (stderr %q)", code, cliutil.ExitUsage, stderr)
	}
	if !strings.Contains(stderr, "no-such-command") {
		t.Errorf("stderr %q must name the command", stderr)
	}
}

func TestUnknownFlagIsUsageError(t *testing.T) {
	code, _, _ := runTB(t, nil, "--no-such-flag")
	if code != cliutil.ExitUsage {
		t.Fatalf("exit %d, want %d", code, cliutil.ExitUsage)
	}
}
