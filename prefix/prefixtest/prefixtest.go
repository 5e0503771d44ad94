// Package prefixtest makes synthetic Syzygy table files for tests, and holds
// a deliberately separate, minimal second reading of the format (Count) that
// tests use to check package prefix by a different route. It shares no code
// with package prefix.
package prefixtest

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Sub describes one synthetic subtable (pairs description).
type Sub struct {
	Single       bool  // single-value: 2 bytes, no index, lengths or data
	BlockSizeLog uint8 // block = 1 << BlockSizeLog bytes; default 6 (64 bytes)
	IdxBits      uint8 // default 10
	Extra        uint8 // extra block-length entries past the real blocks
	NumSyms      int   // symbols in the pairs description; default 1
	Mapped       bool  // DTZ: value maps follow the pairs descriptions
	Wide         bool  // DTZ: the maps are 16-bit
}

// Spec is a synthetic table: its file name (KRvK.rtbw) and its subtables in
// file order (file-major, then side). Nil Subs gives every subtable defaults.
type Spec struct {
	Name string
	Subs []Sub
}

// Table is what Build made, with the figures a test expects.
type Table struct {
	Bytes        []byte
	Header       int64
	SparseIndex  int64
	BlockLengths int64
	Prefix       int64
	SparsePrefix int64
	Data         int64
}

// NumSubtables returns how many subtables a table name needs.
func NumSubtables(name string) int {
	stem := strings.TrimSuffix(strings.TrimSuffix(name, ".rtbw"), ".rtbz")
	sides := strings.Split(stem, "v")
	files, s := 1, 1
	if strings.Contains(stem, "P") {
		files = 4
	}
	if strings.HasSuffix(name, ".rtbw") && sides[0] != sides[1] {
		s = 2
	}
	return files * s
}

// WriteTable builds spec and writes it into dir; it returns the path.
func WriteTable(dir string, spec Spec) (string, *Table, error) {
	tb, err := Build(spec)
	if err != nil {
		return "", nil, err
	}
	p := filepath.Join(dir, spec.Name)
	if err := os.WriteFile(p, tb.Bytes, 0o644); err != nil {
		return "", nil, err
	}
	return p, tb, nil
}

var codeOf = map[rune]byte{'P': 1, 'N': 2, 'B': 3, 'R': 4, 'Q': 5, 'K': 6}

