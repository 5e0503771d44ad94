package prefix

import (
	"os"
	"path/filepath"
	"testing"
)

// realTables returns ../shared/syzygy/tables (relative to the repo root), or
// skips the test when the real files are absent.
func realTables(t testing.TB) string {
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
			t.Skip("no go.mod above the test directory")
		}
		dir = parent
	}
	tables := filepath.Join(dir, "..", "shared", "syzygy", "tables")
	files, _ := filepath.Glob(filepath.Join(tables, "*.rtb[wz]"))
	if len(files) == 0 {
		t.Skipf("real Syzygy tables absent at %s; skipping (they are not part of the repo)", tables)
	}
	return tables
}

func realTableFiles(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join(realTables(t), "*.rtb[wz]"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}
