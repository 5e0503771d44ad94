// Package sysread reads files of /proc and /sys (and saved copies of them
// under a --root tree) without trusting them: every read is bounded, a
// file that must be regular is refused when it is a device, a FIFO, a
// socket or a directory (opening never blocks on a FIFO), and numbers are
// parsed against the range the caller allows. Errors name the file and
// say what was wrong with it.
package sysread

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// Limits for the files tbhost reads. A sysfs attribute is at most one page;
// /proc/diskstats is about 100 bytes a device; JSON reports of lvm are a
// few KiB an LV.
const (
	AttrLimit      = 64 << 10 // one sysfs attribute (the kernel caps it at PAGE_SIZE)
	DiskstatsLimit = 16 << 20 // /proc/diskstats: ~150,000 devices
	ReportLimit    = 64 << 20 // a saved lvm JSON report, a snapshot's metadata
	DirLimit       = 1 << 16  // entries of one sysfs directory (/sys/block, slaves/)
)

// ErrNotRegular marks a path that is no regular file (a device such as
// /dev/zero, a FIFO, a socket or a directory).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge marks a file longer than the limit its reader allows.
var ErrTooLarge = errors.New("file too large")

// ErrNotDir marks a path that must be a directory and is not.
var ErrNotDir = errors.New("not a directory")

// ErrOutOfRange marks a number outside the range its attribute can hold.
var ErrOutOfRange = errors.New("value out of range")

// File returns the content of path, at most limit bytes. It refuses what is
// not a regular file (after following symlinks), without blocking on a FIFO,
// and a file longer than limit (also one that reports size 0 and streams, as
// /proc files do). A missing file gives an error satisfying
// errors.Is(err, fs.ErrNotExist).
func File(path string, limit int64) ([]byte, error) {
	return bounded(path, limit, "a /proc or /sys file or its saved copy is expected", "fix the --root tree")
}

// StateLimit bounds the files tbhost writes and reads back: a state file, a
// prefix store's manifest (the 3022 tables of the full set take ~1 MB).
const StateLimit = 64 << 20

// StateFile is File for a file tbhost wrote and reads back (a resume state,
// a manifest): it is outside input all the same (edited, replaced,
// truncated by a full disk, a FIFO planted in its place), so the same
// bounds hold, and a refusal says to move the file away.
func StateFile(path string, limit int64) ([]byte, error) {
	return bounded(path, limit, "tbhost writes a regular file there", "move it away")
}

func bounded(path string, limit int64, expected, fix string) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO for reading must not wait for a writer;
	// regular files ignore it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err // *PathError names the file
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (it is %s; %s: %s)", path, ErrNotRegular, "a "+FileKind(fi.Mode()), expected, fix)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s: %w: %d bytes, at most %d expected (%s)", path, ErrTooLarge, fi.Size(), limit, fix)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: %w: more than %d bytes (%s)", path, ErrTooLarge, limit, fix)
	}
	return b, nil
}

// FileKind names what a non-regular file is, for messages that say why a
// path was refused: "directory", "named pipe (FIFO)", "symlink", ...
func FileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m.IsRegular():
		return "regular file"
	default:
		return "special file (" + m.Type().String() + ")"
	}
}

// Attr returns a sysfs attribute's content without surrounding white space,
// at most AttrLimit bytes.
func Attr(path string) (string, error) {
	b, err := File(path, AttrLimit)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// OptionalAttr is Attr where a missing file means "" (no error); any other
// problem (a FIFO, a huge file, unreadable) is still an error.
func OptionalAttr(path string) (string, error) {
	s, err := Attr(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return s, err
}

// ParseInt parses an attribute's decimal value and checks min <= v <= max.
// name and path only go into the error.
func ParseInt(path, s string, min, max int64) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is no integer: %w", path, s, err)
	}
	if v < min || v > max {
		return 0, fmt.Errorf("%s: %d: %w [%d, %d]", path, v, ErrOutOfRange, min, max)
	}
	return v, nil
}

// Dir lists the names in directory path, at most limit of them.
// Entries are sorted by name, like os.ReadDir.
func Dir(path string, limit int) ([]fs.DirEntry, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s: %w (it is %s; fix the --root tree)", path, ErrNotDir, "a "+FileKind(fi.Mode()))
	}
	es, err := f.ReadDir(limit + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(es) > limit {
		return nil, fmt.Errorf("%s: %w: more than %d entries (fix the --root tree)", path, ErrTooLarge, limit)
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Name() < es[j].Name() })
	return es, nil
}

// ExistingDir says why path cannot be the directory a command works in, or
// returns nil: it is missing (with missingFix, what the user does about
// that: it is never created here, so an unmounted file system is not
// replaced by a directory on the root file system), refused or unreadable
// (the stat error; for a refusal the fix names flag, the option that gives
// it), or something else than a directory (named: a file given by mistake
// is recognised at once). what names the directory in the messages
// ("store directory", "destination").
func ExistingDir(path, what, flag, missingFix string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s %s: %w (%s)", what, path, err, missingFix)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s %s: %w (run as a user that can reach it, or give another %s)", what, path, err, flag)
	case err != nil:
		return fmt.Errorf("%s %s: %w", what, path, err) // ENOTDIR, EIO: the error says it
	case !st.IsDir():
		return fmt.Errorf("%s %s: is a %s, not a directory", what, path, FileKind(st.Mode()))
	}
	return nil
}
