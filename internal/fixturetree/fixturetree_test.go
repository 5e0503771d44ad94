package fixturetree

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/treearchive"
)

// fatalRecorder is a testing.TB whose Fatalf/Skipf record the message and
// stop the goroutine, so a test can check that Dir fails (not skips).
type fatalRecorder struct {
	testing.TB
	fatal, skip string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *fatalRecorder) Skipf(format string, args ...any) {
	r.skip = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *fatalRecorder) Skip(args ...any) { r.Skipf("%s", fmt.Sprint(args...)) }

func run(t *testing.T, f func(tb testing.TB)) *fatalRecorder {
	r := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

// A committed fixture that is missing (renamed, deleted) fails the test,
// naming the archive: it never turns into a skip.
func TestMissingArchiveFails(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "renamed-host.tar.gz")
	r := run(t, func(tb testing.TB) { Dir(tb, missing) })
	if r.skip != "" || !strings.Contains(r.fatal, missing) {
		t.Fatalf("fatal %q skip %q: want a failure naming %s", r.fatal, r.skip, missing)
	}
	broken := filepath.Join(t.TempDir(), "broken.tar.gz")
	os.WriteFile(broken, []byte("not an archive"), 0o644)
	if r := run(t, func(tb testing.TB) { Dir(tb, broken) }); r.skip != "" || !strings.Contains(r.fatal, broken) {
		t.Fatalf("broken archive: fatal %q skip %q", r.fatal, r.skip)
	}
}

func TestDirUnpacksAFreshCopyEachCall(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "sys/block/sda"), 0o755)
	os.WriteFile(filepath.Join(src, "sys/block/sda/size"), []byte("8\n"), 0o644)
	os.Symlink("../../sda", filepath.Join(src, "sys/block/holder"))
	b, err := treearchive.Pack(src)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "host.tar.gz")
	os.WriteFile(archive, b, 0o644)
	a := Dir(t, archive)
	if filepath.Base(a) != "host" {
		t.Errorf("root %s: want it named after the archive", a)
	}
	os.WriteFile(filepath.Join(a, "sys/block/sda/size"), []byte("changed\n"), 0o644)
	c := Dir(t, archive)
	if got, _ := os.ReadFile(filepath.Join(c, "sys/block/sda/size")); string(got) != "8\n" || a == c {
		t.Fatalf("second Dir %s reads %q: want a fresh copy", c, got)
	}
	if l, err := os.Readlink(filepath.Join(c, "sys/block/holder")); err != nil || l != "../../sda" {
		t.Fatalf("symlink %q %v", l, err)
	}
}
