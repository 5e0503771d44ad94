// Package tablewalk is the one walker of table directories, used by
// package prefix (which tables to extract) and package integrity (which
// files to verify), so both see the same files.
//
// The semantics, defined once:
//   - A root may be a symlink (a table directory is often a link to the
//     array's mount): it is followed. A root that is not a directory is an
//     error, an *fs.PathError (wrapping ErrNotDir) like a missing root: it
//     is a path named on the command line that cannot be walked.
//   - Symlinks below a root are followed, to files and to directories
//     alike. A symlink that cannot be followed (its target is missing, or
//     it loops onto itself) is judged by its name, like any entry: if the
//     caller's Keep accepts the name as a file (a table's name), it is
//     returned as a File with Err set, that one table unreadable, for the
//     caller to report while it goes on with the others. A name without an
//     extension that Keep accepts as a directory (7-pieces, a link to an
//     unmounted disk) may have been a directory of tables: it is returned
//     the same way with MaybeDir set, so the loss is reported, not
//     silently walked past. Any other name (notes.txt) is skipped like any
//     other file that is not a table. One stale link never stops the walk.
//   - A directory reached twice is an error naming both paths: a symlink
//     loop (a link to an ancestor), two links to one directory, or a root
//     given twice (directly or through a link). Nothing is walked twice
//     and nothing is skipped silently.
//   - Entries the caller's Keep rejects are not looked at further (a
//     rejected directory is not entered, a rejected symlink not followed).
//   - An accepted entry that is neither a directory nor a regular file
//     (a fifo, a socket, a device) is an error: reading it would block or
//     read something that is not a table.
//
// Paths are reported as reached: under the root as given, not under the
// link's target, so a report names what the user typed.
package tablewalk

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/tbhost/tbhost/internal/sysread"
)

// File is one regular file found under a root.
type File struct {
	Path    string    // as reached: root/sub/KRvK.rtbw
	Name    string    // base name: KRvK.rtbw
	Size    int64     // of the file (the link's target for a symlink)
	ModTime time.Time // of the file (the link's target for a symlink)
	Linked  bool      // reached through a symlink (the file or a directory above it)
	// Err is set for a symlink with a table's name that cannot be
	// followed (wrapping ErrDangling when its target is missing): the
	// table is there by name but cannot be read. Size and ModTime are zero.
	Err error
	// MaybeDir: the unfollowable link's name may be a directory's (no
	// extension): whatever tables were under it were not walked.
	MaybeDir bool
}

// Options says which entries a walk looks at.
type Options struct {
	// Keep reports whether the entry name (a file or, with dir set, a
	// directory) is walked; nil keeps everything.
	Keep func(name string, dir bool) bool
}

// ErrLoop is wrapped by the error for a directory reached twice.
var ErrLoop = errors.New("directory reached twice")

// ErrDangling is wrapped by File.Err for a symlink to nothing.
var ErrDangling = errors.New("symlink to a missing target")

// ErrNotDir is wrapped by the error for a root that is not a directory.
var ErrNotDir = errors.New("not a directory")

// ErrNotRegular is wrapped by the error for a fifo, socket or device.
var ErrNotRegular = errors.New("not a regular file")

type dirID struct{ dev, ino uint64 }

type walker struct {
	opts Options
	seen map[dirID]string // directory identity -> the path it was first reached by
	out  []File
}

// Walk returns the regular files under roots, sorted by path.
func Walk(roots []string, opts Options) ([]File, error) {
	if len(roots) == 0 {
		return nil, errors.New("no table directory given")
	}
	w := &walker{opts: opts, seen: map[dirID]string{}}
	for _, root := range roots {
		st, err := os.Stat(root) // follows a symlinked root
		if err != nil {
			return nil, fmt.Errorf("table directory: %w", err)
		}
		if !st.IsDir() {
			// A *fs.PathError, like a missing root: callers map both to
			// "could not run" (exit 3), the rule for a path named on the
			// command line that cannot be used.
			return nil, &fs.PathError{Op: "table directory", Path: root, Err: fmt.Errorf("is a %s, %w", sysread.FileKind(st.Mode()), ErrNotDir)}
		}
		lst, err := os.Lstat(root)
		if err != nil {
			return nil, fmt.Errorf("table directory: %w", err)
		}
		if err := w.dir(root, st, lst.Mode()&fs.ModeSymlink != 0); err != nil {
			return nil, err
		}
	}
	sort.Slice(w.out, func(i, j int) bool { return w.out[i].Path < w.out[j].Path })
	return w.out, nil
}

