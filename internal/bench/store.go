package bench

import (
	"fmt"
	"io"
)

// sizer is a ReaderAt that knows its size (os.File via Stat, mapped).
type sizer interface{ size() (int64, error) }

func (m *mapped) size() (int64, error) { return int64(len(m.data)), nil }

// storeReader serves table t from its stored prefix below the prefix's
// size and from the table file above it.
// TODO(prefix): replace with the prefix package's store ReaderAt once merged.
func storeReader(t probeTable, prefix, table io.ReaderAt) (tableReader, error) {
	n, err := readerSize(prefix)
	if err != nil {
		return tableReader{}, fmt.Errorf("prefix of %s: %w", t.Name, err)
	}
	return tableReader{R: splitReader{prefix: prefix, n: n, table: table}, SlowFrom: n}, nil
}

type splitReader struct {
	prefix, table io.ReaderAt
	n             int64
}

func (s splitReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.n {
		return s.table.ReadAt(p, off)
	}
	head := p
	if off+int64(len(p)) > s.n {
		head = p[:s.n-off]
	}
	k, err := s.prefix.ReadAt(head, off)
	if err != nil && !(err == io.EOF && k == len(head)) {
		return k, err
	}
	if k == len(p) {
		return k, nil
	}
	m, err := s.table.ReadAt(p[k:], off+int64(k))
	return k + m, err
}

func readerSize(r io.ReaderAt) (int64, error) {
	switch v := r.(type) {
	case sizer:
		return v.size()
	case interface {
		Stat() (interface{ Size() int64 }, error)
	}:
		fi, err := v.Stat()
		if err != nil {
			return 0, err
		}
		return fi.Size(), nil
	}
	if f, ok := r.(interface {
		Seek(int64, int) (int64, error)
	}); ok {
		return f.Seek(0, io.SeekEnd)
	}
	return 0, fmt.Errorf("internal: cannot size %T", r)
}
