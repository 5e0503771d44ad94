package prefix

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/prefix/prefixtest"
)

// writeSparseTable writes spec's table with its data section left as a hole
// (extract and verify read only the prefix; the parser only the header and
// the size), so real-size tables cost little disk. It returns the prefix bytes.
func writeSparseTable(t *testing.T, dir string, spec prefixtest.Spec) []byte {
	t.Helper()
	tb, err := prefixtest.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, spec.Name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size := int64(len(tb.Bytes))
	if _, err := f.Write(tb.Bytes[:tb.Prefix]); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(tb.Bytes[size-trailerSize:], size-trailerSize); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return tb.Bytes[:tb.Prefix:tb.Prefix]
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Issue 12 defect 1: prefixes of real 6-piece size (~90 MB, many digest
// chunks) got a wrong SHA-256 in the manifest, so verify called them corrupt.
func TestExtractRealSizePrefixesVerify(t *testing.T) {
	tables, store := t.TempDir(), t.TempDir()
	want := map[string][]byte{}
	for _, name := range []string{"KRPPvKR.rtbw", "KBPPvKB.rtbw"} {
		want[name] = writeSparseTable(t, tables, prefixtest.Spec{Name: name})
		if len(want[name]) < 64<<20 {
			t.Fatalf("%s: prefix of %d bytes is not of real size", name, len(want[name]))
		}
	}
	rep := extract(t, tables, store, ExtractOptions{Jobs: 2})
	if rep.Written != len(want) || len(rep.Failed) != 0 {
		t.Fatalf("extract: %+v", rep)
	}
	man, err := LoadManifest(store)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range want {
		got, err := os.ReadFile(PrefixPath(store, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, b) {
			t.Errorf("%s: the .prefix file is not the table's first %d bytes", name, len(b))
		}
		if e := man[name]; e.SHA256 != sha256Hex(b) {
			t.Errorf("%s: manifest SHA-256 %s, the prefix bytes hash to %s", name, e.SHA256, sha256Hex(b))
		}
	}
	for _, full := range []bool{false, true} {
		v := verify(t, tables, store, full)
		if len(v.Findings) != 0 || v.OK != len(want) {
			t.Errorf("verify (full %v) of a fresh store: %d ok, findings %v", full, v.OK, v.Findings)
		}
	}
}

// The digest copyAndDigest returns for every length around the chunk
// boundaries is the SHA-256 of exactly the bytes it wrote, which are the
// bytes it read.
func TestCopyAndDigestAtChunkBoundaries(t *testing.T) {
	src := make([]byte, 9*digestChunk+3)
	rand.New(rand.NewSource(1)).Read(src)
	for _, n := range []int{0, 1, digestChunk - 1, digestChunk, digestChunk + 1, 2*digestChunk + 1, 4*digestChunk - 1, 9*digestChunk + 3} {
		for _, short := range []bool{false, true} {
			var r io.Reader = bytes.NewReader(src[:n])
			if short {
				r = &shortReader{r: r, max: 4093} // reads that never fill a chunk at once
			}
			var out bytes.Buffer
			h := sha256.New()
			got, err := copyAndDigest(context.Background(), &out, r, h, newChunks())
			if err != nil || got != int64(n) {
				t.Fatalf("n=%d short=%v: copied %d, %v", n, short, got, err)
			}
			if !bytes.Equal(out.Bytes(), src[:n]) {
				t.Fatalf("n=%d short=%v: written bytes differ from the input", n, short)
			}
			if sum := hex.EncodeToString(h.Sum(nil)); sum != sha256Hex(src[:n]) {
				t.Errorf("n=%d short=%v: digest %s, the bytes hash to %s", n, short, sum, sha256Hex(src[:n]))
			}
		}
	}
}

// Through Extract: every manifest digest is the SHA-256 of its .prefix file,
// for tables whose prefixes end just around a chunk boundary.
func TestManifestDigestIsSHA256OfPrefixFile(t *testing.T) {
	tables, store := t.TempDir(), t.TempDir()
	// KRvKP WDL, pawns: 8 subtables; IdxBits sets the sparse index size, so
	// these give prefixes of a few bytes to several chunks.
	specs := []prefixtest.Spec{
		{Name: "KRvK.rtbw"},
		{Name: "KQvK.rtbz", Subs: []prefixtest.Sub{{IdxBits: 1}}},
		{Name: "KRvKP.rtbw", Subs: idxSubs(8, 3)},
		{Name: "KQvKP.rtbw", Subs: idxSubs(8, 2)},
		{Name: "KBvKP.rtbw", Subs: idxSubs(8, 1)},
	}
	for _, s := range specs {
		writeSparseTable(t, tables, s)
	}
	rep := extract(t, tables, store, ExtractOptions{Jobs: 3})
	if rep.Written != len(specs) || len(rep.Failed) != 0 {
		t.Fatalf("extract: %+v", rep)
	}
	man, err := LoadManifest(store)
	if err != nil {
		t.Fatal(err)
	}
	var multi bool
	for _, s := range specs {
		b, err := os.ReadFile(PrefixPath(store, s.Name))
		if err != nil {
			t.Fatal(err)
		}
		multi = multi || len(b) > 3*digestChunk
		if e := man[s.Name]; e.SHA256 != sha256Hex(b) || e.Prefix != int64(len(b)) {
			t.Errorf("%s: manifest %s/%d, file %s/%d", s.Name, e.SHA256, e.Prefix, sha256Hex(b), len(b))
		}
	}
	if !multi {
		t.Fatal("no prefix spans more than three chunks: the test does not test the hand-off")
	}
}

func idxSubs(n int, idxBits uint8) []prefixtest.Sub {
	subs := make([]prefixtest.Sub, n)
	for i := range subs {
		subs[i].IdxBits = idxBits
	}
	return subs
}

type shortReader struct {
	r   io.Reader
	max int
}

func (s *shortReader) Read(p []byte) (int, error) {
	if len(p) > s.max {
		p = p[:s.max]
	}
	return s.r.Read(p)
}

type failingWriter struct{ after int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.after <= 0 {
		return 0, errors.New("digest refused the bytes")
	}
	w.after--
	return len(p), nil
}

// A digest that fails (the header checker refusing a damaged prefix) stops
// the copy early and its error is returned; so does a cancelled context.
func TestCopyAndDigestStops(t *testing.T) {
	src := bytes.NewReader(make([]byte, 64*digestChunk))
	n, err := copyAndDigest(context.Background(), io.Discard, src, &failingWriter{after: 1}, newChunks())
	if err == nil || !strings.Contains(err.Error(), "digest refused") {
		t.Fatalf("digest error: %v", err)
	}
	if n > int64(2+digestChunks)*digestChunk {
		t.Errorf("copied %d bytes after the digest failed at the second chunk", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := copyAndDigest(ctx, nil, bytes.NewReader(make([]byte, 4*digestChunk)), io.Discard, newChunks()); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}
