package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A lab test that runs a lab test binary nests work dirs past what a unix
// socket address holds; the QMP socket then goes under /tmp (qemu refused
// to start with "UNIX socket path ... is too long").
func TestQMPSocketDirFitsAUnixSocketPath(t *testing.T) {
	// t.TempDir may itself be too deep (make test runs under a nested
	// TMPDIR): the short case is made directly under /tmp
	short, err := os.MkdirTemp("/tmp", "qd")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(short)
	long := filepath.Join(short, strings.Repeat("d", 120))
	if err := os.MkdirAll(long, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tmp := range []string{short, long} {
		t.Setenv("TMPDIR", tmp)
		dir, err := qmpSocketDir()
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		if p := filepath.Join(dir, qmpSocketName); len(p) > maxUnixPath {
			t.Errorf("TMPDIR of %d bytes: socket path %d bytes, over %d", len(tmp), len(p), maxUnixPath)
		}
		if tmp == short && filepath.Dir(dir) != short {
			t.Errorf("short TMPDIR %s: socket dir %s, want it there", short, dir)
		}
	}
}
