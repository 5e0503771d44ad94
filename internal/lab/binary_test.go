package lab

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/execx"
)

func TestIsStaticOnRealBinaries(t *testing.T) {
	// /bin/sh on Debian is dynamically linked (dash)
	if ok, err := IsStatic("/bin/sh"); err != nil || ok {
		t.Errorf("/bin/sh: static=%v err=%v", ok, err)
	}
	if _, err := IsStatic("/etc/passwd"); err == nil {
		t.Error("a non-ELF file must be an error")
	}
}

func TestStaticTbhostBuildsFromSourceTree(t *testing.T) {
	mod := t.TempDir()
	os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module github.com/tbhost/tbhost\n\ngo 1.26\n"), 0o644)
	work := t.TempDir()
	out := filepath.Join(work, "tbhost-static")
	r := execx.NewRecorded().On(execx.Reply{}, staticBuildArgv(mod, out)...)
	got, err := StaticTbhost(context.Background(), r, "", "/bin/sh", mod, work)
	if err != nil || got != out {
		t.Fatalf("got %q, %v", got, err)
	}
	if len(r.Calls) != 1 || !strings.Contains(strings.Join(r.Calls[0], " "), "CGO_ENABLED=0 go build") {
		t.Errorf("calls %v", r.Calls)
	}
	// not a source tree, dynamic self: a message that says what to do
	_, err = StaticTbhost(context.Background(), execx.NewRecorded(), "", "/bin/sh", t.TempDir(), work)
	if err == nil || !strings.Contains(err.Error(), "--tbhost") {
		t.Errorf("err %v", err)
	}
	if _, err := StaticTbhost(context.Background(), execx.NewRecorded(), "/bin/sh", "", "", work); err == nil {
		t.Error("an explicit dynamic binary must be refused")
	}
}
