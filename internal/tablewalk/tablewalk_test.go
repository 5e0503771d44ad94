package tablewalk

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func write(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(path), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func names(fs []File) string {
	var s []string
	for _, f := range fs {
		s = append(s, f.Name)
	}
	return strings.Join(s, " ")
}

func TestSymlinkedRootIsWalkedUnderItsOwnName(t *testing.T) {
	real := t.TempDir()
	write(t, filepath.Join(real, "KRvK.rtbw"))
	write(t, filepath.Join(real, "6-pieces", "KRPvKR.rtbw"))
	link := filepath.Join(t.TempDir(), "link")
	symlink(t, real, link)
	got, err := Walk([]string{link}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("walked %d files through the symlinked root, want 2: %+v", len(got), got)
	}
	for _, f := range got {
		if !strings.HasPrefix(f.Path, link+string(os.PathSeparator)) || !f.Linked {
			t.Errorf("%+v: want a path under %s, reached through a link", f, link)
		}
	}
}

func TestSymlinkedSubdirAndFileAreFollowed(t *testing.T) {
	elsewhere := t.TempDir()
	write(t, filepath.Join(elsewhere, "7", "KQRvKQR.rtbw"))
	write(t, filepath.Join(elsewhere, "KQvK.rtbw"))
	root := t.TempDir()
	write(t, filepath.Join(root, "KRvK.rtbw"))
	symlink(t, filepath.Join(elsewhere, "7"), filepath.Join(root, "7-pieces"))
	symlink(t, filepath.Join(elsewhere, "KQvK.rtbw"), filepath.Join(root, "KQvK.rtbw"))
	got, err := Walk([]string{root}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if names(got) != "KQRvKQR.rtbw KQvK.rtbw KRvK.rtbw" {
		t.Fatalf("got %q: the symlinked subdirectory or file was skipped", names(got))
	}
	for _, f := range got {
		if f.Size != int64(len(mustRead(t, f.Path))) {
			t.Errorf("%s: size %d is not the target's", f.Path, f.Size)
		}
	}
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSymlinkLoopIsRefused(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "sub", "KRvK.rtbw"))
	symlink(t, "..", filepath.Join(root, "sub", "up"))
	_, err := Walk([]string{root}, Options{})
	if !errors.Is(err, ErrLoop) || !strings.Contains(err.Error(), filepath.Join(root, "sub", "up")) {
		t.Fatalf("loop: %v, want ErrLoop naming the link", err)
	}
}

func TestTwoLinksToOneDirectoryAndRepeatedRootsAreRefused(t *testing.T) {
	real := t.TempDir()
	write(t, filepath.Join(real, "KRvK.rtbw"))
	root := t.TempDir()
	symlink(t, real, filepath.Join(root, "a"))
	symlink(t, real, filepath.Join(root, "b"))
	if _, err := Walk([]string{root}, Options{}); !errors.Is(err, ErrLoop) {
		t.Fatalf("two links to one directory: %v", err)
	}
	if _, err := Walk([]string{real, real}, Options{}); !errors.Is(err, ErrLoop) {
		t.Fatalf("a root twice: %v", err)
	}
}

// tableKeep is the name filter of prefix: every directory, table files only.
func tableKeep(name string, dir bool) bool { return dir || IsTableName(name) }

// Audit: one dangling symlink anywhere under the tables (even notes.txt)
// failed the whole walk, so prefix stats/extract and verify-tables checked
// no table at all. A link with a table's name is that table, unreadable.
func TestDanglingSymlinkWithATableNameIsThatTableUnreadable(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "KRvK.rtbw"))
	symlink(t, filepath.Join(root, "gone"), filepath.Join(root, "KQvK.rtbw"))
	symlink(t, "KNvK.rtbz", filepath.Join(root, "KNvK.rtbz")) // a link to itself: ELOOP
	got, err := Walk([]string{root}, Options{Keep: tableKeep})
	if err != nil {
		t.Fatalf("a dangling table link failed the walk: %v", err)
	}
	if names(got) != "KNvK.rtbz KQvK.rtbw KRvK.rtbw" {
		t.Fatalf("got %q, want the two broken links and the good table", names(got))
	}
	byName := map[string]File{}
	for _, f := range got {
		byName[f.Name] = f
	}
	if f := byName["KQvK.rtbw"]; !errors.Is(f.Err, ErrDangling) || !strings.Contains(f.Err.Error(), f.Path) || !f.Linked {
		t.Errorf("dangling KQvK.rtbw: %+v, want Err wrapping ErrDangling naming the link", f)
	}
	if f := byName["KNvK.rtbz"]; f.Err == nil || errors.Is(f.Err, ErrDangling) || !strings.Contains(f.Err.Error(), "follow symlink") {
		t.Errorf("self-linked KNvK.rtbz: %+v, want a follow error", f)
	}
	if f := byName["KRvK.rtbw"]; f.Err != nil || f.Size == 0 {
		t.Errorf("good KRvK.rtbw: %+v", f)
	}
}

