//go:build !amd64

package bench

// mapCopy copies from a mapping (mapcopy_amd64.go has why it is not always
// Go's copy).
func mapCopy(dst, src []byte) int { return copy(dst, src) }

// repMovsbFrom: where amd64 switches to REP MOVSB; the tests copy around it
// on every architecture.
const repMovsbFrom = 512
