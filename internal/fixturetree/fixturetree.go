// Package fixturetree gives tests the committed fixture trees (sysfs,
// procfs, udev and lvm captures), which the repository keeps as
// reproducible .tar.gz archives (internal/treearchive) rather than
// thousands of small files.
//
// Call sites change mechanically from a directory to the archive:
//
//	root := fixturetree.Dir(t, "testdata/busy-host.tar.gz")
//
// Each call unpacks into its own t.TempDir(), so a test may modify the tree;
// call it once per test and reuse the root. A missing or broken committed
// archive fails the test: a renamed fixture must never turn into a skip.
package fixturetree

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/tbhost/tbhost/internal/treearchive"
)

// Dir unpacks the archive (a path relative to the test's package
// directory) into a fresh temporary directory and returns its root.
func Dir(tb testing.TB, archive string) string {
	tb.Helper()
	b, err := os.ReadFile(archive)
	if err != nil {
		tb.Fatalf("fixture archive %s: %v (a committed fixture must exist: the README next to it says how it is made)", archive, err)
	}
	root := filepath.Join(tb.TempDir(), trimExt(filepath.Base(archive)))
	if err := treearchive.Unpack(b, root); err != nil {
		tb.Fatalf("fixture archive %s: %v", archive, err)
	}
	return root
}

func trimExt(name string) string {
	for _, ext := range []string{".tar.gz", ".tgz", ".tar"} {
		if len(name) > len(ext) && name[len(name)-len(ext):] == ext {
			return name[:len(name)-len(ext)]
		}
	}
	return name
}

// Copy copies a tree (a fixture root, or one a test derived from it) into
// a fresh temporary directory, keeping its symlinks (sys/block/*/slaves,
// /dev/disk/by-id) as links, so a test can alter the copy freely.
func Copy(tb testing.TB, src string) string {
	tb.Helper()
	dst := filepath.Join(tb.TempDir(), filepath.Base(src))
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, to)
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case !d.Type().IsRegular():
			return fmt.Errorf("%s: not a regular file, directory or symlink", p)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, b, 0o644)
		}
	})
	if err != nil {
		tb.Fatalf("copy of fixture tree %s: %v", src, err)
	}
	return dst
}