// A dangling link whose name cannot be a table is skipped like any other
// file that is not a table (notes.txt). One whose name may be a
// directory's (7-pieces, a link to an unmounted disk) is returned with
// MaybeDir: the tables under it were lost, which callers report by name.
func TestDanglingSymlinkWithAnotherNameIsSkipped(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "KRvK.rtbw"))
	symlink(t, filepath.Join(root, "gone"), filepath.Join(root, "notes.txt"))
	symlink(t, filepath.Join(root, "unmounted"), filepath.Join(root, "7-pieces"))
	got, err := Walk([]string{root}, Options{Keep: tableKeep})
	if err != nil || names(got) != "7-pieces KRvK.rtbw" {
		t.Fatalf("got %q %v, want 7-pieces and KRvK.rtbw and no error", names(got), err)
	}
	for _, f := range got {
		if f.Name == "7-pieces" && (!f.MaybeDir || !errors.Is(f.Err, ErrDangling) || !strings.Contains(f.Err.Error(), "directory of tables")) {
			t.Errorf("7-pieces: %+v, want MaybeDir and ErrDangling saying it may be a directory of tables", f)
		}
	}
	// A filter that rejects the names outright: not even looked at.
	got, err = Walk([]string{root}, Options{Keep: func(name string, dir bool) bool { return name == "KRvK.rtbw" }})
	if err != nil || names(got) != "KRvK.rtbw" {
		t.Fatalf("a rejected dangling link must not matter: %q %v", names(got), err)
	}
}

func TestKeepRejectsDirectoriesAndFiles(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "KRvK.rtbw"))
	write(t, filepath.Join(root, "notes.txt"))
	write(t, filepath.Join(root, ".snapshot", "KQvK.rtbw"))
	keep := func(name string, dir bool) bool {
		return !strings.HasPrefix(name, ".") && (dir || strings.HasSuffix(name, ".rtbw"))
	}
	got, err := Walk([]string{root}, Options{Keep: keep})
	if err != nil || names(got) != "KRvK.rtbw" {
		t.Fatalf("got %q %v", names(got), err)
	}
}

func TestFifoIsRefused(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "KRvK.rtbw")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if _, err := Walk([]string{root}, Options{}); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("fifo: %v", err)
	}
}

func TestRootErrors(t *testing.T) {
	if _, err := Walk(nil, Options{}); err == nil {
		t.Error("no roots accepted")
	}
	f := filepath.Join(t.TempDir(), "file")
	write(t, f)
	// A file where a directory is named: a path error (exit 3 in the
	// CLI, like a missing directory) that says what the path is.
	var pe *fs.PathError
	if _, err := Walk([]string{f}, Options{}); !errors.Is(err, ErrNotDir) || !errors.As(err, &pe) || !strings.Contains(err.Error(), "is a regular file, not a directory") {
		t.Errorf("file as root: %v", err)
	}
	if _, err := Walk([]string{filepath.Join(f, "nope")}, Options{}); err == nil {
		t.Error("missing root accepted")
	}
}
