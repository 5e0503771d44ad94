package integrity

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/realdata"
)

// Issue 12 item 8: a list naming a file twice kept the last entry silently.
func TestListsRefuseConflictingDuplicatesAndWarnOnAgreeingOnes(t *testing.T) {
	sha := strings.Repeat("a", 64)
	other := strings.Repeat("b", 64)
	tr := strings.Repeat("c", 32)
	trOther := strings.Repeat("d", 32)
	type parse func(string) ([]string, error)
	lists := map[string]struct {
		parse         parse
		agree, differ string
	}{
		"sha256": {
			parse: func(s string) ([]string, error) {
				l, err := ParseChecksumList(strings.NewReader(s), "sha256", "")
				return l.Warnings, err
			},
			agree:  sha + "  KRvK.rtbw\n" + other + "  KQvK.rtbw\n" + sha + "  KRvK.rtbw\n",
			differ: sha + "  KRvK.rtbw\n" + other + "  KQvK.rtbw\n" + other + "  sub/KRvK.rtbw\n",
		},
		"bytes.tsv": {
			parse: func(s string) ([]string, error) {
				_, w, err := ParseSizes(strings.NewReader(s), "bytes.tsv")
				return w, err
			},
			agree:  "208\tKRvK.rtbw\n272\tKQvK.rtbw\n208\tKRvK.rtbw\n",
			differ: "208\tKRvK.rtbw\n272\tKQvK.rtbw\n272\tKRvK.rtbw\n",
		},
		"tbcheck.txt": {
			parse: func(s string) ([]string, error) {
				_, w, err := ParseTrailers(strings.NewReader(s), "tbcheck.txt")
				return w, err
			},
			agree:  "KRvK.rtbw: " + tr + "\nKQvK.rtbw: " + trOther + "\nKRvK.rtbw: " + tr + "\n",
			differ: "KRvK.rtbw: " + tr + "\nKQvK.rtbw: " + trOther + "\nKRvK.rtbw: " + trOther + "\n",
		},
	}
	for name, l := range lists {
		t.Run(name, func(t *testing.T) {
			w, err := l.parse(l.agree)
			if err != nil || len(w) != 1 || !strings.Contains(w[0], "KRvK.rtbw") || !strings.Contains(w[0], "lines 1 and 3") {
				t.Errorf("agreeing duplicate: warnings %q, err %v; want one warning naming the file and both lines", w, err)
			}
			_, err = l.parse(l.differ)
			if !errors.Is(err, ErrDuplicate) || !strings.Contains(err.Error(), "KRvK.rtbw on line 1") || !strings.Contains(err.Error(), "line 3") {
				t.Errorf("conflicting duplicate: %v; want ErrDuplicate naming the file and both lines", err)
			}
		})
	}
}

// Issue 12 item 8: KvKR.rtbw holding KRvK's bytes was accepted (unlisted).
// (The shared KRvK.rtbw is an old generator's, so KBNvK.rtbw plays it.)
// The embedded checksum (tbcheck.txt) tells whose bytes a file holds; the
// digest names it for a listed file. (A header-vs-name check is package
// prefix's.)
func TestVerifyNoticesAFileHoldingAnotherTablesBytes(t *testing.T) {
	syzygy := realdata.Dir(t)
	krvk, err := os.ReadFile(filepath.Join(syzygy, "tables", "KBNvK.rtbw"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, n := range []string{"KvKBN.rtbw", "KQRvK.rtbw"} { // unlisted name, listed name
		if err := os.WriteFile(filepath.Join(dir, n), krvk, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cl, sizes, tr := realLists(t, "sha256")
	for _, opts := range []VerifyOptions{
		{Dirs: []string{dir}, Checksums: &cl, Sizes: sizes, Trailers: tr},
		{Dirs: []string{dir}, Sizes: sizes, Trailers: tr}, // --no-hash
	} {
		rep, err := Verify(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range rep.Files {
			if f.Verdict != VerdictMismatch || !strings.Contains(strings.Join(f.Problems, "\n"), "holds KBNvK.rtbw's bytes") {
				t.Errorf("hash %v: %s: verdict %s, problems %q; want a mismatch naming KBNvK.rtbw", opts.Checksums != nil, f.Name, f.Verdict, f.Problems)
			}
		}
		if !rep.ProblemsFound {
			t.Error("not a problem")
		}
	}
}

func TestVerifyRefusesTooManyJobs(t *testing.T) {
	cl := ChecksumList{Algo: SHA256, Digests: map[string]string{"x": strings.Repeat("0", 64)}}
	_, err := Verify(context.Background(), VerifyOptions{Dirs: []string{t.TempDir()}, Checksums: &cl, Jobs: 1_000_000})
	if !errors.Is(err, ErrTooManyJobs) {
		t.Fatalf("1e6 jobs: %v", err)
	}
}

// Audit: -c DIR said "odd:1: read odd: is a directory" and a long line
// "odd/longline:1: bufio.Scanner: token too long".
func TestListReadersNameADirectoryAndALongLine(t *testing.T) {
	dir := t.TempDir()
	long := filepath.Join(dir, "long")
	os.WriteFile(long, []byte("# a comment\n\n"+strings.Repeat("a", maxListLine+1)+"\n"), 0o644)
	readers := map[string]func(string) error{
		"checksum list": func(p string) error { _, err := ReadChecksumList(p, ""); return err },
		"sizes list":    func(p string) error { _, _, err := ReadSizes(p); return err },
		"trailer list":  func(p string) error { _, _, err := ReadTrailers(p); return err },
	}
	for kind, read := range readers {
		err := read(dir)
		var pe *fs.PathError
		if !errors.Is(err, ErrListIsDir) || !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), kind+" "+dir+": is a directory, not a file (give a file such as") {
			t.Errorf("%s of a directory: %v", kind, err)
		}
		err = read(long)
		if !errors.Is(err, ErrLongLine) || !strings.HasPrefix(err.Error(), long+":3: line too long: over 65536 bytes, but a "+kind+" line is ") {
			t.Errorf("%s with a long line: %v", kind, err)
		}
	}
}
