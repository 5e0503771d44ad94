package bench

import (
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
)

func sortedStrings(s []string) []string { sort.Strings(s); return s }

// WriteFENs writes n FENs, one per line, with the given materials (Syzygy
// stems such as KRvK), for replay logs. Pieces go on random distinct
// squares (pawns on ranks 2-7, kings not touching), colours swapped in half
// the lines, side to move random. The positions are plausible, not checked
// for legality: they are load, like the built-in target's answers.
func WriteFENs(w io.Writer, materials []string, n int, seed uint64) error {
	if len(materials) == 0 {
		return fmt.Errorf("no material to make positions for")
	}
	rng := rand.New(rand.NewPCG(seed, 0x66656e73))
	for i := 0; i < n; i++ {
		fen, err := randomFEN(rng, materials[rng.IntN(len(materials))])
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintln(w, fen); err != nil {
			return fmt.Errorf("write FEN log: %w", err)
		}
	}
	return nil
}

func randomFEN(rng *rand.Rand, mat string) (string, error) {
	white, black, ok := strings.Cut(mat, "v")
	if !ok || !strings.HasPrefix(white, "K") || !strings.HasPrefix(black, "K") {
		return "", fmt.Errorf("material %q: want a Syzygy stem such as KRvK", mat)
	}
	if rng.IntN(2) == 1 {
		white, black = black, white
	}
	var board [64]byte
	place := func(piece byte, pawn bool) {
		for {
			sq := rng.IntN(64)
			if pawn && (sq < 8 || sq >= 56) {
				continue
			}
			if board[sq] == 0 {
				board[sq] = piece
				return
			}
		}
	}
	// kings first, not touching
	for {
		a, b := rng.IntN(64), rng.IntN(64)
		if dr, df := a/8-b/8, a%8-b%8; dr*dr <= 1 && df*df <= 1 {
			continue
		}
		board[a], board[b] = 'K', 'k'
		break
	}
	for _, c := range white[1:] {
		place(byte(c), c == 'P')
	}
	for _, c := range black[1:] {
		place(byte(c)+'a'-'A', c == 'P')
	}
	var b strings.Builder
	for rank := 7; rank >= 0; rank-- {
		empty := 0
		for file := 0; file < 8; file++ {
			p := board[rank*8+file]
			if p == 0 {
				empty++
				continue
			}
			if empty > 0 {
				b.WriteByte(byte('0' + empty))
				empty = 0
			}
			b.WriteByte(p)
		}
		if empty > 0 {
			b.WriteByte(byte('0' + empty))
		}
		if rank > 0 {
			b.WriteByte('/')
		}
	}
	side := "w"
	if rng.IntN(2) == 1 {
		side = "b"
	}
	return b.String() + " " + side + " - - 0 1", nil
}
