// Package prefix knows where a Syzygy table's prefix ends (header, sparse
// index, block-length lists) and builds, verifies and serves a store of those
// prefixes on fast storage. The format is in docs/syzygy-layout.md of the
// shared material; every parse makes the forward/backward cross-check and
// refuses, with the file name and the reason, anything else.
package prefix

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Reasons a file is refused; test with errors.Is.
var (
	ErrName         = errors.New("not a standard Syzygy table name")
	ErrMagic        = errors.New("wrong magic")
	ErrTruncated    = errors.New("truncated")
	ErrSize         = errors.New("bad file size")
	ErrInconsistent = errors.New("inconsistent header")
)

// FileError names the file a parse refused.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// Section is a byte range of a table file.
type Section struct {
	Offset int64 `json:"offset"`
	Size   int64 `json:"size"`
}

// End is the offset just past the section.
func (s Section) End() int64 { return s.Offset + s.Size }

// Subtable is one pairs description and where its parts sit in the file.
// A single-value subtable has no index, block lengths or data (zero sizes).
type Subtable struct {
	File          int    `json:"file"` // leading pawn's file 0..3 (0 for pawnless tables)
	Side          int    `json:"side"` // 0 or 1 (WDL split tables store both sides)
	Flags         byte   `json:"flags"`
	SingleValue   bool   `json:"single_value"`
	BlockSizeLog  uint8  `json:"block_size_log"` // a block is 1 << BlockSizeLog bytes
	IdxBits       uint8  `json:"idx_bits"`       // one sparse entry per 1 << IdxBits positions
	RealNumBlocks uint32 `json:"real_num_blocks"`
	NumBlocks     uint64 `json:"num_blocks"` // real + extra: entries in the block-length list
	TBSize        uint64 `json:"tb_size"`    // encoded positions

	SparseIndex  Section `json:"sparse_index"`  // 6-byte entries: u32 block, u16 offset
	BlockLengths Section `json:"block_lengths"` // u16 per block: positions in block - 1
	Data         Section `json:"data"`          // real_num_blocks << block_size_log bytes
}

// BlockSize is the size of one compressed block in bytes (0 for single-value).
func (s Subtable) BlockSize() int64 {
	if s.SingleValue {
		return 0
	}
	return int64(1) << s.BlockSizeLog
}

// Layout is what a table file is made of, from its header alone.
type Layout struct {
	Name     string `json:"name"` // base name, e.g. KRvK.rtbw
	Kind     Kind   `json:"kind"`
	Size     int64  `json:"size"`
	Pieces   int    `json:"pieces"`
	Split    bool   `json:"split"`
	HasPawns bool   `json:"has_pawns"`

	Header       Section `json:"header"`        // magic, pieces, pairs descriptions, DTZ maps
	SparseIndex  Section `json:"sparse_index"`  // all subtables' sparse indexes
	BlockLengths Section `json:"block_lengths"` // all subtables' block-length lists
	Padding      Section `json:"padding"`       // zeros up to the next multiple of 64
	Data         Section `json:"data"`          // compressed blocks (per-subtable 64-byte aligned)
	Trailer      Section `json:"trailer"`       // 16-byte checksum

	SparsePrefix int64 `json:"sparse_prefix"` // header + sparse indexes
	Prefix       int64 `json:"prefix"`        // offset of the first data block, a multiple of 64

	Subtables []Subtable `json:"subtables"`

	// BytesRead is how many bytes the parser read from the file.
	BytesRead int64 `json:"bytes_read"`

	head []byte // the header bytes, for open-time checks of a prefix
}

// HeaderBytes returns a copy of the header bytes (Header section) read by the parser.
func (l *Layout) HeaderBytes() []byte { return append([]byte(nil), l.head...) }

// PrefixLen returns the prefix length for an extraction level.
func (l *Layout) PrefixLen(upto Upto) int64 {
	if upto == UptoSparseIndex {
		return l.SparsePrefix
	}
	return l.Prefix
}

// Upto is how far a stored prefix reaches.
type Upto int

// Extraction levels: the whole prefix (up to the first data block) or the
// smaller sparse prefix (header and sparse indexes).
const (
	UptoBlockLengths Upto = iota
	UptoSparseIndex
)

// String returns the flag spelling.
func (u Upto) String() string {
	if u == UptoSparseIndex {
		return "sparse-index"
	}
	return "block-lengths"
}

// ParseUpto reads the --upto flag value.
func ParseUpto(s string) (Upto, error) {
	switch s {
	case "block-lengths", "":
		return UptoBlockLengths, nil
	case "sparse-index":
		return UptoSparseIndex, nil
	}
	return 0, fmt.Errorf("--upto %q: want block-lengths (the full prefix) or sparse-index (smaller)", s)
}

