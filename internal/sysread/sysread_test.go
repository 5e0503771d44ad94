package sysread

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// withTimeout fails the test instead of hanging when f blocks (a FIFO).
func withTimeout(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("read blocked for 5 s")
	}
}

func TestFileRefusesDeviceFIFODirectory(t *testing.T) {
	dir := t.TempDir()
	zero := filepath.Join(dir, "diskstats")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "degraded")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{zero, fifo, dir} {
		withTimeout(t, func() {
			_, err := File(p, 1<<20)
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), p) {
				t.Errorf("%s: %v, want ErrNotRegular naming the file", p, err)
			}
		})
	}
	withTimeout(t, func() {
		if _, err := Dir(fifo, 10); err == nil || !strings.Contains(err.Error(), fifo) {
			t.Errorf("Dir of a FIFO: %v", err)
		}
	})
}

func TestFileBoundsSize(t *testing.T) {
	p := filepath.Join(t.TempDir(), "size")
	if err := os.WriteFile(p, []byte(strings.Repeat("9", 101)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := File(p, 100); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), p) {
		t.Errorf("101 bytes with limit 100: %v", err)
	}
	b, err := File(p, 101)
	if err != nil || len(b) != 101 {
		t.Errorf("101 bytes with limit 101: %d, %v", len(b), err)
	}
	// /proc files say size 0 and stream: the limit holds while reading
	if b, err := File("/proc/self/status", 1<<20); err != nil || len(b) == 0 {
		t.Errorf("/proc/self/status: %d bytes, %v", len(b), err)
	}
	if _, err := File("/proc/self/status", 10); !errors.Is(err, ErrTooLarge) {
		t.Errorf("/proc/self/status limited to 10 bytes: %v", err)
	}
}

func TestOptionalAttr(t *testing.T) {
	dir := t.TempDir()
	if s, err := OptionalAttr(filepath.Join(dir, "missing")); s != "" || err != nil {
		t.Errorf("missing: %q %v", s, err)
	}
	if _, err := Attr(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Attr of a missing file: %v", err)
	}
	p := filepath.Join(dir, "level")
	os.WriteFile(p, []byte("raid5\n"), 0o644)
	if s, err := OptionalAttr(p); s != "raid5" || err != nil {
		t.Errorf("%q %v", s, err)
	}
}

func TestParseIntRange(t *testing.T) {
	const path = "/sys/block/md0/md/degraded"
	for _, c := range []struct {
		in    string
		want  int64
		fails bool
	}{
		{"3", 3, false}, {" 0\n", 0, false}, {"6", 6, false},
		{"7", 0, true}, {"2000000000", 0, true}, {"-1", 0, true},
		{"2e9", 0, true}, {"", 0, true}, {"99999999999999999999", 0, true},
	} {
		v, err := ParseInt(path, c.in, 0, 6)
		if c.fails {
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("%q: %d, %v; want an error naming %s", c.in, v, err, path)
			}
			continue
		}
		if err != nil || v != c.want {
			t.Errorf("%q: %d, %v; want %d", c.in, v, err, c.want)
		}
	}
	if _, err := ParseInt(path, "7", 0, 6); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("7 of at most 6: %v, want ErrOutOfRange", err)
	}
}

func TestDirBoundsAndSorts(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"sdc", "sda", "sdb"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o644)
	}
	es, err := Dir(dir, 3)
	if err != nil || len(es) != 3 || es[0].Name() != "sda" || es[2].Name() != "sdc" {
		t.Fatalf("%v %v", es, err)
	}
	if _, err := Dir(dir, 2); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("3 entries, limit 2: %v", err)
	}
}

// ExistingDir: the one check of the directories tbhost works in (the prefix
// store, tables sync's destination): never created, and every refusal names
// the path and says what it is.
func TestExistingDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	for _, c := range []struct {
		path string
		want []string
	}{
		{dir, nil},
		{missing, []string{"store directory " + missing + ": ", "no such file or directory", "(mount it)"}},
		{file, []string{"store directory " + file + ": is a regular file, not a directory"}},
		{filepath.Join(file, "x"), []string{"store directory " + filepath.Join(file, "x") + ": ", "not a directory"}},
	} {
		err := ExistingDir(c.path, "store directory", "--store", "mount it")
		if (err == nil) != (c.want == nil) {
			t.Errorf("%s: %v", c.path, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.path, err, w)
			}
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("%s was created", missing)
	}
}

// StateFile holds files tbhost wrote to the same bounds as File, with the
// fix that fits them: move the file away (not "fix the --root tree").
func TestStateFileBoundsAndFix(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "state.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	withTimeout(t, func() {
		if _, err := StateFile(fifo, StateLimit); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), fifo) || !strings.Contains(err.Error(), "move it away") || strings.Contains(err.Error(), "--root") {
			t.Errorf("FIFO: %v", err)
		}
	})
	big := filepath.Join(dir, "manifest")
	if err := os.WriteFile(big, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := StateFile(big, 9); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "move it away") {
		t.Errorf("10 bytes with limit 9: %v", err)
	}
	if b, err := StateFile(big, 10); err != nil || string(b) != "0123456789" {
		t.Errorf("10 bytes with limit 10: %q, %v", b, err)
	}
	if _, err := StateFile(filepath.Join(dir, "missing"), 10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v, want fs.ErrNotExist (callers take it as no state yet)", err)
	}
}