func (w *walker) dir(path string, st fs.FileInfo, linked bool) error {
	if id, ok := identity(st); ok {
		if first, dup := w.seen[id]; dup {
			return fmt.Errorf("table directory %s is in two places: %s and %s: %w (a symlink loop, two links to one directory, or a directory given twice); remove the extra link or argument", first, first, path, ErrLoop)
		}
		w.seen[id] = path
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return fmt.Errorf("scan %s: %w", path, err)
	}
	for _, e := range entries {
		p := filepath.Join(path, e.Name())
		t := e.Type()
		isLink := t&fs.ModeSymlink != 0
		var info fs.FileInfo
		if isLink {
			info, err = os.Stat(p)
			if err != nil {
				w.unfollowable(p, e.Name(), err)
				continue
			}
			t = info.Mode().Type()
		}
		switch {
		case t.IsDir():
			if !w.keep(e.Name(), true) {
				continue
			}
			if info == nil {
				if info, err = os.Stat(p); err != nil {
					return fmt.Errorf("scan %s: %w", p, err)
				}
			}
			if err := w.dir(p, info, linked || isLink); err != nil {
				return err
			}
		case !w.keep(e.Name(), false):
			continue
		case t.IsRegular():
			if info == nil {
				if info, err = e.Info(); err != nil {
					return fmt.Errorf("scan %s: %w", p, err)
				}
			}
			w.out = append(w.out, File{Path: p, Name: e.Name(), Size: info.Size(), ModTime: info.ModTime(), Linked: linked || isLink})
		default:
			return fmt.Errorf("%s: %w (%s); move it out of the table directory", p, ErrNotRegular, t)
		}
	}
	return nil
}

// unfollowable handles a symlink at p that os.Stat could not follow (err):
// with a table's name (Keep accepts it as a file) it is that table,
// unreadable, returned with Err set; with any other name it cannot be a
// table and is skipped, as a regular file of that name would be. Failing
// the walk instead would leave every other table unchecked because of one
// stale link (a notes.txt pointing nowhere).
func (w *walker) unfollowable(p, name string, err error) {
	asFile := w.keep(name, false)
	maybeDir := filepath.Ext(name) == "" && w.keep(name, true)
	if !asFile && !maybeDir {
		return
	}
	what := ""
	if maybeDir {
		what = " (a directory of tables? none under it was walked)"
	}
	if errors.Is(err, fs.ErrNotExist) {
		err = fmt.Errorf("%s: %w%s; remove the link or restore its target (mount its disk)", p, ErrDangling, what)
	} else {
		err = fmt.Errorf("%s: follow symlink%s: %w", p, what, err)
	}
	w.out = append(w.out, File{Path: p, Name: name, Linked: true, Err: err, MaybeDir: maybeDir})
}

func (w *walker) keep(name string, dir bool) bool {
	return w.opts.Keep == nil || w.opts.Keep(name, dir)
}

func identity(st fs.FileInfo) (dirID, bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return dirID{}, false
	}
	return dirID{dev: uint64(s.Dev), ino: uint64(s.Ino)}, true
}

// IsTableName reports whether name is a Syzygy table's file name (.rtbw
// or .rtbz), the one test of "a table file" for prefix and integrity.
func IsTableName(name string) bool {
	return strings.HasSuffix(name, ".rtbw") || strings.HasSuffix(name, ".rtbz")
}
