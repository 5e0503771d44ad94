package bench

import "testing"

// The REP MOVSB path itself, on every amd64 CPU: mapCopy takes it only where
// the CPU has ERMS, so TestMapCopyMatchesCopy alone could pass on one
// without ever running the assembly.
func TestRepMovsbMatchesCopy(t *testing.T) {
	checkCopier(t, func(dst, src []byte) int {
		n := min(len(dst), len(src))
		if n > 0 {
			repMovsb(&dst[0], &src[0], uintptr(n))
		}
		return n
	})
}
