// Package filelock takes the advisory locks (flock) that keep two tbhost
// runs on one store, state file or machine apart. A lock is held by an open
// file and the kernel drops it with the process, kill -9 too: there is never
// a stale lock to clear. Exclusive and Shared do not wait: a lock another
// process holds is ErrHeld at once, and the caller says who holds it and
// what to do. Wait is for a lock every holder keeps only for a moment (while
// it writes one small file): it tries again until its context is done.
package filelock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// ErrHeld is returned (wrapped, with the lock's path) when another process
// holds the lock.
var ErrHeld = errors.New("held by another process")

// Lock is a lock this process holds.
type Lock struct{ f *os.File }

// File is the open lock file: a child process that inherits it holds the
// lock too, until it ends.
func (l *Lock) File() *os.File { return l.f }

// Unlock releases the lock (children that inherited it may still hold it).
func (l *Lock) Unlock() { _ = l.f.Close() }

// Exclusive opens path for writing, creating it with perm, and locks it
// exclusively. An error opening it is returned as os.OpenFile gives it (a
// *fs.PathError naming path), for the caller to add its fix.
func Exclusive(path string, perm fs.FileMode) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, perm)
	if err != nil {
		return nil, err
	}
	return take(f, unix.LOCK_EX)
}

// Shared opens path, which must exist, for reading and takes a shared
// lock: any number of shared holders, none beside an exclusive one.
func Shared(path string) (*Lock, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return take(f, unix.LOCK_SH)
}

// Wait takes an exclusive lock on path (created with perm) like Exclusive,
// but while another process holds it, it tries again every poll until ctx
// is done; it then returns ErrHeld and ctx's error, both wrapped. The file
// is opened read-only (flock(2) locks a file whatever its open mode), so a
// lock file another user created (root's, 0644) does not refuse the lock
// to a user who may read it.
func Wait(ctx context.Context, path string, perm fs.FileMode, poll time.Duration) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, perm)
	if err != nil {
		return nil, err
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		err := try(f, unix.LOCK_EX)
		if !errors.Is(err, ErrHeld) {
			return lockOrClose(f, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("%w (%w)", err, ctx.Err())
		case <-t.C:
		}
	}
}

func take(f *os.File, how int) (*Lock, error) { return lockOrClose(f, try(f, how)) }

// try flocks f without waiting: ErrHeld (wrapped, with f's name) while
// another process holds it.
func try(f *os.File, how int) error {
	if err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return fmt.Errorf("lock %s: %w", f.Name(), ErrHeld)
		}
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return nil
}

// lockOrClose is f's Lock when err is nil; otherwise f is closed.
func lockOrClose(f *os.File, err error) (*Lock, error) {
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Lock{f: f}, nil
}
