// Package stracetest runs a helper test of the calling test binary under
// strace and returns the system calls it made, for tests that count what a
// code path asks of the kernel (the replay's connects, extract's opens).
package stracetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	return trace(t, nil, calls, helper, env)
}

// TraceWithPaths is Trace with strace's -y: every descriptor in the trace
// is followed by its path, "fsync(5</dir/file>)", so that a test need not
// follow descriptors through threads and child processes, which strace -f
// names by thread id.
func TraceWithPaths(t testing.TB, calls, helper string, env ...string) []byte {
	t.Helper()
	return trace(t, []string{"-y"}, calls, helper, env)
}

func trace(t testing.TB, flags []string, calls, helper string, env []string) []byte {
	t.Helper()
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace not installed (Debian package strace; .ci/install-deps installs it); skipping the system-call check")
	}
	trace := filepath.Join(t.TempDir(), "trace")
	args := append(append([]string{"-f", "-qq"}, flags...), "-e", "trace="+calls, "-o", trace,
		os.Args[0], "-test.run=^"+helper+"$", "-test.count=1", "-test.v")
	cmd := exec.Command(strace, args...)
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

// WriteCalls are the system calls WriteSteps needs in a trace.
const WriteCalls = "openat,fsync,fdatasync,rename,renameat,renameat2"

// WriteSteps follows a trace of WriteCalls through each write of path by
// a temporary file in path's directory whose name matches the regular
// expression temp, and returns its steps in order: "create", "fsync file"
// (an fsync or fdatasync of the temporary), "rename" (onto path) and
// "fsync directory" (of path's directory, after a create). A crash-safe
// write is exactly create, fsync file, rename, fsync directory.
func WriteSteps(trace []byte, path, temp string) []string {
	q := regexp.QuoteMeta
	dir := filepath.Dir(path)
	var (
		openTmp = regexp.MustCompile(`openat\(AT_FDCWD, "` + q(dir) + `/` + temp + `", [^\n]*O_CREAT[^\n]*\)\s+= (\d+)`)
		openDir = regexp.MustCompile(`openat\(AT_FDCWD, "` + q(dir) + `/?", [^\n]*\)\s+= (\d+)`)
		fsync   = regexp.MustCompile(`f(?:data)?sync\((\d+)\)\s+= 0`)
		rename  = regexp.MustCompile(`rename(?:at2?)?\([^\n]*"` + q(dir) + `/` + temp + `"[^\n]*"` + q(path) + `"[^\n]*\)\s+= 0`)
	)
	var steps []string
	tmpFD, dirFD := "", "" // descriptors are reused: follow the trace in order
	for _, l := range strings.Split(string(trace), "\n") {
		switch {
		case openTmp.MatchString(l):
			tmpFD = openTmp.FindStringSubmatch(l)[1]
			steps = append(steps, "create")
		case openDir.MatchString(l):
			if len(steps) > 0 {
				dirFD = openDir.FindStringSubmatch(l)[1]
			}
		case fsync.MatchString(l):
			switch fd := fsync.FindStringSubmatch(l)[1]; {
			case fd == tmpFD:
				steps = append(steps, "fsync file")
			case fd == dirFD:
				steps = append(steps, "fsync directory")
				dirFD = ""
			}
		case rename.MatchString(l):
			steps = append(steps, "rename")
			tmpFD = ""
		}
	}
	return steps
}
