// Package stracetest runs a helper test of the calling test binary under
// strace and returns the system calls it made, for tests that count what a
// code path asks of the kernel (the replay's connects, extract's opens).
package stracetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Trace runs the test named helper of this test binary (it must read its
// input from env, and skip without it) under `strace -f` restricted to
// calls (strace's -e trace= list) and returns the trace. It skips t where
// strace is not installed or cannot trace, and fails t when the helper
// fails or did not run.
func Trace(t testing.TB, calls, helper string, env ...string) []byte {
	t.Helper()
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace not installed (Debian package strace; .ci/install-deps installs it); skipping the system-call check")
	}
	trace := filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command(strace, "-f", "-qq", "-e", "trace="+calls, "-o", trace,
		os.Args[0], "-test.run=^"+helper+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "ptrace") {
			t.Skipf("strace cannot trace here: %s", out)
		}
		t.Fatalf("helper %s under strace: %v\n%s", helper, err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+helper+" ") {
		t.Fatalf("helper %s did not run (skipped or filtered out):\n%s", helper, out)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