const (
	trailerSize = 16
	// maxHeader bounds what the parser may buffer: 8 subtables with the largest
	// symbol tables and wide DTZ maps stay below 6 MiB.
	maxHeader = 8 << 20
	minSize   = 64 + trailerSize
)

func align64(x int64) int64 { return (x + 63) &^ 63 }

// ParseFile parses the table at path, reading only its header.
func ParseFile(path string) (*Layout, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open table: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat table: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, &FileError{Path: path, Err: fmt.Errorf("%w: not a regular file", ErrSize)}
	}
	l, err := Parse(filepath.Base(path), f, st.Size())
	if err != nil {
		var fe *FileError
		if errors.As(err, &fe) {
			fe.Path = path
		}
		return nil, err
	}
	return l, nil
}

// headReader reads the header incrementally, never past what the parse needs.
type headReader struct {
	r    io.ReaderAt
	size int64
	buf  []byte
}

func (h *headReader) need(end int64) error {
	if end <= int64(len(h.buf)) {
		return nil
	}
	if end > h.size {
		return fmt.Errorf("%w: the header runs to byte %d but the file has only %d bytes", ErrTruncated, end, h.size)
	}
	if end > maxHeader {
		return fmt.Errorf("%w: header would be %d bytes, more than any real table's", ErrInconsistent, end)
	}
	start := int64(len(h.buf))
	h.buf = append(h.buf, make([]byte, end-start)...)
	n, err := h.r.ReadAt(h.buf[start:end], start)
	if int64(n) < end-start {
		h.buf = h.buf[:start+int64(n)]
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("%w: read header bytes %d-%d: %w", ErrTruncated, start, end, err)
	}
	return nil
}

func (h *headReader) u8(off int64) byte   { return h.buf[off] }
func (h *headReader) u16(off int64) int64 { return int64(binary.LittleEndian.Uint16(h.buf[off:])) }
func (h *headReader) u32(off int64) uint32 {
	return binary.LittleEndian.Uint32(h.buf[off:])
}

// Parse reads the layout of the table called name (a base name such as
// KRvK.rtbw: it gives the kind and the piece count) from r, a file of size
// bytes. It reads only the header and pairs descriptions.
func Parse(name string, r io.ReaderAt, size int64) (*Layout, error) {
	l, err := parse(name, r, size)
	if err != nil {
		return nil, &FileError{Path: name, Err: err}
	}
	return l, nil
}

