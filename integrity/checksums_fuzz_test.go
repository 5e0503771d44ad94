package integrity

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/realdata"
)

// The published lists are outside input (downloaded, hand-edited, or
// truncated by a full disk). These targets check that any input either
// fails or yields entries a table directory can hold, with values of the
// list's own kind, and that what was accepted survives being written back
// in the list's format.

// publishedSeed adds the head of a published list from ../shared, when it
// is there (the seed corpus also holds inline cases, so it never is empty).
func publishedSeed(f *testing.F, rel ...string) {
	data, err := realdata.Find()
	if err != nil {
		return
	}
	b, err := os.ReadFile(filepath.Join(append([]string{data, "checksums"}, rel...)...))
	if err != nil {
		return
	}
	if len(b) > 4096 {
		b = b[:bytes.LastIndexByte(b[:4096], '\n')+1]
	}
	f.Add(b)
}

func checkNames(t *testing.T, names []string) {
	t.Helper()
	for _, n := range names {
		if !validName(n) {
			t.Fatalf("accepted name %q is not a file name", n)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func FuzzParseChecksumList(f *testing.F) {
	publishedSeed(f, "syzygy-tables.info", "sha256")
	publishedSeed(f, "syzygy-tables.info", "md5")
	publishedSeed(f, "syzygy-tables.info", "stats-regular", "3-4-5.rtbw.md5")
	f.Add([]byte("fe211316630db82fd1a355740639b715  KBBBvK.rtbw\n"))
	f.Add([]byte("# comment\n\nFE211316630DB82FD1A355740639B715 *dir/KBBBvK.rtbw\n"))
	f.Add([]byte("fe21  a\nfe211316630db82fd1a355740639b715  a\n"))
	f.Add([]byte("00  x\n00  x\n01  x\n"))
	f.Add([]byte("zz  ../..\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ParseChecksumList(bytes.NewReader(b), "fuzz.sha256", "")
		if err != nil {
			return
		}
		if len(l.Digests) == 0 {
			t.Fatal("accepted a list with no entries")
		}
		if l.Algo.HexLen() == 0 {
			t.Fatalf("accepted list has no algorithm: %+v", l)
		}
		names := sortedKeys(l.Digests)
		checkNames(t, names)
		var out bytes.Buffer
		for _, n := range names {
			d := l.Digests[n]
			if len(d) != l.Algo.HexLen() || strings.ToLower(d) != d {
				t.Fatalf("%s: digest %q is not %d lower-case hex digits of %s", n, d, l.Algo.HexLen(), l.Algo)
			}
			if _, err := hex.DecodeString(d); err != nil {
				t.Fatalf("%s: digest %q: %v", n, d, err)
			}
			fmt.Fprintf(&out, "%s  %s\n", d, n)
		}
		again, err := ParseChecksumList(&out, "again.sha256", l.Algo)
		if err != nil {
			t.Fatalf("written back, the list no longer parses: %v\n%s", err, out.Bytes())
		}
		if len(again.Digests) != len(l.Digests) || len(again.Warnings) != 0 {
			t.Fatalf("round trip: %d entries became %d (warnings %q)", len(l.Digests), len(again.Digests), again.Warnings)
		}
		for n, d := range l.Digests {
			if again.Digests[n] != d {
				t.Fatalf("round trip: %s: %s became %s", n, d, again.Digests[n])
			}
		}
	})
}

func FuzzParseSizes(f *testing.F) {
	publishedSeed(f, "syzygy-tables.info", "bytes.tsv")
	f.Add([]byte("1234\tKBBBvK.rtbw\n"))
	f.Add([]byte("1\ta\n1\ta\n2\ta\n"))
	f.Add([]byte("-1\ta\n"))
	f.Add([]byte("9223372036854775808\ta\n"))
	f.Add([]byte("+7\ta b\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		sizes, _, err := ParseSizes(bytes.NewReader(b), "fuzz.tsv")
		if err != nil {
			return
		}
		names := sortedKeys(sizes)
		checkNames(t, names)
		var out bytes.Buffer
		for _, n := range names {
			if sizes[n] < 0 {
				t.Fatalf("%s: negative size %d accepted", n, sizes[n])
			}
			fmt.Fprintf(&out, "%d\t%s\n", sizes[n], n)
		}
		again, warn, err := ParseSizes(&out, "again.tsv")
		if err != nil || len(warn) != 0 || len(again) != len(sizes) {
			t.Fatalf("round trip: %v, warnings %q, %d of %d entries", err, warn, len(again), len(sizes))
		}
		for n, s := range sizes {
			if again[n] != s {
				t.Fatalf("round trip: %s: %d became %d", n, s, again[n])
			}
		}
	})
}

func FuzzParseTrailers(f *testing.F) {
	publishedSeed(f, "syzygy-tables.info", "tbcheck.txt")
	publishedSeed(f, "syzygy1-tb", "wdl345.txt")
	f.Add([]byte("KBBBvK.rtbw: fe211316630db82fd1a355740639b715\n"))
	f.Add([]byte("a: FE211316630DB82FD1A355740639B715\na:fe211316630db82fd1a355740639b715\n"))
	f.Add([]byte("a: fe2113\n"))
	f.Add([]byte(": fe211316630db82fd1a355740639b715\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		sums, _, err := ParseTrailers(bytes.NewReader(b), "fuzz.txt")
		if err != nil {
			return
		}
		names := sortedKeys(sums)
		checkNames(t, names)
		var out bytes.Buffer
		for _, n := range names {
			s := sums[n]
			if raw, err := hex.DecodeString(s); err != nil || len(raw) != TrailerSize || strings.ToLower(s) != s {
				t.Fatalf("%s: trailer %q is not %d bytes of lower-case hex", n, s, TrailerSize)
			}
			fmt.Fprintf(&out, "%s: %s\n", n, s)
		}
		again, warn, err := ParseTrailers(&out, "again.txt")
		if err != nil || len(warn) != 0 || len(again) != len(sums) {
			t.Fatalf("round trip: %v, warnings %q, %d of %d entries", err, warn, len(again), len(sums))
		}
		for n, s := range sums {
			if again[n] != s {
				t.Fatalf("round trip: %s: %s became %s", n, s, again[n])
			}
		}
	})
}

// Found by FuzzParseChecksumList: "<hex> **" (binary mode, a file named
// "*") was read as "*", but written back in text mode ("<hex>  *") it
// was read as "" and refused; the parser dropped a "*" after the text-mode
// marker too. One marker character is dropped, the name is the rest.
func TestChecksumListModeMarker(t *testing.T) {
	const h = "fe211316630db82fd1a355740639b715"
	for line, want := range map[string]string{
		h + "  KBBBvK.rtbw": "KBBBvK.rtbw", // text mode
		h + " *KBBBvK.rtbw": "KBBBvK.rtbw", // binary mode
		h + " KBBBvK.rtbw":  "KBBBvK.rtbw", // one space, no marker
		h + "  *x":          "*x",          // text mode, a name starting with *
		h + " **":           "*",
	} {
		l, err := ParseChecksumList(strings.NewReader(line+"\n"), "t.md5", "")
		if err != nil {
			t.Errorf("%q: %v", line, err)
			continue
		}
		if _, ok := l.Digests[want]; !ok || len(l.Digests) != 1 {
			t.Errorf("%q: names %v, want %q", line, sortedKeys(l.Digests), want)
		}
	}
}
