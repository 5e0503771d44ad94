package filelock

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// flock locks belong to open files: a second open in this process stands
// for another process. Exclusive excludes everything, shared ones share, and
// an unlock lets the next one in.
func TestExclusiveAndShared(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	if _, err := Shared(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("shared lock of a missing file: %v, want not-exist", err)
	}
	ex, err := Exclusive(path, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o640&^umask() {
		t.Errorf("lock file: %v %v", st, err)
	}
	for name, try := range map[string]func() (*Lock, error){
		"exclusive": func() (*Lock, error) { return Exclusive(path, 0o640) },
		"shared":    func() (*Lock, error) { return Shared(path) },
	} {
		if _, err := try(); !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s beside an exclusive lock: %v, want ErrHeld naming %s", name, err, path)
		}
	}
	ex.Unlock()
	a, err := Shared(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Shared(path)
	if err != nil {
		t.Fatalf("two shared locks: %v", err)
	}
	if _, err := Exclusive(path, 0o640); !errors.Is(err, ErrHeld) {
		t.Errorf("exclusive beside shared ones: %v, want ErrHeld", err)
	}
	a.Unlock()
	b.Unlock()
	ex, err = Exclusive(path, 0o640)
	if err != nil {
		t.Fatalf("after every unlock: %v", err)
	}
	ex.Unlock()
}

// A process that ends drops its lock, however it ends (here: killed).
func TestAKilledHolderLeavesNoLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	// flock(1) and its sleep both hold the lock: kill the process group
	cmd := exec.Command("flock", "--exclusive", path, "sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Skipf("flock(1): %v", err)
	}
	kill := func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}
	held := false
	for end := time.Now().Add(10 * time.Second); !held && time.Now().Before(end); {
		l, err := Exclusive(path, 0o644)
		if err == nil { // flock(1) has not taken it yet
			l.Unlock()
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if !errors.Is(err, ErrHeld) {
			kill()
			t.Fatal(err)
		}
		held = true
	}
	kill()
	if !held {
		t.Fatal("flock(1) never held the lock")
	}
	// the killed sleep, flock(1)'s child, closes its files as it exits, a
	// moment after the signal
	var err error
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		var l *Lock
		if l, err = Exclusive(path, 0o644); err == nil {
			l.Unlock()
			return
		}
	}
	t.Fatalf("5 s after the holder was killed: %v", err)
}

// An error opening the file comes back as os.OpenFile gives it, for the
// caller's fix.
func TestOpenErrorsAreTheOpensOwn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing-dir", "lock")
	_, err := Exclusive(path, 0o644)
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != path || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("lock in a missing directory: %v", err)
	}
}

func umask() fs.FileMode {
	dir, err := os.MkdirTemp("", "umask")
	if err != nil {
		return 0
	}
	defer os.RemoveAll(dir)
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, nil, 0o777); err != nil {
		return 0
	}
	st, err := os.Stat(f)
	if err != nil {
		return 0
	}
	return 0o777 &^ st.Mode().Perm()
}

// Wait takes a free lock at once, waits while another holder has it and
// gets it once released, and gives up with ErrHeld and the context's error
// when the context ends first. A lock file only readable to this user (as
// root's 0644 one is to others) does not refuse it.
func TestWait(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lock")
	l, err := Wait(ctx, path, 0o644, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := Wait(short, path, 0o644, time.Millisecond); !errors.Is(err, ErrHeld) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), path) {
		t.Fatalf("beside a holder that stays: %v, want ErrHeld and the deadline, naming %s", err, path)
	}
	got := make(chan error, 1)
	go func() {
		l2, err := Wait(ctx, path, 0o644, time.Millisecond)
		if err == nil {
			l2.Unlock()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("took the lock while it was held: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	l.Unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("after the holder let go: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting 10 s after the holder let go")
	}
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	l, err = Wait(ctx, path, 0o644, time.Millisecond)
	if err != nil {
		t.Fatalf("a read-only lock file: %v", err)
	}
	l.Unlock()
}
