package prefix

import (
	"path/filepath"
	"testing"

	"github.com/tbhost/tbhost/internal/realdata"
	"github.com/tbhost/tbhost/prefix/prefixtest"
)

func realTableFiles(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join(realdata.Tables(t), "*.rtb[wz]"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// writeTables writes the synthetic tables of specs into a new temporary
// directory and returns it with the tables found there.
func writeTables(tb testing.TB, specs []prefixtest.Spec) (string, []Source) {
	tb.Helper()
	dir := tb.TempDir()
	for _, s := range specs {
		if _, _, err := prefixtest.WriteTable(dir, s); err != nil {
			tb.Fatal(err)
		}
	}
	srcs, err := FindTables([]string{dir})
	if err != nil {
		tb.Fatal(err)
	}
	return dir, srcs
}
