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
	"testing"

	"github.com/tbhost/tbhost/prefix/prefixtest"
)

var fuzzNames = []string{"KRvK.rtbw", "KRvK.rtbz", "KQvKQ.rtbw", "KPvKP.rtbw", "KPvKP.rtbz", "KRPvKR.rtbw", "KPPvKP.rtbz", "KBNvK.rtbz", "KNvKP.rtbw", "KRvKP.rtbz",
	"KvKR.rtbw", "KNvKR.rtbw", "KPvKN.rtbw"} // the last three: colour-swapped names, for mislabelled seeds

func nameIndex(name string) uint8 {
	for i, n := range fuzzNames {
		if n == name {
			return uint8(i)
		}
	}
	return 0
}

// addSeed adds a table as a seed; a large one as its first 16 KiB with the
// real size claimed (the parser reads only the header), so mutations stay fast.
func addSeed(f *testing.F, b []byte, idx uint8) {
	const keep = 16 << 10
	if len(b) <= keep {
		f.Add(b, idx, uint32(0))
		return
	}
	f.Add(b[:keep], idx, uint32((len(b)-16)/64))
}

// FuzzParse feeds hostile bytes to the parser: it must never panic, never
// read (so never allocate) more than its header bound, and anything it
// accepts must be self-consistent. `go test` runs the seeds (synthetic and,
// when present, real tables and their truncations); `go test -fuzz
// FuzzParse ./prefix/` searches further.
func FuzzParse(f *testing.F) {
	for _, spec := range synthSpecs() {
		tb, err := prefixtest.Build(spec)
		if err != nil {
			f.Fatal(err)
		}
		addSeed(f, tb.Bytes, nameIndex(spec.Name))
	}
	files, _ := filepath.Glob("../../shared/syzygy/tables/*.rtb[wz]")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		name := filepath.Base(p)
		fuzzNames := append(fuzzNames[:len(fuzzNames):len(fuzzNames)], name)
		idx := nameIndex(name)
		if fuzzNames[idx] != name {
			continue // seed only names the target knows, so the seed means what it says
		}
		addSeed(f, b, idx)
		f.Add(b[:len(b)/2], idx, uint32(0)) // truncated
	}
	// Mislabelled tables (issue 12 item 8): another material's bytes under a
	// name with the colours swapped; the parser must refuse them.
	for _, m := range []struct{ bytes, name string }{{"KRvK.rtbw", "KvKR.rtbw"}, {"KRvKN.rtbw", "KNvKR.rtbw"}, {"KNvKP.rtbw", "KPvKN.rtbw"}} {
		tb, err := prefixtest.Build(prefixtest.Spec{Name: m.bytes})
		if err != nil {
			f.Fatal(err)
		}
		addSeed(f, tb.Bytes, nameIndex(m.name))
		if b, err := os.ReadFile(filepath.Join("../../shared/syzygy/tables", m.bytes)); err == nil {
			addSeed(f, b, nameIndex(m.name))
		}
	}
	f.Add([]byte("version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 80\n"), uint8(0), uint32(0))
	f.Add([]byte("<html><body>404</body></html>"), uint8(1), uint32(0))
	f.Add(bytes.Repeat([]byte{0xFF}, 208), uint8(2), uint32(1<<31))

	f.Fuzz(func(t *testing.T, data []byte, nameIdx uint8, claim uint32) {
		name := fuzzNames[int(nameIdx)%len(fuzzNames)]
		size := int64(len(data))
		if claim != 0 {
			size = int64(claim)<<6 + 16 // a file that claims to be larger than the bytes behind it
		}
		cr := &countingReader{r: bytes.NewReader(data)}
		l, err := Parse(name, cr, size)
		if cr.read > maxHeader || cr.max > maxHeader {
			t.Fatalf("read %d bytes (largest read %d), bound %d", cr.read, cr.max, maxHeader)
		}
		// The material check alone reads a few dozen bytes and agrees with the
		// whole parse: what it refuses as another material, Parse refuses.
		mr := &countingReader{r: bytes.NewReader(data)}
		merr := CheckMaterial(name, mr, size)
		if mr.read > 64 {
			t.Fatalf("the material check read %d bytes", mr.read)
		}
		if err == nil && merr != nil {
			t.Fatalf("Parse accepts what CheckMaterial refuses: %v", merr)
		}
		if errors.Is(merr, ErrMaterial) && !errors.Is(err, ErrMaterial) && !errors.Is(err, ErrSize) {
			t.Fatalf("CheckMaterial: %v; Parse: %v", merr, err)
		}
		if err != nil {
			if l != nil {
				t.Fatal("layout returned with an error")
			}
			return
		}
		if l.Prefix%64 != 0 || l.Prefix < 64 || l.Prefix > size-16 || size%64 != 16 {
			t.Fatalf("accepted prefix %d of size %d", l.Prefix, size)
		}
		if l.BytesRead != l.Header.Size || l.SparsePrefix > l.Prefix {
			t.Fatalf("read %d, header %d, sparse prefix %d, prefix %d", l.BytesRead, l.Header.Size, l.SparsePrefix, l.Prefix)
		}
		checkSections(t, l)
		if int64(len(data)) >= l.Prefix {
			_ = l.CheckPrefixBytes(data[:l.Prefix]) // must not panic
		}
	})
}

