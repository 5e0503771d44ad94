package prefix

import (
	"errors"
	"fmt"
	"io"
)

// SplitReaderAt serves a table from two caller-opened io.ReaderAt (mmaped
// files, for instance): the first PrefixLen bytes from Prefix, the rest
// from Table, splitting a read that straddles the boundary. Reader uses it
// over its two files (pread). It checks nothing: validate the pair with Open first.
type SplitReaderAt struct {
	Name      string // table name, for errors
	Prefix    io.ReaderAt
	PrefixLen int64
	Table     io.ReaderAt
	Size      int64 // table size
}

// ReadAt implements io.ReaderAt over the whole table.
func (r *SplitReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s: read at negative offset %d", r.Name, off)
	}
	if off >= r.Size {
		return 0, io.EOF
	}
	n := 0
	if off < r.PrefixLen {
		k := int(min(int64(len(p)), r.PrefixLen-off))
		m, err := r.Prefix.ReadAt(p[:k], off)
		n += m
		if m < k {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return n, fmt.Errorf("%s: read prefix: %w", r.Name, err)
		}
	}
	if n < len(p) {
		m, err := r.Table.ReadAt(p[n:], off+int64(n))
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
