package bench

import "golang.org/x/sys/cpu"

// repMovsb copies n bytes from src to dst with one REP MOVSB; the ranges
// must not overlap.
//
//go:noescape
func repMovsb(dst, src *byte, n uintptr)

// mapCopy copies from a mapping as a C reader's memcpy does: on a CPU with
// fast REP MOVSB (ERMS), with REP MOVSB, which is what glibc's memcpy and
// the kernel's copy_to_user (pread's copy) use for a 4 KiB read there. Go's
// copy moves such a block with an AVX loop instead, 40-80 ns slower for 4
// KiB from a random page here (docs/performance.md): a cost of Go's, not of
// mmap's, that would tilt `bench probe --io pread` against `--io mmap`.
func mapCopy(dst, src []byte) int {
	n := min(len(dst), len(src))
	if n < repMovsbFrom || !cpu.X86.HasERMS {
		return copy(dst, src)
	}
	repMovsb(&dst[0], &src[0], uintptr(n))
	return n
}