func parse(name string, r io.ReaderAt, size int64) (*Layout, error) {
	kind, mat, err := parseName(filepath.Base(name))
	if err != nil {
		return nil, err
	}
	h := &headReader{r: r, size: size}
	l := &Layout{Name: filepath.Base(name), Kind: kind, Size: size, Pieces: mat.pieces}
	defer func() { l.BytesRead = int64(len(h.buf)) }()

	if err := checkMagic(h, kind); err != nil {
		return nil, err
	}
	if size < minSize || size%64 != trailerSize {
		return nil, fmt.Errorf("%w: %d bytes is not 16 more than a multiple of 64 (at least 80): a truncated or padded copy", ErrSize, size)
	}
	if err := h.need(5); err != nil {
		return nil, err
	}
	layoutByte := h.u8(4)
	l.Split = layoutByte&1 != 0
	l.HasPawns = layoutByte&2 != 0
	if got := int(layoutByte >> 4); got != mat.pieces {
		return nil, fmt.Errorf("%w: layout byte %#02x says %d pieces, the name %s has %d", ErrInconsistent, layoutByte, got, mat.name, mat.pieces)
	}
	if l.HasPawns != (mat.count[1] > 0) {
		return nil, fmt.Errorf("%w: layout byte %#02x disagrees with the name %s about pawns", ErrInconsistent, layoutByte, mat.name)
	}
	if symmetric := isSymmetric(mat.name); l.Split == symmetric {
		return nil, fmt.Errorf("%w: layout byte %#02x split bit disagrees with the material %s", ErrInconsistent, layoutByte, mat.name)
	}
	files, sides := 1, 1
	if l.HasPawns {
		files = 4
	}
	if kind == WDL && l.Split {
		sides = 2
	}
	pp := int64(0)
	if bothSidesHavePawns(mat.name) {
		pp = 1
	}
	n := int64(mat.pieces)

	// Header: per file, order byte(s) and the piece bytes. Reads below ask
	// for everything known to be header so far (each pairs description is
	// at least 2 bytes, a compressed one at least 14), so a header takes few
	// preads and never reads past its end.
	numSubs := int64(files * sides)
	pairsStart := 5 + int64(files)*(1+pp+n)
	pairsStart += pairsStart & 1
	if err := h.need(pairsStart + 2*numSubs); err != nil {
		return nil, err
	}
	off := int64(5)
	pieces := make([][]byte, files)
	for f := 0; f < files; f++ {
		off += 1 + pp
		if err := h.need(off + n); err != nil {
			return nil, err
		}
		pieces[f] = h.buf[off : off+n]
		off += n
	}
	off += off & 1

	// Piece codes per subtable; their types must match the name.
	codes := make([][]byte, files*sides)
	for f := 0; f < files; f++ {
		for s := 0; s < sides; s++ {
			c := make([]byte, n)
			for i, b := range pieces[f] {
				c[i] = (b >> (4 * s)) & 0x0f
			}
			if err := checkCodes(c, mat); err != nil {
				return nil, fmt.Errorf("%w: file %d side %d: %w", ErrInconsistent, f, s, err)
			}
			codes[f*sides+s] = c
		}
	}

	// Pairs descriptions.
	subs := make([]Subtable, 0, files*sides)
	var sparse, blen, data []int64
	for f := 0; f < files; f++ {
		for s := 0; s < sides; s++ {
			st := Subtable{File: f, Side: s}
			rest := 2 * (numSubs - int64(len(subs)) - 1) // later descriptions, at least 2 bytes each
			if err := h.need(off + 2 + rest); err != nil {
				return nil, err
			}
			st.Flags = h.u8(off)
			tb, err := tbSize(codes[f*sides+s], l.HasPawns, pp == 1, f)
			if err != nil {
				return nil, fmt.Errorf("%w: file %d side %d: %w", ErrInconsistent, f, s, err)
			}
			st.TBSize = tb
			if st.Flags&0x80 != 0 {
				st.SingleValue = true
				off += 2
				subs = append(subs, st)
				sparse, blen, data = append(sparse, 0), append(blen, 0), append(data, 0)
				continue
			}
			if err := h.need(off + 14 + rest); err != nil {
				return nil, err
			}
			st.BlockSizeLog = h.u8(off + 1)
			st.IdxBits = h.u8(off + 2)
			extra := h.u8(off + 3)
			st.RealNumBlocks = h.u32(off + 4)
			st.NumBlocks = uint64(st.RealNumBlocks) + uint64(extra)
			maxLen, minLen := h.u8(off+8), h.u8(off+9)
			if maxLen < minLen {
				return nil, fmt.Errorf("%w: subtable %d/%d: max code length %d below min %d", ErrInconsistent, f, s, maxLen, minLen)
			}
			if st.RealNumBlocks == 0 {
				return nil, fmt.Errorf("%w: subtable %d/%d: no blocks but not single-value", ErrInconsistent, f, s)
			}
			hh := int64(maxLen) - int64(minLen) + 1
			if err := h.need(off + 12 + 2*hh + rest); err != nil {
				return nil, err
			}
			numSyms := h.u16(off + 10 + 2*hh)
			off += 12 + 2*hh + 3*numSyms + (numSyms & 1)
			if err := h.need(off + rest); err != nil {
				return nil, err
			}
			// Sizes, refused before they can overflow: everything must fit in the file.
			entries := uint64(1)
			if st.IdxBits < 63 {
				entries = (tb + (uint64(1) << st.IdxBits) - 1) >> st.IdxBits
			}
			if entries > uint64(size)/6 {
				return nil, fmt.Errorf("%w: subtable %d/%d: sparse index of %d entries (idxbits %d) is larger than the file", ErrInconsistent, f, s, entries, st.IdxBits)
			}
			if st.BlockSizeLog > 40 || uint64(st.RealNumBlocks) > uint64(size)>>st.BlockSizeLog {
				return nil, fmt.Errorf("%w: subtable %d/%d: %d blocks of 2^%d bytes are larger than the file", ErrInconsistent, f, s, st.RealNumBlocks, st.BlockSizeLog)
			}
			subs = append(subs, st)
			sparse = append(sparse, int64(6*entries))
			blen = append(blen, int64(2*st.NumBlocks))
			data = append(data, int64(st.RealNumBlocks)<<st.BlockSizeLog)
		}
	}

	// DTZ value maps: 4 per mapped subtable, each at least its count (1 byte,
	// or 2 when wide).
	if kind == DTZ {
		var mins []int64
		for _, st := range subs {
			if st.Flags&0x02 != 0 {
				w := int64(1)
				if st.Flags&0x10 != 0 {
					w = 2
				}
				mins = append(mins, w, w, w, w)
			}
		}
		restAfter := func(k int) int64 {
			var r int64
			for _, m := range mins[k+1:] {
				r += m
			}
			return r
		}
		k := 0
		for _, st := range subs {
			if st.Flags&0x02 == 0 {
				continue
			}
			wide := st.Flags&0x10 != 0
			if wide { // u16 counts and values, even-aligned
				off += off & 1
			}
			for i := 0; i < 4; i++ {
				if err := h.need(off + mins[k] + restAfter(k)); err != nil {
					return nil, err
				}
				if wide {
					off += 2 + 2*h.u16(off)
				} else {
					off += 1 + int64(h.u8(off))
				}
				k++
			}
		}
		off += off & 1
		if err := h.need(off); err != nil {
			return nil, err
		}
	}
	l.Header = Section{0, off}

	// Forward: sparse indexes, then block-length lists, then padding.
	pos := off
	for i := range subs {
		subs[i].SparseIndex = Section{pos, sparse[i]}
		pos += sparse[i]
	}
	l.SparseIndex = Section{off, pos - off}
	l.SparsePrefix = pos
	for i := range subs {
		subs[i].BlockLengths = Section{pos, blen[i]}
		pos += blen[i]
	}
	l.BlockLengths = Section{l.SparsePrefix, pos - l.SparsePrefix}
	l.Prefix = align64(pos)
	l.Padding = Section{pos, l.Prefix - pos}

	// Data, each subtable's blocks starting on a multiple of 64.
	dataAligned := int64(0)
	pos = l.Prefix
	for i := range subs {
		pos = align64(pos)
		subs[i].Data = Section{pos, data[i]}
		pos += data[i]
		dataAligned += align64(data[i])
	}
	backward := size - trailerSize - dataAligned
	if backward != l.Prefix {
		return nil, fmt.Errorf("%w: prefix ends at %d by the header (end of block-length lists) but at %d counting back from the file size (size - 16 - data): a damaged or mislabelled file", ErrInconsistent, l.Prefix, backward)
	}
	l.Data = Section{l.Prefix, size - trailerSize - l.Prefix}
	l.Trailer = Section{size - trailerSize, trailerSize}
	l.Subtables = subs
	l.head = h.buf[:off:off]
	return l, nil
}