// Build makes the bytes of a valid table for spec.
func Build(spec Spec) (*Table, error) {
	dtz := strings.HasSuffix(spec.Name, ".rtbz")
	stem := strings.TrimSuffix(strings.TrimSuffix(spec.Name, ".rtbw"), ".rtbz")
	sides := strings.Split(stem, "v")
	if len(sides) != 2 {
		return nil, fmt.Errorf("prefixtest: bad name %q", spec.Name)
	}
	// Piece codes: white pawns, black pawns, then the other white, then black pieces.
	var codes []byte
	for c, side := range sides {
		for _, r := range side {
			if r == 'P' {
				codes = append(codes, codeOf[r]|byte(8*c))
			}
		}
	}
	for c, side := range sides {
		for _, r := range side {
			if r != 'P' {
				codes = append(codes, codeOf[r]|byte(8*c))
			}
		}
	}
	n := len(codes)
	pawns := strings.Contains(stem, "P")
	pp := strings.Contains(sides[0], "P") && strings.Contains(sides[1], "P")
	split := sides[0] != sides[1]
	files, nsides := 1, 1
	if pawns {
		files = 4
	}
	if !dtz && split {
		nsides = 2
	}
	subs := spec.Subs
	if subs == nil {
		subs = make([]Sub, files*nsides)
	}
	if len(subs) != files*nsides {
		return nil, fmt.Errorf("prefixtest: %s needs %d subtables, spec has %d", spec.Name, files*nsides, len(subs))
	}

	var b []byte
	if dtz {
		b = append(b, 0xD7, 0x66, 0x0C, 0xA5)
	} else {
		b = append(b, 0x71, 0xE8, 0x23, 0x5D)
	}
	lay := byte(n << 4)
	if split {
		lay |= 1
	}
	if pawns {
		lay |= 2
	}
	b = append(b, lay)
	for f := 0; f < files; f++ {
		b = append(b, 0)
		if pp {
			b = append(b, 0)
		}
		for _, c := range codes {
			b = append(b, c|c<<4)
		}
	}
	if len(b)%2 == 1 {
		b = append(b, 0)
	}
	type made struct {
		sparse, blen, data int64
		lengths            []uint16
		size               uint64 // positions
		idxBits            uint8
	}
	var ms []made
	for i, s := range subs {
		if s.Single {
			b = append(b, 0x80|mapFlags(s), 3)
			ms = append(ms, made{})
			continue
		}
		bs, ib, syms := s.BlockSizeLog, s.IdxBits, s.NumSyms
		if bs == 0 {
			bs = 6
		}
		if ib == 0 {
			ib = 10
		}
		if syms == 0 {
			syms = 1
		}
		size := positions(codes, pawns, pp, i/nsides)
		var lengths []uint16
		for left := size; left > 0; {
			take := left
			if take > 65536 {
				take = 65536
			}
			lengths = append(lengths, uint16(take-1))
			left -= take
		}
		real := uint32(len(lengths))
		for e := 0; e < int(s.Extra); e++ {
			lengths = append(lengths, 0)
		}
		b = append(b, mapFlags(s), bs, ib, s.Extra)
		b = binary.LittleEndian.AppendUint32(b, real)
		b = append(b, 1, 1) // max_len, min_len: h = 1
		b = append(b, 0, 0) // 2h bytes of base
		b = binary.LittleEndian.AppendUint16(b, uint16(syms))
		b = append(b, make([]byte, 3*syms+syms&1)...)
		ms = append(ms, made{
			sparse:  6 * int64((size+(1<<ib)-1)>>ib),
			blen:    2 * int64(len(lengths)),
			data:    int64(real) << bs,
			lengths: lengths,
			size:    size,
			idxBits: ib,
		})
	}
	if dtz {
		for _, s := range subs {
			if !s.Mapped {
				continue
			}
			if s.Wide {
				if len(b)%2 == 1 {
					b = append(b, 0)
				}
				for i := 0; i < 4; i++ {
					b = binary.LittleEndian.AppendUint16(b, uint16(i+1))
					for j := 0; j <= i; j++ {
						b = binary.LittleEndian.AppendUint16(b, uint16(1000+j))
					}
				}
			} else {
				for i := 0; i < 4; i++ {
					b = append(b, byte(i+2))
					b = append(b, make([]byte, i+2)...)
				}
			}
		}
		if len(b)%2 == 1 {
			b = append(b, 0)
		}
	}
	t := &Table{Header: int64(len(b))}
	for _, m := range ms {
		b = appendSparseIndex(b, m.sparse/6, m.size, m.idxBits)
		t.SparseIndex += m.sparse
	}
	t.SparsePrefix = int64(len(b))
	for _, m := range ms {
		for _, l := range m.lengths {
			b = binary.LittleEndian.AppendUint16(b, l)
		}
		t.BlockLengths += m.blen
	}
	for len(b)%64 != 0 {
		b = append(b, 0)
	}
	t.Prefix = int64(len(b))
	for i, m := range ms {
		for j := int64(0); j < m.data; j++ {
			b = append(b, byte(31*j+int64(i)+7))
		}
		for len(b)%64 != 0 {
			b = append(b, 0)
		}
	}
	t.Data = int64(len(b)) - t.Prefix
	for i := 0; i < 16; i++ {
		b = append(b, 0xC0|byte(i))
	}
	t.Bytes = b
	return t, nil
}

// appendSparseIndex appends a sparse index that agrees with the block
// lengths Build writes (every block holds 65536 positions): entry k names the
// block and offset of the position in the middle of its 2^idxBits range, as
// a Syzygy generator does, so a probe's walk lands at once and probes spread
// over the data like on a real table.
func appendSparseIndex(b []byte, entries int64, size uint64, idxBits uint8) []byte {
	for k := int64(0); k < entries; k++ {
		p := uint64(k) << idxBits
		if idxBits > 0 {
			p += 1 << (idxBits - 1)
		}
		if p >= size {
			p = size - 1
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(p/65536))
		b = binary.LittleEndian.AppendUint16(b, uint16(p%65536))
	}
	return b
}

func mapFlags(s Sub) byte {
	var f byte
	if s.Mapped {
		f |= 0x02
	}
	if s.Wide {
		f |= 0x10
	}
	return f
}

// pascal is C(n, k) from Pascal's triangle (a different route from the
// multiplicative formula package prefix uses).
func pascal(n, k int) uint64 {
	if k < 0 || n < 0 || k > n {
		return 0
	}
	row := make([]uint64, n+1)
	row[0] = 1
	for i := 1; i <= n; i++ {
		for j := i; j > 0; j-- {
			row[j] += row[j-1]
		}
	}
	return row[k]
}

