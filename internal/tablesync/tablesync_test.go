package tablesync

import (
	"strings"
	"testing"
)

func TestParseSet(t *testing.T) {
	for spec, want := range map[string][]int{"3-7": {3, 4, 5, 6, 7}, "6": {6}, "3-5,7": {3, 4, 5, 7}, " 3 , 4 ": {3, 4}} {
		s, err := ParseSet(spec)
		if err != nil {
			t.Errorf("%q: %v", spec, err)
			continue
		}
		for n := 1; n <= 8; n++ {
			in := false
			for _, w := range want {
				in = in || w == n
			}
			if s.Has(n) != in {
				t.Errorf("%q: Has(%d) = %v", spec, n, s.Has(n))
			}
		}
	}
	for _, bad := range []string{"", "2-7", "3-8", "7-3", "x", "3-", "-7", "3--5"} {
		if _, err := ParseSet(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestTableNames(t *testing.T) {
	for name, pieces := range map[string]int{"KQvK.rtbw": 3, "KBNvK.rtbz": 4, "KRPPvKRP.rtbw": 7, "KvK.rtbw": 2} {
		if !IsTableName(name) || Pieces(name) != pieces {
			t.Errorf("%s: table %v, %d pieces, want %d", name, IsTableName(name), Pieces(name), pieces)
		}
	}
	for _, bad := range []string{"KQvK.rtbw.part", "kqvk.rtbw", "KQvK", "QvK.rtbw", "KQvK.rtbx", "../KQvK.rtbw", "KXvK.rtbw"} {
		if IsTableName(bad) {
			t.Errorf("%q is not a table name", bad)
		}
	}
}

const listing = `drwxr-xr-x           4096 2026/12/01 13:59:18 .
-r--r--r--           7632 2026/12/01 13:59:18 KBNvK.rtbw
lrwxrwxrwx             10 2026/12/01 13:59:18 link.rtbw
-rw-r--r--             12 2026/12/01 13:59:18 README
drwxr-xr-x           4096 2026/12/01 13:59:18 sub
-r--r--r--          1,272 2026/12/01 13:59:18 sub/KQvK.rtbz
-r--r--r--            272 2026/12/01 13:59:18 .staging/KRvK.rtbw
`

func TestParseListing(t *testing.T) {
	files, warn, err := ParseListing(listing)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0] != (SourceFile{Rel: "KBNvK.rtbw", Name: "KBNvK.rtbw", Size: 7632}) ||
		files[1] != (SourceFile{Rel: "sub/KQvK.rtbz", Name: "KQvK.rtbz", Size: 1272}) || len(warn) != 0 {
		t.Fatalf("got %+v, warnings %q", files, warn)
	}
	// the same table at two paths: the first is kept, with a warning; with
	// different sizes it is an error
	dup := listing + "-r--r--r--           7632 2026/12/01 13:59:18 z/KBNvK.rtbw\n"
	if files, warn, err := ParseListing(dup); err != nil || len(files) != 2 || len(warn) != 1 || !strings.Contains(warn[0], "z/KBNvK.rtbw") {
		t.Errorf("duplicate, same size: %+v %q %v", files, warn, err)
	}
	if _, _, err := ParseListing(listing + "-r--r--r--           7633 2026/12/01 13:59:18 z/KBNvK.rtbw\n"); err == nil {
		t.Error("duplicate with another size accepted")
	}
	for _, bad := range []string{
		"-r--r--r--  12 2026/12/01 13:59:18 ../KQvK.rtbw",
		"-r--r--r--  12 2026/12/01 13:59:18 /etc/KQvK.rtbw",
		"-r--r--r--  12 2026/12/01 13:59:18 a//KQvK.rtbw",
		"-r--r--r--  -1 2026/12/01 13:59:18 KQvK.rtbw",
		"-r--r--r--  1e9 2026/12/01 13:59:18 KQvK.rtbw",
		"garbage",
	} {
		if _, _, err := ParseListing(bad + "\n"); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseProgress2(t *testing.T) {
	if n, ok := parseProgress2("      1,234,567  45%   10.23MB/s    0:00:12 (xfr#3, to-chk=10/20)"); !ok || n != 1234567 {
		t.Errorf("got %d %v", n, ok)
	}
	if n, ok := parseProgress2("        1234567 100%    1.18GB/s    0:00:00 (xfr#30, to-chk=0/30)"); !ok || n != 1234567 {
		t.Errorf("got %d %v", n, ok)
	}
	for _, l := range []string{"TBHOST-LANDED 7632 KBNvK.rtbw", "", "sending incremental file list"} {
		if _, ok := parseProgress2(l); ok {
			t.Errorf("%q read as progress", l)
		}
	}
}

// FuzzParseListing: the listing comes from the old host. Whatever it
// holds, an accepted listing names each table once, at a clean relative
// path inside the source, with a size that is a number of bytes.
func FuzzParseListing(f *testing.F) {
	f.Add(listing)
	f.Add("-r--r--r--  12 2026/12/01 13:59:18 a b/KQvK.rtbw\n")
	f.Add("-r--r--r--  12 2026/12/01 13:59:18 ./KQvK.rtbw\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		files, _, err := ParseListing(in)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, f := range files {
			if !IsTableName(f.Name) || seen[f.Name] || f.Size < 0 {
				t.Fatalf("accepted %+v", f)
			}
			seen[f.Name] = true
			if f.Rel == "" || strings.HasPrefix(f.Rel, "/") || strings.HasPrefix(f.Rel, "../") || strings.Contains(f.Rel, "/../") ||
				strings.Contains(f.Rel, "//") || !strings.HasSuffix(f.Rel, f.Name) || strings.ContainsAny(f.Rel, "\x00\n\r") {
				t.Fatalf("path %q accepted", f.Rel)
			}
		}
	})
}