func checkMagic(h *headReader, kind Kind) error {
	if h.size < 4 {
		return fmt.Errorf("%w: %d bytes, too short even for the magic number", ErrTruncated, h.size)
	}
	first := int64(4)
	if h.size >= 5 {
		first = 5 // the layout byte too: one read
	}
	if err := h.need(first); err != nil {
		return err
	}
	var got [4]byte
	copy(got[:], h.buf[:4])
	want := kind.magic()
	if got == want {
		return nil
	}
	other := WDL
	if kind == WDL {
		other = DTZ
	}
	switch {
	case got == other.magic():
		return fmt.Errorf("%w: a %s table named %s: renamed file?", ErrMagic, other, kind.Extension())
	case string(got[:]) == "vers":
		return fmt.Errorf("%w: starts with \"vers\": a Git LFS pointer, not the table (run git lfs pull, or download the file itself)", ErrMagic)
	case got[0] == '<' || string(got[:]) == "\r\n<!" || string(got[:]) == "\n<!D":
		return fmt.Errorf("%w: starts with %q: an HTML page (an error page saved as the table?); download it again", ErrMagic, got[:])
	}
	return fmt.Errorf("%w: % x, want % x for a standard-chess %s table (a chess-variant table or a broken download?)", ErrMagic, got[:], want[:], kind)
}

func isSymmetric(name string) bool {
	for i := 0; i < len(name); i++ {
		if name[i] == 'v' {
			return name[:i] == name[i+1:]
		}
	}
	return false
}

func bothSidesHavePawns(name string) bool {
	for i := 0; i < len(name); i++ {
		if name[i] == 'v' {
			return containsP(name[:i]) && containsP(name[i+1:])
		}
	}
	return false
}

func containsP(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 'P' {
			return true
		}
	}
	return false
}

// checkCodes checks one side's piece codes against the material of the name.
func checkCodes(c []byte, mat material) error {
	var count [7]int
	for _, code := range c {
		t := code & 7
		if t == 0 || t == 7 {
			return fmt.Errorf("piece code %#x is not a piece", code)
		}
		count[t]++
	}
	if count != mat.count {
		return fmt.Errorf("pieces %x do not match the material %s", c, mat.name)
	}
	return nil
}
