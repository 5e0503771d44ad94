// Package atomicfile writes a file so that a reader, a run killed midway
// (kill -9) or a power loss sees either the old file or the new one, never
// an empty or torn one: a temporary file in the same directory, written,
// fsynced and closed, renamed over the target, then the directory fsynced
// so that the rename itself is on disk. Without the first fsync XFS (and
// ext4 without auto_da_alloc) may persist the rename before the data: the
// file is then empty after a crash.
//
// A run killed between the temporary file's create and its rename leaves
// the temporary behind; Temps and RemoveTemps find and remove them, for a
// caller that knows no other writer of the file is running (it holds the
// file's lock).
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Options says how WriteFile names and creates the temporary file.
type Options struct {
	// Temp is the os.CreateTemp pattern of the temporary file's name (the
	// last "*" is replaced by random digits, no "*" appends them), in the
	// target's directory. "" is DefaultTemp(path).
	Temp string
	// Perm, when not zero, is the new file's mode, set with chmod (the
	// umask does not apply). Zero leaves os.CreateTemp's 0600.
	Perm fs.FileMode
	// NoReplace refuses to replace anything at path (a file, a directory,
	// a symlink, even a dangling one): the temporary is hard-linked to
	// path, which link(2) refuses if path appeared meanwhile (no window in
	// which another file is silently replaced), then removed. An existing
	// path is an error wrapping fs.ErrExist. On a file system without hard
	// links the temporary is renamed, if path still does not exist.
	NoReplace bool
}

// DefaultTemp is the temporary-name pattern WriteFile uses when
// Options.Temp is "": a hidden ".<name>.tmp<digits>" beside path.
func DefaultTemp(path string) string { return "." + filepath.Base(path) + ".tmp*" }

// WriteFile writes data to path atomically and durably (see the package
// comment). On an error before the rename the temporary file is removed and
// path is untouched. The errors are the os package's (they name the
// temporary file or path), with the step for those that would not say it;
// callers add what the file is.
func WriteFile(path string, data []byte, o Options) error {
	return write(osFS{}, path, data, o)
}

// Temps lists the temporary files WriteFile(path, ..., o) may have left in
// path's directory: the names that start with the part of o's pattern
// before its "*" and end with the part after it (by name, not as a glob,
// so a name with glob characters in it is no problem).
func Temps(path string, o Options) ([]string, error) {
	dir := filepath.Dir(path)
	prefix, suffix := split(o.pattern(path))
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if len(n) > len(prefix)+len(suffix) && strings.HasPrefix(n, prefix) && strings.HasSuffix(n, suffix) {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out, nil
}

// RemoveTemps removes the temporary files Temps lists. Only for a caller
// that is the file's only writer (it holds the file's lock): another
// writer's temporary would be removed under it. What cannot be removed
// stays: it is litter, not a fault, so there is no error.
func RemoveTemps(path string, o Options) {
	temps, _ := Temps(path, o)
	for _, t := range temps {
		os.Remove(t)
	}
}

func (o Options) pattern(path string) string {
	if o.Temp != "" {
		return o.Temp
	}
	return DefaultTemp(path)
}

// split cuts an os.CreateTemp pattern at its last "*"; without one the
// random part is appended.
func split(pattern string) (prefix, suffix string) {
	if i := strings.LastIndex(pattern, "*"); i >= 0 {
		return pattern[:i], pattern[i+1:]
	}
	return pattern, ""
}

// file is what write needs of an *os.File.
type file interface {
	Name() string
	Write(b []byte) (int, error)
	Chmod(mode fs.FileMode) error
	Sync() error
	Close() error
}

// filesystem is the seam the tests use to see the order of the steps and to
// make one of them fail.
type filesystem interface {
	CreateTemp(dir, pattern string) (file, error)
	Rename(oldpath, newpath string) error
	Link(oldpath, newpath string) error
	Lstat(name string) (fs.FileInfo, error)
	Remove(name string) error
	SyncDir(dir string) error
}

type osFS struct{}

func (osFS) CreateTemp(dir, pattern string) (file, error) { return os.CreateTemp(dir, pattern) }
func (osFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (osFS) Link(oldpath, newpath string) error           { return os.Link(oldpath, newpath) }
func (osFS) Lstat(name string) (fs.FileInfo, error)       { return os.Lstat(name) }
func (osFS) Remove(name string) error                     { return os.Remove(name) }

func (osFS) SyncDir(dir string) error { return SyncDir(dir) }

// SyncFile fsyncs the file at path, for a file another program wrote (rsync)
// that is about to be renamed into place and recorded: without it the
// rename may reach the disk before the data.
func SyncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open %s for fsync: %w", path, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return nil
}

// SyncDir fsyncs directory dir, so that a rename into it is on disk. A file
// system that cannot fsync a directory is no error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory %s for fsync: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		// a file system that cannot fsync a directory (some FUSE and
		// network ones) says EINVAL: there is nothing more to do there
		if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
			return nil
		}
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

func write(fsys filesystem, path string, data []byte, o Options) (err error) {
	dir := filepath.Dir(path)
	f, err := fsys.CreateTemp(dir, o.pattern(path))
	if err != nil {
		return err
	}
	tmp := f.Name()
	closed, renamed := false, false
	defer func() {
		if err != nil && !renamed {
			if !closed {
				f.Close()
			}
			fsys.Remove(tmp)
		}
	}()
	if o.Perm != 0 {
		if err := f.Chmod(o.Perm); err != nil {
			return err
		}
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	closed = true
	if err := f.Close(); err != nil {
		return err
	}
	if o.NoReplace {
		if err := link(fsys, tmp, path); err != nil {
			return err
		}
	} else if err := fsys.Rename(tmp, path); err != nil {
		return err
	}
	renamed = true // nothing left to remove, whatever the directory's fsync says
	return fsys.SyncDir(dir)
}

// link puts tmp at path unless something is there, and removes tmp.
func link(fsys filesystem, tmp, path string) error {
	err := fsys.Link(tmp, path)
	switch {
	case err == nil:
		return fsys.Remove(tmp)
	case errors.Is(err, fs.ErrExist):
		return err
	}
	if _, lerr := fsys.Lstat(path); !errors.Is(lerr, fs.ErrNotExist) {
		return err
	}
	return fsys.Rename(tmp, path) // a file system without hard links
}
