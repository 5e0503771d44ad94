package prefix

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestSplitReaderAtStraddlesTheBoundary(t *testing.T) {
	table := []byte("0123456789abcdefghij")
	pre := []byte("ABCDEFGH") // stands in for the prefix: must win below 8
	r := &SplitReaderAt{Name: "KRvK.rtbw", Prefix: bytes.NewReader(pre), PrefixLen: 8, Table: bytes.NewReader(table), Size: int64(len(table))}
	for _, c := range []struct {
		off  int64
		n    int
		want string
		err  error
	}{
		{0, 4, "ABCD", nil},
		{6, 4, "GH89", nil},
		{10, 4, "abcd", nil},
		{18, 4, "ij", io.EOF},
		{25, 1, "", io.EOF},
	} {
		p := make([]byte, c.n)
		n, err := r.ReadAt(p, c.off)
		if string(p[:n]) != c.want || !errors.Is(err, c.err) && !(err == nil && c.err == nil) {
			t.Errorf("ReadAt(%d, %d) = %q, %v; want %q, %v", c.n, c.off, p[:n], err, c.want, c.err)
		}
	}
	short := &SplitReaderAt{Name: "KRvK.rtbw", Prefix: bytes.NewReader(pre[:4]), PrefixLen: 8, Table: bytes.NewReader(table), Size: 20}
	if _, err := short.ReadAt(make([]byte, 8), 0); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("shrunk prefix: %v", err)
	}
}
