package prefix

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/prefix/prefixtest"
)

// countingReader counts the bytes handed out by ReadAt.
type countingReader struct {
	r    io.ReaderAt
	read int64
	max  int64 // largest single read
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.read += int64(n)
	if int64(len(p)) > c.max {
		c.max = int64(len(p))
	}
	return n, err
}

func TestRealTables(t *testing.T) {
	files := realTableFiles(t)
	if len(files) != 30 {
		t.Logf("expected 30 real tables, found %d", len(files))
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			cr := &countingReader{r: bytes.NewReader(b)}
			l, err := Parse(filepath.Base(path), cr, int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			if l.Prefix%64 != 0 || l.Prefix == 0 {
				t.Errorf("prefix %d is not a positive multiple of 64", l.Prefix)
			}
			if len(b) == 80 && l.Prefix != 64 {
				t.Errorf("80-byte file: prefix %d, want 64", l.Prefix)
			}
			if cr.read != l.BytesRead || l.BytesRead != l.Header.Size {
				t.Errorf("read %d bytes (reported %d), header is %d: must read exactly the header", cr.read, l.BytesRead, l.Header.Size)
			}
			if err := l.CheckPrefixBytes(b[:l.Prefix]); err != nil {
				t.Errorf("real prefix fails its own check: %v", err)
			}
			if err := l.CheckPrefixBytes(b[:l.SparsePrefix]); err != nil {
				t.Errorf("real sparse prefix fails its own check: %v", err)
			}
			want, err := prefixtest.Count(l.Name, b)
			if err != nil {
				t.Fatal(err)
			}
			got := prefixtest.Counts{Header: l.Header.Size, SparseIndex: l.SparseIndex.Size, BlockLengths: l.BlockLengths.Size,
				Data: l.Data.Size, SparsePrefix: l.SparsePrefix, Prefix: l.Prefix}
			if got != want {
				t.Errorf("parser %+v, independent count %+v", got, want)
			}
			checkSections(t, l)
		})
	}
}

// checkSections checks the sections tile the file in order.
func checkSections(t *testing.T, l *Layout) {
	t.Helper()
	order := []Section{l.Header, l.SparseIndex, l.BlockLengths, l.Padding, l.Data, l.Trailer}
	pos := int64(0)
	for i, s := range order {
		if s.Offset != pos || s.Size < 0 {
			t.Fatalf("section %d at %d+%d, want offset %d", i, s.Offset, s.Size, pos)
		}
		pos = s.End()
	}
	if pos != l.Size {
		t.Fatalf("sections end at %d, file size %d", pos, l.Size)
	}
	if l.Padding.Size >= 64 || l.Trailer.Size != 16 || l.SparsePrefix != l.BlockLengths.Offset {
		t.Fatalf("padding %d, trailer %d, sparse prefix %d", l.Padding.Size, l.Trailer.Size, l.SparsePrefix)
	}
	sp, bl := l.SparseIndex.Offset, l.BlockLengths.Offset
	last := l.Prefix
	for i, st := range l.Subtables {
		if st.SparseIndex.Offset != sp || st.BlockLengths.Offset != bl {
			t.Fatalf("subtable %d: index at %d, lengths at %d; want %d, %d", i, st.SparseIndex.Offset, st.BlockLengths.Offset, sp, bl)
		}
		sp, bl = st.SparseIndex.End(), st.BlockLengths.End()
		if !st.SingleValue {
			if st.Data.Offset%64 != 0 || st.Data.Offset < last || st.Data.Size != int64(st.RealNumBlocks)*st.BlockSize() {
				t.Fatalf("subtable %d: data %+v after %d", i, st.Data, last)
			}
			last = st.Data.End()
		}
	}
}

func synthSpecs() []prefixtest.Spec {
	ns := func(name string, s prefixtest.Sub) []prefixtest.Sub {
		subs := make([]prefixtest.Sub, prefixtest.NumSubtables(name))
		for i := range subs {
			subs[i] = s
		}
		return subs
	}
	return []prefixtest.Spec{
		{Name: "KRvK.rtbw"},
		{Name: "KRvK.rtbz"},
		{Name: "KBvK.rtbw", Subs: ns("KBvK.rtbw", prefixtest.Sub{Single: true})},
		{Name: "KBvK.rtbz", Subs: ns("KBvK.rtbz", prefixtest.Sub{Single: true})},
		{Name: "KQvKQ.rtbw", Subs: []prefixtest.Sub{{NumSyms: 7, IdxBits: 8, Extra: 3}}},
		{Name: "KRNvKB.rtbw", Subs: []prefixtest.Sub{{Single: true}, {BlockSizeLog: 9, NumSyms: 300}}},
		{Name: "KRNvKB.rtbz", Subs: []prefixtest.Sub{{Mapped: true, NumSyms: 5}}},
		{Name: "KQRvKQ.rtbz", Subs: []prefixtest.Sub{{Mapped: true, Wide: true, NumSyms: 3}}},
		{Name: "KPvK.rtbw"},
		{Name: "KPvK.rtbz", Subs: []prefixtest.Sub{{Mapped: true}, {Single: true}, {Mapped: true, Wide: true}, {}}},
		{Name: "KPvKP.rtbw", Subs: ns("KPvKP.rtbw", prefixtest.Sub{IdxBits: 12, Extra: 1})},
		{Name: "KPPvKP.rtbz", Subs: ns("KPPvKP.rtbz", prefixtest.Sub{Mapped: true, NumSyms: 2})},
		{Name: "KRPvKR.rtbw", Subs: ns("KRPvKR.rtbw", prefixtest.Sub{BlockSizeLog: 7})},
	}
}

