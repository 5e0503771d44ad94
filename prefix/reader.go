package prefix

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/tbhost/tbhost/internal/sysread"
)

// ErrNoPrefix: the store has no prefix for the table (the caller may fall
// back to reading the table alone).
var ErrNoPrefix = errors.New("no prefix in the store")

// Reader serves a table through its prefix: reads below the prefix length
// come from the prefix file (NVMe), the rest from the table (HDD), both with
// pread; a read that straddles the boundary is split. Safe for concurrent use.
type Reader struct {
	table, prefix *os.File
	layout        *Layout
	plen          int64
	split         SplitReaderAt
}

// Open opens table through the prefix store at store. It refuses a prefix
// whose length is not the table's full or sparse prefix, whose header bytes
// differ from the table's, or, when the store's manifest records it, whose
// table has changed size or mtime since extraction.
//
// Open reads the store's manifest on every call; to open many tables of
// one store, use OpenStore and Store.Open, which read it once.
func Open(tablePath, store string) (*Reader, error) {
	s, err := OpenStore(store)
	if err != nil {
		return nil, err
	}
	return s.Open(tablePath)
}

// Store is a prefix store with its manifest read once, for opening many
// tables: the full 7-piece set's manifest is 3022 lines (~750 KB), and
// reading it for each table made opening them all quadratic (35 s for the
// 3022 tables on a 2-CPU test host).
type Store struct {
	dir string
	man Manifest
}

// OpenStore reads the manifest of the store at dir (a missing manifest is
// empty: prefixes are then checked against their tables only). A table
// re-extracted after OpenStore is checked against the manifest as read.
func OpenStore(dir string) (*Store, error) {
	man, err := LoadManifest(dir)
	if err != nil {
		return nil, err
	}
	return &Store{dir: dir, man: man}, nil
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// Open opens table through the store, with the checks of the package's
// Open.
func (s *Store) Open(tablePath string) (*Reader, error) {
	r, err := OpenPrefix(tablePath, PrefixPath(s.dir, baseName(tablePath)))
	if err != nil {
		return nil, err
	}
	if e, ok := s.man[r.layout.Name]; ok {
		st, err := r.table.Stat()
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("stat %s: %w", tablePath, err)
		}
		if st.Size() != e.Size || mtimeNS(st) != e.MtimeNS || e.Prefix != r.plen {
			r.Close()
			return nil, fmt.Errorf("%s: stale prefix: the table changed since extraction (size %d -> %d, mtime %s -> %s) or the prefix was rewritten; rerun tbhost prefix extract",
				tablePath, e.Size, st.Size(), formatNS(e.MtimeNS), formatNS(mtimeNS(st)))
		}
	}
	return r, nil
}

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

// OpenPrefix opens table with the prefix file at prefixPath (no manifest):
// the length and header checks of Open.
func OpenPrefix(tablePath, prefixPath string) (*Reader, error) {
	l, err := ParseFile(tablePath)
	if err != nil {
		return nil, err
	}
	// Refuse a directory or FIFO at the prefix's name before opening it
	// (opening a FIFO blocks).
	if st, err := os.Stat(prefixPath); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w: the prefix %s is a %s; move it away and rerun tbhost prefix extract", tablePath, ErrNotRegular, prefixPath, sysread.FileKind(st.Mode()))
	}
	table, err := os.Open(tablePath)
	if err != nil {
		return nil, fmt.Errorf("open table: %w", err)
	}
	pf, err := os.Open(prefixPath)
	if err != nil {
		table.Close()
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w (%s)", tablePath, ErrNoPrefix, prefixPath)
		}
		return nil, fmt.Errorf("open prefix: %w", err)
	}
	r := &Reader{table: table, prefix: pf, layout: l}
	if err := r.check(prefixPath); err != nil {
		r.Close()
		return nil, err
	}
	r.split = SplitReaderAt{Name: l.Name, Prefix: pf, PrefixLen: r.plen, Table: table, Size: l.Size}
	return r, nil
}

func (r *Reader) check(prefixPath string) error {
	st, err := r.prefix.Stat()
	if err != nil {
		return fmt.Errorf("stat prefix: %w", err)
	}
	r.plen = st.Size()
	l := r.layout
	if r.plen != l.Prefix && r.plen != l.SparsePrefix {
		return fmt.Errorf("%s: prefix is %d bytes, the table header says %d (full) or %d (sparse): truncated or foreign prefix; rerun tbhost prefix extract", prefixPath, r.plen, l.Prefix, l.SparsePrefix)
	}
	head := make([]byte, l.Header.Size)
	if _, err := r.prefix.ReadAt(head, 0); err != nil {
		return fmt.Errorf("read prefix header %s: %w", prefixPath, err)
	}
	if !bytes.Equal(head, l.head) {
		return fmt.Errorf("%s: prefix header bytes differ from the table's: stale or foreign prefix; rerun tbhost prefix extract --force", prefixPath)
	}
	return nil
}

// Layout is the table's layout as parsed at open time.
func (r *Reader) Layout() *Layout { return r.layout }

// PrefixLen is how many leading bytes are served from the prefix file.
func (r *Reader) PrefixLen() int64 { return r.plen }

// Size is the table's size.
func (r *Reader) Size() int64 { return r.layout.Size }

// ReadAt implements io.ReaderAt over the whole table (os.File.ReadAt is pread).
func (r *Reader) ReadAt(p []byte, off int64) (int, error) { return r.split.ReadAt(p, off) }

// Close closes both files.
func (r *Reader) Close() error {
	return errors.Join(r.prefix.Close(), r.table.Close())
}
