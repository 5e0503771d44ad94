// Package realdata finds the project's shared real Syzygy data for tests and
// benchmarks: ../shared/syzygy next to the repository (30 real table files
// and the published checksum lists). The data is never copied into the
// repository; where it is absent, callers skip with a message saying so.
package realdata

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the absolute path of ../shared/syzygy relative to the
// repository root (the directory holding go.mod above the working
// directory), or skips the test when the real tables are not there.
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("real Syzygy data: no go.mod above the test directory")
		}
		dir = parent
	}
	data := filepath.Join(filepath.Dir(dir), "shared", "syzygy")
	if files, _ := filepath.Glob(filepath.Join(data, "tables", "*.rtb[wz]")); len(files) == 0 {
		t.Skipf("real Syzygy tables absent at %s; skipping (they are not part of the repo)", data)
	}
	return data
}

// Tables returns the directory of the real table files (see Dir).
func Tables(t testing.TB) string {
	t.Helper()
	return filepath.Join(Dir(t), "tables")
}

// CopyTables copies the real table files into a fresh temporary directory
// the test may modify, and returns it.
func CopyTables(t testing.TB) string {
	t.Helper()
	src := Tables(t)
	dst := t.TempDir()
	files, _ := filepath.Glob(filepath.Join(src, "*.rtb[wz]"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