// positions is the number of encoded positions of a subtable whose piece
// codes are codes (syzygy-layout.md, tb_size), file the leading pawn's file.
func positions(codes []byte, pawns, pp bool, file int) uint64 {
	run := func(i int) int {
		j := i
		for j < len(codes) && codes[j] == codes[i] {
			j++
		}
		return j - i
	}
	var size uint64
	k := 0
	if !pawns {
		uniq := 0
		for _, c := range codes {
			cnt := 0
			for _, d := range codes {
				if d == c {
					cnt++
				}
			}
			if cnt == 1 {
				uniq++
			}
		}
		if uniq >= 3 {
			size, k = 31332, 3
		} else {
			size, k = 462, 2
		}
	} else {
		p0 := run(0)
		for r := 0; r < 6; r++ {
			size += pascal(47-12*file-2*r, p0-1)
		}
		k = p0
		if pp {
			p1 := run(k)
			size *= pascal(48-p0, p1)
			k += p1
		}
	}
	free := 64 - k
	for k < len(codes) {
		l := run(k)
		size *= pascal(free, l)
		free -= l
		k += l
	}
	return size
}

// Counts are a table's byte figures as Count finds them.
type Counts struct {
	Header, SparseIndex, BlockLengths, Data, SparsePrefix, Prefix int64
}

// Count is the second, minimal reading of a whole table file (all bytes in
// memory): it walks the header and pairs descriptions and finds the prefix
// BACKWARD, as size - 16 - the data blocks, where package prefix finds it
// forward. It trusts its input (tests only).
func Count(name string, b []byte) (Counts, error) {
	dtz := strings.HasSuffix(name, ".rtbz")
	lay := b[4]
	n := int(lay >> 4)
	pawns := lay&2 != 0
	stem := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(name), ".rtbw"), ".rtbz")
	sides := strings.Split(stem, "v")
	pp := strings.Contains(sides[0], "P") && strings.Contains(sides[1], "P")
	files, nsides := 1, 1
	if pawns {
		files = 4
	}
	if !dtz && lay&1 != 0 {
		nsides = 2
	}
	at := 5
	var pieceBytes [][]byte
	for f := 0; f < files; f++ {
		at++
		if pp {
			at++
		}
		pieceBytes = append(pieceBytes, b[at:at+n])
		at += n
	}
	at += at % 2
	var c Counts
	var flagsList []byte
	for f := 0; f < files; f++ {
		for s := 0; s < nsides; s++ {
			flags := b[at]
			flagsList = append(flagsList, flags)
			if flags&0x80 != 0 {
				at += 2
				continue
			}
			bs, ib := uint(b[at+1]), uint(b[at+2])
			extra := int64(b[at+3])
			real := int64(binary.LittleEndian.Uint32(b[at+4:]))
			h := int(b[at+8]) - int(b[at+9]) + 1
			syms := int(binary.LittleEndian.Uint16(b[at+10+2*h:]))
			at += 12 + 2*h + 3*syms + syms%2
			codes := make([]byte, n)
			for i := range codes {
				codes[i] = pieceBytes[f][i] >> (4 * s) & 15
			}
			size := positions(codes, pawns, pp, f)
			c.SparseIndex += 6 * int64((size+(1<<ib)-1)>>ib)
			c.BlockLengths += 2 * (real + extra)
			d := real << bs
			c.Data += (d + 63) / 64 * 64
		}
	}
	if dtz {
		for _, flags := range flagsList {
			if flags&2 == 0 {
				continue
			}
			for i := 0; i < 4; i++ {
				if flags&0x10 != 0 {
					at += at % 2
					at += 2 + 2*int(binary.LittleEndian.Uint16(b[at:]))
				} else {
					at += 1 + int(b[at])
				}
			}
		}
		at += at % 2
	}
	c.Header = int64(at)
	c.SparsePrefix = c.Header + c.SparseIndex
	c.Prefix = int64(len(b)) - 16 - c.Data
	if got := (c.SparsePrefix + c.BlockLengths + 63) / 64 * 64; got != c.Prefix {
		return c, fmt.Errorf("prefixtest.Count %s: forward %d != backward %d", name, got, c.Prefix)
	}
	return c, nil
}