// FuzzChecker streams hostile prefix bytes (a damaged store file) through the
// checker of a valid layout: never a panic, and only the true prefix passes.
func FuzzChecker(f *testing.F) {
	specs := goodSpecs()
	layouts := make([]*Layout, len(specs))
	valid := make([][]byte, len(specs))
	for i, s := range specs {
		tb, err := prefixtest.Build(s)
		if err != nil {
			f.Fatal(err)
		}
		l, err := Parse(s.Name, bytes.NewReader(tb.Bytes), int64(len(tb.Bytes)))
		if err != nil {
			f.Fatal(err)
		}
		layouts[i], valid[i] = l, tb.Bytes[:l.Prefix]
		f.Add(uint8(i), valid[i], uint16(7))
		f.Add(uint8(i), tb.Bytes[:l.SparsePrefix], uint16(1))
	}
	f.Fuzz(func(t *testing.T, which uint8, p []byte, chunk uint16) {
		i := int(which) % len(layouts)
		c := layouts[i].NewChecker()
		step := int(chunk)%4096 + 1
		var err error
		for rest := p; len(rest) > 0 && err == nil; {
			n := min(step, len(rest))
			_, err = c.Write(rest[:n])
			rest = rest[n:]
		}
		if err == nil {
			err = c.Close()
		}
		if bytes.Equal(p, valid[i]) && err != nil {
			t.Fatalf("the true prefix fails: %v", err)
		}
		if err == nil && int64(len(p)) == layouts[i].Prefix && !bytes.Equal(p[:layouts[i].Header.Size], valid[i][:layouts[i].Header.Size]) {
			t.Fatal("a prefix with a different header passed")
		}
	})
}

// FuzzCopyAndDigest: for any length (up to several chunks) and any read
// pattern, copyAndDigest writes exactly the input and digests exactly the
// bytes it wrote (the manifest SHA-256 is the SHA-256 of the .prefix file).
// Lengths are whole chunks plus a remainder, so mutations reach the chunk
// hand-off that once corrupted digests of prefixes over 4 MiB.
func FuzzCopyAndDigest(f *testing.F) {
	f.Add(int64(1), uint8(0), uint32(0), uint16(0))
	f.Add(int64(2), uint8(0), uint32(1), uint16(4093))
	f.Add(int64(3), uint8(1), uint32(digestChunk-1), uint16(0))
	f.Add(int64(4), uint8(3), uint32(1), uint16(511))
	f.Add(int64(5), uint8(8), uint32(12345), uint16(0))
	f.Fuzz(func(t *testing.T, seed int64, wholeChunks uint8, rest uint32, step uint16) {
		n := int(wholeChunks%10)*digestChunk + int(rest%digestChunk)
		src := make([]byte, n)
		rand.New(rand.NewSource(seed)).Read(src)
		var r io.Reader = bytes.NewReader(src)
		if step > 0 {
			r = &shortReader{r: r, max: int(step)}
		}
		var out bytes.Buffer
		h := sha256.New()
		got, err := copyAndDigest(context.Background(), &out, r, h, newChunks())
		if err != nil || got != int64(n) {
			t.Fatalf("%d bytes: copied %d, %v", n, got, err)
		}
		if !bytes.Equal(out.Bytes(), src) {
			t.Fatalf("%d bytes: written bytes differ from the input", n)
		}
		if sum := hex.EncodeToString(h.Sum(nil)); sum != sha256Hex(src) {
			t.Fatalf("%d bytes: digest %s, the bytes hash to %s", n, sum, sha256Hex(src))
		}
	})
}