func TestSyntheticTables(t *testing.T) {
	for _, spec := range synthSpecs() {
		t.Run(spec.Name, func(t *testing.T) {
			tb, err := prefixtest.Build(spec)
			if err != nil {
				t.Fatal(err)
			}
			l, err := Parse(spec.Name, bytes.NewReader(tb.Bytes), int64(len(tb.Bytes)))
			if err != nil {
				t.Fatal(err)
			}
			if l.Header.Size != tb.Header || l.SparseIndex.Size != tb.SparseIndex || l.BlockLengths.Size != tb.BlockLengths ||
				l.Prefix != tb.Prefix || l.SparsePrefix != tb.SparsePrefix || l.Data.Size != tb.Data {
				t.Errorf("parsed %+v; built header %d sparse %d blen %d prefix %d data %d", l, tb.Header, tb.SparseIndex, tb.BlockLengths, tb.Prefix, tb.Data)
			}
			if len(l.Subtables) != prefixtest.NumSubtables(spec.Name) {
				t.Errorf("%d subtables", len(l.Subtables))
			}
			if err := l.CheckPrefixBytes(tb.Bytes[:l.Prefix]); err != nil {
				t.Error(err)
			}
			checkSections(t, l)
		})
	}
}

func TestAllSingleValueIs80Bytes(t *testing.T) {
	tb, err := prefixtest.Build(prefixtest.Spec{Name: "KNvK.rtbw", Subs: []prefixtest.Sub{{Single: true}, {Single: true}}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := Parse("KNvK.rtbw", bytes.NewReader(tb.Bytes), int64(len(tb.Bytes)))
	if err != nil {
		t.Fatal(err)
	}
	if l.Size != 80 || l.Prefix != 64 || l.Data.Size != 0 {
		t.Fatalf("size %d prefix %d data %d, want 80, 64, 0", l.Size, l.Prefix, l.Data.Size)
	}
}

func mustBuild(t *testing.T, spec prefixtest.Spec) []byte {
	t.Helper()
	tb, err := prefixtest.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	return tb.Bytes
}

func TestRefusals(t *testing.T) {
	good := mustBuild(t, prefixtest.Spec{Name: "KRPvKR.rtbw"})
	lfs := []byte("version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 245328\n")
	html := []byte("<!DOCTYPE html><html><body>503 Service Unavailable</body></html>")
	pad := func(b []byte, size int) []byte {
		return append(append([]byte(nil), b...), make([]byte, size-len(b))...)
	}
	mod := func(off int, v byte) []byte { b := append([]byte(nil), good...); b[off] = v; return b }
	rnd := make([]byte, 4096+16)
	rand.New(rand.NewSource(1)).Read(rnd)
	wrongBlocks := append([]byte(nil), good...)
	// first pairs description of KRPvKR.rtbw: real_num_blocks is at header end + 4
	l, err := Parse("KRPvKR.rtbw", bytes.NewReader(good), int64(len(good)))
	if err != nil {
		t.Fatal(err)
	}
	pairs := 5 + 4*(1+5) + 1
	wrongBlocks[pairs+4]++

	cases := []struct {
		name string
		data []byte
		want error
		text string
	}{
		{"KRPvKR.rtbw", lfs, ErrMagic, "Git LFS pointer"},
		{"KRPvKR.rtbw", pad(lfs, 208), ErrMagic, "Git LFS pointer"},
		{"KRPvKR.rtbw", html, ErrMagic, "HTML"},
		{"KRPvKR.rtbz", good, ErrMagic, "renamed"},
		{"KRPvKR.rtbw", rnd, ErrMagic, "variant"},
		{"KRPvKR.rtbw", append([]byte{0x55, 0x8D, 0xA6, 0x49}, good[4:]...), ErrMagic, "variant"},
		{"KRPvKR.rtbw", good[:len(good)-1], ErrSize, "truncated"},
		{"KRPvKR.rtbw", good[:3], ErrTruncated, "too short"},
		{"KRPvKR.rtbw", good[:80], ErrInconsistent, "larger than the file"},
		{"KRPvKR.rtbw", mod(4, 0x63), ErrInconsistent, "pieces"},
		{"KRPvKR.rtbw", mod(4, 0x51), ErrInconsistent, "pawns"},
		{"KRPvKR.rtbw", mod(4, 0x52), ErrInconsistent, "split"},
		{"KRPvKR.rtbw", mod(7, 0x55), ErrInconsistent, "do not match the material"},
		{"KRPvKR.rtbw", wrongBlocks, ErrInconsistent, "counting back"},
		{"KRRvKR.rtbw", good, ErrInconsistent, "pawns"},
		{"KRPvKR.tbw", good, ErrName, ".rtbw"},
		{"KXvK.rtbw", good, ErrName, "piece letter"},
		{"KRvKRKR.rtbw", good, ErrName, "king"},
	}
	for _, c := range cases {
		l, err := Parse(c.name, bytes.NewReader(c.data), int64(len(c.data)))
		if err == nil {
			t.Errorf("%s (%d bytes): accepted %+v", c.name, len(c.data), l)
			continue
		}
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) || !strings.HasPrefix(err.Error(), c.name+": ") {
			t.Errorf("%s: error %q, want %v mentioning %q, prefixed with the name", c.name, err, c.want, c.text)
		}
	}
	_ = l
}

// Every truncation of a real and of a synthetic table is refused without panic.
func TestTruncationsRefused(t *testing.T) {
	files := map[string][]byte{"KPvK.rtbz": mustBuild(t, prefixtest.Spec{Name: "KPvK.rtbz", Subs: []prefixtest.Sub{{Mapped: true}, {Single: true}, {Mapped: true, Wide: true}, {}}})}
	if _, err := os.Stat("../go.mod"); err == nil {
		for _, p := range []string{"KPvKP.rtbw", "KRvKP.rtbz", "KQvK.rtbw"} {
			if b, err := os.ReadFile(filepath.Join(realTablesOrEmpty(t), p)); err == nil {
				files[p] = b
			}
		}
	}
	for name, b := range files {
		for n := 0; n < len(b); n++ {
			if n > 4096 && n%61 != 0 { // every cut in the header region, a sample after
				continue
			}
			_, err := Parse(name, bytes.NewReader(b[:n]), int64(n))
			if err == nil {
				t.Fatalf("%s cut to %d bytes was accepted", name, n)
			}
		}
		// The size claims the whole file but the reader stops early: a short read.
		_, err := Parse(name, bytes.NewReader(b[:10]), int64(len(b)))
		if !errors.Is(err, ErrTruncated) {
			t.Errorf("%s: short read gave %v, want ErrTruncated", name, err)
		}
	}
}

func realTablesOrEmpty(t *testing.T) string {
	files, _ := filepath.Glob("../../shared/syzygy/tables/*.rtbw")
	if len(files) == 0 {
		return t.TempDir()
	}
	return "../../shared/syzygy/tables"
}

// A hostile file that claims to be huge and declares the largest symbol
// tables: the parser must stop at its header bound, never allocate more.
func TestHostileHeaderIsBounded(t *testing.T) {
	b := append([]byte{0x71, 0xE8, 0x23, 0x5D, 0x73}, make([]byte, 4*6)...)
	b = append(b, 0) // even
	for i := 0; i < 8; i++ {
		b = append(b, 0, 10, 10, 0, 1, 0, 0, 0, 255, 0) // h = 256
		b = append(b, make([]byte, 512)...)
		b = append(b, 0xFF, 0xFF) // 65535 symbols
		b = append(b, bytes.Repeat([]byte{0xFF}, 3*65535+1)...)
	}
	// pieces: KRPvKR with pawns first
	copy(b[5:], []byte{0, 0x11, 0x66, 0x44, 0xEE, 0xCC})
	huge := int64(1)<<50 + 16
	cr := &countingReader{r: bytes.NewReader(b)}
	_, err := Parse("KRPvKR.rtbw", cr, huge)
	if err == nil {
		t.Fatal("accepted a hostile header")
	}
	if cr.read > maxHeader || cr.max > maxHeader {
		t.Fatalf("read %d bytes (largest read %d) for a hostile header; bound is %d", cr.read, cr.max, maxHeader)
	}
}

func TestCheckPrefixBytesRefuses(t *testing.T) {
	b := mustBuild(t, prefixtest.Spec{Name: "KQvKQ.rtbw", Subs: []prefixtest.Sub{{NumSyms: 7, IdxBits: 8, Extra: 3}}})
	l, err := Parse("KQvKQ.rtbw", bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	p := func(edit func([]byte) []byte) []byte { return edit(append([]byte(nil), b[:l.Prefix]...)) }
	cases := map[string][]byte{
		"block lengths sum": p(func(x []byte) []byte { x[l.BlockLengths.Offset]++; return x }),
		"not zero":          p(func(x []byte) []byte { x[l.Prefix-1] = 1; return x }),
		"header bytes":      p(func(x []byte) []byte { x[l.Header.Size-1] ^= 1; return x }),
		"is 100 bytes":      b[:100],
	}
	if l.Padding.Size == 0 {
		delete(cases, "not zero")
	}
	for want, data := range cases {
		err := l.CheckPrefixBytes(data)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "KQvKQ.rtbw") {
			t.Errorf("%s: got %v", want, err)
		}
	}
}
