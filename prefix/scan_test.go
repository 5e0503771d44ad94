package prefix

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tbhost/tbhost/internal/tablewalk"
)

// Issue 12 item 8: a symlinked subdirectory of the tables was skipped
// silently while a symlinked file was followed.
func TestFindTablesFollowsSymlinkedSubdirectory(t *testing.T) {
	tables, set := writeSet(t)
	root := t.TempDir()
	if err := os.Symlink(tables, filepath.Join(root, "6-pieces")); err != nil {
		t.Fatal(err)
	}
	srcs, err := FindTables([]string{root})
	if err != nil || len(srcs) != len(set) {
		t.Fatalf("%d tables through a symlinked subdirectory (%v), want %d", len(srcs), err, len(set))
	}
}

func TestFindTablesRefusesASymlinkLoop(t *testing.T) {
	tables, _ := writeSet(t)
	if err := os.Symlink(".", filepath.Join(tables, "again")); err != nil {
		t.Fatal(err)
	}
	if _, err := FindTables([]string{tables}); !errors.Is(err, tablewalk.ErrLoop) {
		t.Fatalf("symlink loop: %v, want tablewalk.ErrLoop", err)
	}
}
