package prefix

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Kind is the table kind: WDL (.rtbw) or DTZ (.rtbz).
type Kind int

// The two kinds of standard-chess Syzygy tables.
const (
	WDL Kind = iota
	DTZ
)

// String returns "wdl" or "dtz" (the JSON spelling).
func (k Kind) String() string {
	if k == DTZ {
		return "dtz"
	}
	return "wdl"
}

// MarshalText makes Kind print as "wdl"/"dtz" in JSON.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads "wdl" or "dtz".
func (k *Kind) UnmarshalText(b []byte) error {
	switch string(b) {
	case "wdl":
		*k = WDL
	case "dtz":
		*k = DTZ
	default:
		return fmt.Errorf("table kind %q: want wdl or dtz", b)
	}
	return nil
}

// Extension returns ".rtbw" or ".rtbz".
func (k Kind) Extension() string {
	if k == DTZ {
		return ".rtbz"
	}
	return ".rtbw"
}

// Magic numbers (first 4 bytes) of standard-chess tables.
var (
	magicWDL = [4]byte{0x71, 0xE8, 0x23, 0x5D}
	magicDTZ = [4]byte{0xD7, 0x66, 0x0C, 0xA5}
)

func (k Kind) magic() [4]byte {
	if k == DTZ {
		return magicDTZ
	}
	return magicWDL
}

// IsTableName reports whether a file name looks like a standard Syzygy table
// (KRvK.rtbw, KPPvKR.rtbz): the names stats, extract and verify pick up.
func IsTableName(name string) bool {
	_, _, err := parseName(filepath.Base(name))
	return err == nil
}

// parseName returns the kind and the material ("KRPvKR") of a table file name,
// and checks the material is plausible: one king each side, 3 to 7 pieces.
func parseName(base string) (Kind, material, error) {
	var kind Kind
	switch filepath.Ext(base) {
	case ".rtbw":
		kind = WDL
	case ".rtbz":
		kind = DTZ
	default:
		return 0, material{}, fmt.Errorf("%w: %q does not end in .rtbw (WDL) or .rtbz (DTZ)", ErrName, base)
	}
	stem := strings.TrimSuffix(base, filepath.Ext(base))
	m, err := parseMaterial(stem)
	if err != nil {
		return 0, material{}, err
	}
	return kind, m, nil
}

// material is the piece count per type (index: code 1 P .. 6 K), both
// colours together (count) and per colour (side[0] white: the name's first
// side; side[1] black).
type material struct {
	name   string
	pieces int
	count  [7]int
	side   [2][7]int
}

func parseMaterial(stem string) (material, error) {
	sides := strings.Split(stem, "v")
	if len(sides) != 2 {
		return material{}, fmt.Errorf("%w: %q is not a material like KRvK", ErrName, stem)
	}
	m := material{name: stem}
	for colour, side := range sides {
		if !strings.HasPrefix(side, "K") || strings.Count(side, "K") != 1 {
			return material{}, fmt.Errorf("%w: %q: each side must have exactly one king, first", ErrName, stem)
		}
		for _, r := range side {
			code := strings.IndexRune(".PNBRQK", r)
			if code <= 0 {
				return material{}, fmt.Errorf("%w: %q: %q is not a piece letter (K Q R B N P)", ErrName, stem, r)
			}
			m.count[code]++
			m.side[colour][code]++
			m.pieces++
		}
	}
	if m.pieces < 3 || m.pieces > 7 {
		return material{}, fmt.Errorf("%w: %q has %d pieces; Syzygy tables have 3 to 7", ErrName, stem, m.pieces)
	}
	return m, nil
}

// binomial returns C(n, k) for the small arguments tables use (n <= 64).
func binomial(n, k int) uint64 {
	if k < 0 || n < 0 || k > n {
		return 0
	}
	if k > n-k {
		k = n - k
	}
	r := uint64(1)
	for i := 1; i <= k; i++ {
		r = r * uint64(n-k+i) / uint64(i) // exact: r*C stays below 2^63 for n <= 64, k <= 7
	}
	return r
}

// runLength returns how many codes equal codes[i], starting at i.
func runLength(codes []byte, i int) int {
	j := i
	for j < len(codes) && codes[j] == codes[i] {
		j++
	}
	return j - i
}

// tbSize is the number of encoded positions of one subtable, from its piece
// codes (syzygy-layout.md, "tb_size"). file is the leading pawn's file 0..3.
func tbSize(codes []byte, hasPawns, bothPawns bool, file int) (uint64, error) {
	n := len(codes)
	var size uint64
	var k int
	if !hasPawns {
		seen := map[byte]int{}
		for _, c := range codes {
			seen[c]++
		}
		unique := 0
		for _, c := range seen {
			if c == 1 {
				unique++
			}
		}
		switch {
		case unique >= 3:
			size, k = 31332, 3
		case unique == 2:
			size, k = 462, 2
		default:
			return 0, fmt.Errorf("pawnless piece list %x has %d unique pieces, need at least 2 (the kings)", codes, unique)
		}
	} else {
		p0 := runLength(codes, 0)
		if codes[0]&7 != 1 {
			return 0, fmt.Errorf("pawn table's first piece code %#x is not a pawn", codes[0])
		}
		for r := 0; r < 6; r++ {
			size += binomial(47-12*file-2*r, p0-1)
		}
		k = p0
		if bothPawns {
			if k >= n || codes[k]&7 != 1 {
				return 0, fmt.Errorf("piece list %x: both sides have pawns but piece %d is not a pawn", codes, k)
			}
			p1 := runLength(codes, k)
			size *= binomial(48-p0, p1)
			k += p1
		}
	}
	free := 64 - k
	for k < n {
		l := runLength(codes, k)
		size *= binomial(free, l)
		free -= l
		k += l
	}
	if size == 0 {
		return 0, fmt.Errorf("piece list %x gives no positions", codes)
	}
	return size, nil
}
