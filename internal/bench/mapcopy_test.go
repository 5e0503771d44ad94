package bench

import (
	"bytes"
	"testing"
)

// mapCopy copies exactly what copy does, at every size around the switch to
// REP MOVSB and at unaligned ends, and never past the shorter slice.
func TestMapCopyMatchesCopy(t *testing.T) { checkCopier(t, mapCopy) }

// checkCopier checks that cp copies as Go's copy does.
func checkCopier(t *testing.T, cp func(dst, src []byte) int) {
	t.Helper()
	src := make([]byte, 3*4096+7)
	for i := range src {
		src[i] = byte(i*7 + 3)
	}
	for _, size := range []int{0, 1, 63, repMovsbFrom - 1, repMovsbFrom, repMovsbFrom + 1, 4095, 4096, 4097, 3 * 4096} {
		for _, off := range []int{0, 1, 5, 4096} {
			if off+size > len(src) {
				continue
			}
			dst := make([]byte, size+16) // guard bytes after the copy
			for i := range dst {
				dst[i] = 0xAA
			}
			n := cp(dst[:size], src[off:])
			if n != size {
				t.Fatalf("size %d off %d: copied %d bytes", size, off, n)
			}
			if !bytes.Equal(dst[:size], src[off:off+size]) {
				t.Fatalf("size %d off %d: bytes differ", size, off)
			}
			if !bytes.Equal(dst[size:], bytes.Repeat([]byte{0xAA}, 16)) {
				t.Fatalf("size %d off %d: wrote past the destination", size, off)
			}
		}
	}
	// a source shorter than the destination: its length is copied
	dst := make([]byte, 4096)
	if n := cp(dst, src[:1000]); n != 1000 || !bytes.Equal(dst[:1000], src[:1000]) || dst[1000] != 0 {
		t.Fatalf("short source: copied %d", n)
	}
}
