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

	"github.com/tbhost/tbhost/internal/sysread"
)

// Reasons a file is refused; test with errors.Is.
var (
	ErrName         = errors.New("not a standard Syzygy table name")
	ErrMagic        = errors.New("wrong magic")
	ErrTruncated    = errors.New("truncated")
	ErrSize         = errors.New("bad file size")
	ErrInconsistent = errors.New("inconsistent header")
	// ErrMaterial: the header's pieces are not the material the file name
	// says (a renamed or mislabelled table). Such errors also match
	// ErrInconsistent.
	ErrMaterial = errors.New("header does not match the material of the file name")
	// ErrNotRegular: a directory, device, FIFO or socket where a table or
	// prefix file should be. Such errors also match ErrSize.
	ErrNotRegular = errors.New("not a regular file")
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
	f, size, err := openTable(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	l, err := Parse(filepath.Base(path), f, size)
	return l, withPath(err, path)
}

// CheckMaterialFile checks that the table at path is the material its name
// says: magic, layout byte (piece count, pawns, split) and every subtable's
// piece types and colours. It reads the first few dozen bytes only; ParseFile
// makes the same check as part of the whole header parse.
func CheckMaterialFile(path string) error {
	f, size, err := openTable(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return withPath(CheckMaterial(filepath.Base(path), f, size), path)
}

// CheckMaterial is CheckMaterialFile for a table called name (a base name
// such as KRvK.rtbw) read from r, a file of size bytes.
func CheckMaterial(name string, r io.ReaderAt, size int64) error {
	if _, err := readPieceHeader(&headReader{r: r, size: size}, filepath.Base(name), false); err != nil {
		return &FileError{Path: name, Err: err}
	}
	return nil
}

// openTable opens a table for reading after checking it is a regular file
// (opening a FIFO would block), and returns its size. The file is advised
// random: reads of it fetch only the pages they touch.
func openTable(path string) (*os.File, int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, 0, fmt.Errorf("stat table: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, 0, &FileError{Path: path, Err: fmt.Errorf("%w: %w: a %s; a table must be a file (or a symlink to one)", ErrSize, ErrNotRegular, sysread.FileKind(st.Mode()))}
	}
	f, err := openFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("open table: %w", err)
	}
	if st, err = f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, &FileError{Path: path, Err: fmt.Errorf("%w: %w: replaced while being opened (%v)", ErrSize, ErrNotRegular, err)}
	}
	// The parse reads a few KiB; readahead would read up to read_ahead_kb
	// more, most of it past the prefix (see readio.go).
	adviseRandom(f)
	return f, st.Size(), nil
}

