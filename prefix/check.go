package prefix

import (
	"bytes"
	"fmt"
)

// CheckPrefixBytes checks p, the first bytes of this table as stored in a
// prefix (or read from the table), against the layout: the header bytes must
// be the ones the parser read, and when p reaches the full prefix, each
// subtable's block lengths (+1 each over the real blocks) must sum to its
// number of positions and the padding must be zeros. p must be exactly
// SparsePrefix or Prefix bytes long.
func (l *Layout) CheckPrefixBytes(p []byte) error {
	c := l.NewChecker()
	if _, err := c.Write(p); err != nil {
		return err
	}
	return c.Close()
}

// Checker checks a prefix streamed through Write from its first byte, in
// constant memory (a 7-piece prefix can be gigabytes). Close reports whether
// what was written is a whole, consistent sparse or full prefix.
type Checker struct {
	l    *Layout
	pos  int64
	sub  int
	sums []uint64
	lo   byte
	err  error
}

// NewChecker returns a Checker for prefixes of this table.
func (l *Layout) NewChecker() *Checker {
	return &Checker{l: l, sums: make([]uint64, len(l.Subtables))}
}

// Write checks the next bytes of the prefix.
func (c *Checker) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	l := c.l
	total := len(p)
	for len(p) > 0 {
		var n int64
		switch {
		case c.pos < l.Header.End():
			n = min(int64(len(p)), l.Header.End()-c.pos)
			if !bytes.Equal(p[:n], l.head[c.pos:c.pos+n]) {
				c.err = fmt.Errorf("%s: prefix header bytes differ from the table's: stale or foreign prefix", l.Name)
			}
		case c.pos < l.SparseIndex.End():
			n = min(int64(len(p)), l.SparseIndex.End()-c.pos)
		case c.pos < l.BlockLengths.End():
			for c.pos >= l.Subtables[c.sub].BlockLengths.End() {
				c.sub++
			}
			st := l.Subtables[c.sub]
			n = min(int64(len(p)), st.BlockLengths.End()-c.pos)
			realEnd := st.BlockLengths.Offset + 2*int64(st.RealNumBlocks)
			for i := int64(0); i < n; i++ {
				at := c.pos + i
				if at >= realEnd {
					break // the extra entries do not count
				}
				if (at-st.BlockLengths.Offset)%2 == 0 {
					c.lo = p[i]
				} else {
					c.sums[c.sub] += uint64(c.lo) | uint64(p[i])<<8 + 1
				}
			}
		case c.pos < l.Padding.End():
			n = min(int64(len(p)), l.Padding.End()-c.pos)
			for _, b := range p[:n] {
				if b != 0 {
					c.err = fmt.Errorf("%s: padding before the first data block (bytes %d-%d) is not zero: damaged prefix", l.Name, l.Padding.Offset, l.Padding.End())
					break
				}
			}
		default:
			c.err = fmt.Errorf("%s: prefix is longer than the table's %d-byte prefix", l.Name, l.Prefix)
		}
		if c.err != nil {
			return total - len(p), c.err
		}
		c.pos += n
		p = p[n:]
	}
	return total, nil
}

// Close checks the prefix ended where a sparse or full prefix ends and, for a
// full prefix, that every subtable's block lengths add up to its positions.
func (c *Checker) Close() error {
	l := c.l
	if c.err != nil {
		return c.err
	}
	if c.pos != l.Prefix && c.pos != l.SparsePrefix {
		return fmt.Errorf("%s: prefix is %d bytes; the table header says %d (full prefix) or %d (sparse prefix)", l.Name, c.pos, l.Prefix, l.SparsePrefix)
	}
	if c.pos < l.Prefix {
		return nil
	}
	for i, st := range l.Subtables {
		if !st.SingleValue && c.sums[i] != st.TBSize {
			return fmt.Errorf("%s: subtable %d (file %d side %d): block lengths sum to %d positions, the header says %d: damaged block-length list", l.Name, i, st.File, st.Side, c.sums[i], st.TBSize)
		}
	}
	return nil
}
