package prefix

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// CheckPrefixBytes checks p, the first bytes of this table as stored in a
// prefix (or read from the table), against the layout: the header bytes must
// be the ones the parser read, and when p reaches the full prefix, each
// subtable's block lengths (+1 each over the real blocks) must sum to its
// number of positions and the padding must be zeros. p must be exactly
// SparsePrefix or Prefix bytes long.
func (l *Layout) CheckPrefixBytes(p []byte) error {
	n := int64(len(p))
	if n != l.Prefix && n != l.SparsePrefix {
		return fmt.Errorf("%s: prefix is %d bytes; the table header says %d (full prefix) or %d (sparse prefix)", l.Name, n, l.Prefix, l.SparsePrefix)
	}
	if !bytes.Equal(p[:l.Header.Size], l.head) {
		return fmt.Errorf("%s: prefix header bytes differ from the table's: stale or foreign prefix", l.Name)
	}
	if n < l.Prefix {
		return nil
	}
	for i, st := range l.Subtables {
		if st.SingleValue {
			continue
		}
		b := p[st.BlockLengths.Offset:st.BlockLengths.End()]
		var sum uint64
		for j := uint64(0); j < uint64(st.RealNumBlocks); j++ {
			sum += uint64(binary.LittleEndian.Uint16(b[2*j:])) + 1
		}
		if sum != st.TBSize {
			return fmt.Errorf("%s: subtable %d (file %d side %d): block lengths sum to %d positions, the header says %d: damaged block-length list", l.Name, i, st.File, st.Side, sum, st.TBSize)
		}
	}
	for _, b := range p[l.Padding.Offset:l.Padding.End()] {
		if b != 0 {
			return fmt.Errorf("%s: padding before the first data block (bytes %d-%d) is not zero: damaged prefix", l.Name, l.Padding.Offset, l.Padding.End())
		}
	}
	return nil
}