// withPath puts the full path into a parse error's FileError.
func withPath(err error, path string) error {
	var fe *FileError
	if errors.As(err, &fe) {
		fe.Path = path
	}
	return err
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

// parse reads a table's header top-down: the name and the start of the
// header (magic, layout byte, piece codes: the material), the pairs
// descriptions, the DTZ value maps, then places the sections after the
// header and cross-checks them against the file size.
func parse(name string, r io.ReaderAt, size int64) (*Layout, error) {
	h := &headReader{r: r, size: size}
	l := &Layout{Name: filepath.Base(name), Size: size}
	defer func() { l.BytesRead = int64(len(h.buf)) }()

	ph, err := readPieceHeader(h, l.Name, true)
	if err != nil {
		return nil, err
	}
	l.Kind, l.Pieces, l.Split, l.HasPawns = ph.kind, ph.mat.pieces, ph.split, ph.pawns

	subs, parts, off, err := readPairsDescriptions(h, ph, ph.end)
	if err != nil {
		return nil, err
	}
	if ph.kind == DTZ {
		if off, err = skipDTZMaps(h, subs, off); err != nil {
			return nil, err
		}
	}
	l.Header = Section{0, off}
	if err := placeSections(l, subs, parts); err != nil {
		return nil, err
	}
	l.head = h.buf[:off:off]
	return l, nil
}

// pieceHeader is the start of a table's header: what the file name and the
// layout byte say, and each subtable's piece codes.
type pieceHeader struct {
	kind         Kind
	mat          material
	split, pawns bool
	files, sides int
	bothPawns    bool     // both colours have pawns: two order bytes per file
	codes        [][]byte // per subtable, file-major then side
	end          int64    // offset just past the piece bytes (even)
}

func (ph *pieceHeader) numSubtables() int { return ph.files * ph.sides }

// readPieceHeader checks the name, the magic and (with checkSize) the file
// size, then reads the layout byte and the piece codes, and checks both
// against the material of the name: the piece count, the pawns, the split
// bit, and each piece's type and colour (white is the name's first side).
func readPieceHeader(h *headReader, name string, checkSize bool) (*pieceHeader, error) {
	kind, mat, err := parseName(name)
	if err != nil {
		return nil, err
	}
	if err := checkMagic(h, kind); err != nil {
		return nil, err
	}
	if checkSize && (h.size < minSize || h.size%64 != trailerSize) {
		return nil, fmt.Errorf("%w: %d bytes is not 16 more than a multiple of 64 (at least 80): a truncated or padded copy", ErrSize, h.size)
	}
	ph := &pieceHeader{kind: kind, mat: mat}
	if err := readLayoutByte(h, ph); err != nil {
		return nil, err
	}
	if err := readPieceCodes(h, ph); err != nil {
		return nil, err
	}
	return ph, nil
}

// readLayoutByte reads byte 4 (split, pawns, piece count) and checks it
// against the name.
func readLayoutByte(h *headReader, ph *pieceHeader) error {
	if err := h.need(5); err != nil {
		return err
	}
	b, mat := h.u8(4), ph.mat
	ph.split = b&1 != 0
	ph.pawns = b&2 != 0
	if got := int(b >> 4); got != mat.pieces {
		return fmt.Errorf("%w: %w: layout byte %#02x says %d pieces, the name %s has %d", ErrInconsistent, ErrMaterial, b, got, mat.name, mat.pieces)
	}
	if ph.pawns != (mat.count[1] > 0) {
		return fmt.Errorf("%w: %w: layout byte %#02x disagrees with the name %s about pawns", ErrInconsistent, ErrMaterial, b, mat.name)
	}
	if symmetric := isSymmetric(mat.name); ph.split == symmetric {
		return fmt.Errorf("%w: %w: layout byte %#02x split bit disagrees with the material %s", ErrInconsistent, ErrMaterial, b, mat.name)
	}
	ph.files, ph.sides = 1, 1
	if ph.pawns {
		ph.files = 4
	}
	if ph.kind == WDL && ph.split {
		ph.sides = 2
	}
	ph.bothPawns = bothSidesHavePawns(mat.name)
	return nil
}

// readPieceCodes reads, per file, the order byte(s) and the piece bytes (low
// nibble side 0, high nibble side 1), and checks every subtable's codes
// against the name's material.
func readPieceCodes(h *headReader, ph *pieceHeader) error {
	n := int64(ph.mat.pieces)
	pp := int64(0)
	if ph.bothPawns {
		pp = 1
	}
	// Ask for everything known to be header so far (each pairs description
	// is at least 2 bytes), so a header takes few preads and never reads
	// past its end.
	pairsStart := 5 + int64(ph.files)*(1+pp+n)
	pairsStart += pairsStart & 1
	if err := h.need(pairsStart + 2*int64(ph.numSubtables())); err != nil {
		return err
	}
	off := int64(5)
	ph.codes = make([][]byte, ph.numSubtables())
	for f := 0; f < ph.files; f++ {
		off += 1 + pp
		pieces := h.buf[off : off+n]
		off += n
		for s := 0; s < ph.sides; s++ {
			c := make([]byte, n)
			for i, b := range pieces {
				c[i] = (b >> (4 * s)) & 0x0f
			}
			if err := checkCodes(c, ph.mat); err != nil {
				return fmt.Errorf("%w: %w: file %d side %d: %w", ErrInconsistent, ErrMaterial, f, s, err)
			}
			ph.codes[f*ph.sides+s] = c
		}
	}
	ph.end = off + off&1
	return nil
}

// subtableBytes are the sizes of one subtable's sections after the header.
type subtableBytes struct{ sparse, blockLengths, data int64 }

// readPairsDescriptions reads one pairs description per subtable from off
// (file-major, then side) and returns the subtables, their section sizes
// and the offset past the last description.
func readPairsDescriptions(h *headReader, ph *pieceHeader, off int64) ([]Subtable, []subtableBytes, int64, error) {
	numSubs := ph.numSubtables()
	subs := make([]Subtable, 0, numSubs)
	parts := make([]subtableBytes, 0, numSubs)
	for f := 0; f < ph.files; f++ {
		for s := 0; s < ph.sides; s++ {
			st := Subtable{File: f, Side: s}
			tb, err := tbSize(ph.codes[f*ph.sides+s], ph.pawns, ph.bothPawns, f)
			if err != nil {
				return nil, nil, 0, fmt.Errorf("%w: file %d side %d: %w", ErrInconsistent, f, s, err)
			}
			st.TBSize = tb
			rest := 2 * int64(numSubs-len(subs)-1) // later descriptions, at least 2 bytes each
			part, next, err := readPairsDescription(h, &st, off, rest)
			if err != nil {
				return nil, nil, 0, err
			}
			subs, parts, off = append(subs, st), append(parts, part), next
		}
	}
	return subs, parts, off, nil
}

// readPairsDescription reads the pairs description of st at off (rest: the
// least the later descriptions take) and returns its section sizes, refused
// before they can overflow (everything must fit in the file), and the offset
// past it.
func readPairsDescription(h *headReader, st *Subtable, off, rest int64) (subtableBytes, int64, error) {
	f, s := st.File, st.Side
	if err := h.need(off + 2 + rest); err != nil {
		return subtableBytes{}, 0, err
	}
	st.Flags = h.u8(off)
	if st.Flags&0x80 != 0 {
		st.SingleValue = true
		return subtableBytes{}, off + 2, nil
	}
	if err := h.need(off + 14 + rest); err != nil {
		return subtableBytes{}, 0, err
	}
	st.BlockSizeLog = h.u8(off + 1)
	st.IdxBits = h.u8(off + 2)
	extra := h.u8(off + 3)
	st.RealNumBlocks = h.u32(off + 4)
	st.NumBlocks = uint64(st.RealNumBlocks) + uint64(extra)
	maxLen, minLen := h.u8(off+8), h.u8(off+9)
	if maxLen < minLen {
		return subtableBytes{}, 0, fmt.Errorf("%w: subtable %d/%d: max code length %d below min %d", ErrInconsistent, f, s, maxLen, minLen)
	}
	if st.RealNumBlocks == 0 {
		return subtableBytes{}, 0, fmt.Errorf("%w: subtable %d/%d: no blocks but not single-value", ErrInconsistent, f, s)
	}
	hh := int64(maxLen) - int64(minLen) + 1
	if err := h.need(off + 12 + 2*hh + rest); err != nil {
		return subtableBytes{}, 0, err
	}
	numSyms := h.u16(off + 10 + 2*hh)
	off += 12 + 2*hh + 3*numSyms + (numSyms & 1)
	if err := h.need(off + rest); err != nil {
		return subtableBytes{}, 0, err
	}
	entries := uint64(1)
	if st.IdxBits < 63 {
		entries = (st.TBSize + (uint64(1) << st.IdxBits) - 1) >> st.IdxBits
	}
	if entries > uint64(h.size)/6 {
		return subtableBytes{}, 0, fmt.Errorf("%w: subtable %d/%d: sparse index of %d entries (idxbits %d) is larger than the file", ErrInconsistent, f, s, entries, st.IdxBits)
	}
	if st.BlockSizeLog > 40 || uint64(st.RealNumBlocks) > uint64(h.size)>>st.BlockSizeLog {
		return subtableBytes{}, 0, fmt.Errorf("%w: subtable %d/%d: %d blocks of 2^%d bytes are larger than the file", ErrInconsistent, f, s, st.RealNumBlocks, st.BlockSizeLog)
	}
	return subtableBytes{
		sparse:       int64(6 * entries),
		blockLengths: int64(2 * st.NumBlocks),
		data:         int64(st.RealNumBlocks) << st.BlockSizeLog,
	}, off, nil
}

// skipDTZMaps steps over the DTZ value maps at off: 4 per mapped subtable,
// each at least its count (1 byte, or 2 when wide, even-aligned), and
// returns the (even) end of the header.
func skipDTZMaps(h *headReader, subs []Subtable, off int64) (int64, error) {
	var mins []int64 // the least each map takes, so each read asks for all that is surely header
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
				return 0, err
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
	return off, h.need(off)
}

// placeSections lays out the sections after the header (l.Header), forward:
// sparse indexes, block-length lists, padding, then each subtable's data
// 64-byte aligned; and checks the prefix end found forward against the one
// found backward from the file size.
func placeSections(l *Layout, subs []Subtable, parts []subtableBytes) error {
	pos := l.Header.End()
	for i := range subs {
		subs[i].SparseIndex = Section{pos, parts[i].sparse}
		pos += parts[i].sparse
	}
	l.SparseIndex = Section{l.Header.End(), pos - l.Header.End()}
	l.SparsePrefix = pos
	for i := range subs {
		subs[i].BlockLengths = Section{pos, parts[i].blockLengths}
		pos += parts[i].blockLengths
	}
	l.BlockLengths = Section{l.SparsePrefix, pos - l.SparsePrefix}
	l.Prefix = align64(pos)
	l.Padding = Section{pos, l.Prefix - pos}

	dataAligned := int64(0)
	pos = l.Prefix
	for i := range subs {
		pos = align64(pos)
		subs[i].Data = Section{pos, parts[i].data}
		pos += parts[i].data
		dataAligned += align64(parts[i].data)
	}
	backward := l.Size - trailerSize - dataAligned
	if backward != l.Prefix {
		return fmt.Errorf("%w: prefix ends at %d by the header (end of block-length lists) but at %d counting back from the file size (size - 16 - data): a damaged or mislabelled file", ErrInconsistent, l.Prefix, backward)
	}
	l.Data = Section{l.Prefix, l.Size - trailerSize - l.Prefix}
	l.Trailer = Section{l.Size - trailerSize, trailerSize}
	l.Subtables = subs
	return nil
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

// checkCodes checks one subtable's piece codes against the material of the
// name: the same pieces of each type and colour (code bit 3 set: black, the
// name's second side). A file whose header has the pieces of another
// material (KRvK's bytes under the name KvKR) is refused here.
func checkCodes(c []byte, mat material) error {
	var got [2][7]int
	for _, code := range c {
		t := code & 7
		if t == 0 || t == 7 {
			return fmt.Errorf("piece code %#x is not a piece", code)
		}
		got[code>>3][t]++
	}
	if got != mat.side {
		return fmt.Errorf("pieces %x (white %s, black %s) do not match the material %s (white %s, black %s): a renamed or mislabelled file",
			c, pieceLetters(got[0]), pieceLetters(got[1]), mat.name, pieceLetters(mat.side[0]), pieceLetters(mat.side[1]))
	}
	return nil
}

// pieceLetters spells piece counts per type as in a table name: KRP.
func pieceLetters(count [7]int) string {
	var b []byte
	for t := 6; t >= 1; t-- {
		for i := 0; i < count[t]; i++ {
			b = append(b, ".PNBRQK"[t])
		}
	}
	return string(b)
}
