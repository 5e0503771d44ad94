//go:build !amd64

package bench

// mapCopy copies from a mapping (mapcopy_amd64.go has why it is not always
// Go's copy).
func mapCopy(dst, src []byte) int { return copy(dst, src) }
