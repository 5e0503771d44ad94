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
