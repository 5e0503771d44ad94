package prefix

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
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

// Audit: one dangling symlink under the tables failed FindTables, so stats
// and extract did nothing. A link with a table's name is that table,
// unreadable: FindTables returns it with Err, ParseAll reports it as that
// table's failure and parses the others; a link that may have been a
// directory of tables (7-pieces on an unmounted disk) is reported the same
// way; any other dangling link (notes.txt) is ignored.
func TestFindTablesDanglingSymlinks(t *testing.T) {
	tables, set := writeSet(t)
	for link, target := range map[string]string{"notes.txt": "gone", "7-pieces": "/unmounted/7", "KQRvKQR.rtbw": "/unmounted/7/KQRvKQR.rtbw"} {
		if err := os.Symlink(target, filepath.Join(tables, link)); err != nil {
			t.Fatal(err)
		}
	}
	srcs, err := FindTables([]string{tables})
	if err != nil {
		t.Fatalf("a dangling link failed the walk: %v", err)
	}
	if len(srcs) != len(set)+2 {
		t.Fatalf("%d sources, want the %d tables, the dangling KQRvKQR.rtbw and 7-pieces", len(srcs), len(set))
	}
	parsed := ParseAll(context.Background(), srcs, 2)
	for _, p := range parsed {
		switch {
		case p.Name == "KQRvKQR.rtbw", p.Name == "7-pieces":
			if !errors.Is(p.Err, tablewalk.ErrDangling) || !strings.Contains(p.Err.Error(), p.Path) {
				t.Errorf("dangling KQRvKQR.rtbw: %v, want ErrDangling naming %s", p.Err, p.Path)
			}
		case p.Err != nil:
			t.Errorf("%s: %v; the other tables must still parse", p.Name, p.Err)
		}
	}
}

// prefix verify reports a dangling table link as a bad table, by name,
// and checks the other tables.
func TestVerifyDanglingTableIsABadTable(t *testing.T) {
	tables, set := writeSet(t)
	store := t.TempDir()
	srcs, err := FindTables([]string{tables})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Extract(context.Background(), ParseAll(context.Background(), srcs, 2), ExtractOptions{Store: store, Upto: UptoBlockLengths}); err != nil {
		t.Fatal(err)
	}
	var name string
	for n := range set {
		name = n
		break
	}
	if err := os.Remove(filepath.Join(tables, name)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/unmounted/"+name, filepath.Join(tables, name)); err != nil {
		t.Fatal(err)
	}
	if srcs, err = FindTables([]string{tables}); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(context.Background(), srcs, VerifyOptions{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Kind != FindBadTable || rep.Findings[0].Name != name ||
		!strings.Contains(rep.Findings[0].Detail, "symlink to a missing target") || rep.OK != len(set)-1 {
		t.Fatalf("findings %+v, ok %d of %d: want one bad-table finding for %s", rep.Findings, rep.OK, rep.Tables, name)
	}
}

// Audit: --store naming a file said "not a readable directory (<nil>)".
func TestStoreThatIsAFileIsNamedAsOne(t *testing.T) {
	tables, _ := writeSet(t)
	srcs, err := FindTables([]string{tables})
	if err != nil {
		t.Fatal(err)
	}
	file := srcs[0].Path
	_, verr := Verify(context.Background(), srcs, VerifyOptions{Store: file})
	_, xerr := Extract(context.Background(), ParseAll(context.Background(), srcs, 1), ExtractOptions{Store: file, Upto: UptoBlockLengths})
	for what, err := range map[string]error{"verify": verr, "extract": xerr} {
		if err == nil || !strings.Contains(err.Error(), "is a regular file, not a directory") || strings.Contains(err.Error(), "<nil>") {
			t.Errorf("%s --store FILE: %v", what, err)
		}
	}
}
