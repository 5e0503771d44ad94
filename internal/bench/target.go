package bench

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
)

// Target is the built-in HTTP target for tests and demos: GET
// /standard?fen=... does one request's worth of probe-shaped reads from the
// tables, through the prefix store when one is configured.
//
// It is a load generator, not a chess engine: the FEN's material picks the
// table (KRvK or its colour-swapped twin), and a hash of the whole FEN picks
// the subtables and position indexes. The reads have the size, order and
// spread of real probes; the JSON answer carries no chess result.
type Target struct {
	set      *TableSet
	p        *prober
	closers  []io.Closer
	material map[string][2]*picker // material -> WDL, DTZ pickers (nil if absent)
}

// NewTarget opens the set's tables as c says (IO method, advice, store,
// parallel split) for serving requests made of mix probes.
func NewTarget(set *TableSet, c ProbeConfig, mix Mix) (*Target, error) {
	readers, closers, _, err := set.open(c, false) // net/http goroutines share the processors: reads through os.File
	t := &Target{set: set, closers: closers, material: map[string][2]*picker{}}
	if err != nil {
		t.Close()
		return nil, err
	}
	if t.p, err = newProber(set.tables, readers, mix, c.Parallel, Weighting{By: "positions"}); err != nil {
		t.Close()
		return nil, err
	}
	for i, tb := range set.tables {
		stem := strings.TrimSuffix(strings.TrimSuffix(tb.Name, ".rtbw"), ".rtbz")
		pk := &picker{}
		var total float64
		for si, s := range tb.Subtables {
			total += float64(s.TBSize)
			pk.refs = append(pk.refs, pick{table: i, sub: si})
			pk.cum = append(pk.cum, total)
		}
		if pk.empty() {
			continue
		}
		pair := t.material[stem]
		if tb.DTZ {
			pair[1] = pk
		} else {
			pair[0] = pk
		}
		t.material[stem] = pair
	}
	if len(t.material) == 0 {
		t.Close()
		return nil, fmt.Errorf("no table with compressed data to serve")
	}
	return t, nil
}

// Close releases the table files.
func (t *Target) Close() error {
	for _, c := range t.closers {
		c.Close()
	}
	t.closers = nil
	return nil
}

// Materials lists the materials the target can serve (for FEN generation).
func (t *Target) Materials() []string {
	ms := make([]string, 0, len(t.material))
	for m := range t.material {
		ms = append(ms, m)
	}
	return sortedStrings(ms)
}

// TargetAnswer is the JSON body of a successful request.
type TargetAnswer struct {
	Material  string `json:"material"`
	Probes    int64  `json:"probes"`
	Reads     int64  `json:"reads"`
	SlowReads int64  `json:"slow_reads"`
	Note      string `json:"note"`
}

func (t *Target) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/standard" {
		httpError(w, http.StatusNotFound, "only GET /standard?fen=... is served")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		httpError(w, http.StatusMethodNotAllowed, "use GET")
		return
	}
	fen := strings.ReplaceAll(r.URL.Query().Get("fen"), "_", " ")
	mat, err := fenMaterial(fen)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	pair, ok := t.material[mat]
	if !ok {
		if pair, ok = t.material[swapSides(mat)]; ok {
			mat = swapSides(mat)
		}
	}
	if !ok {
		httpError(w, http.StatusNotFound, fmt.Sprintf("no table for material %s in the loaded set", mat))
		return
	}
	h := fnv.New64a()
	io.WriteString(h, fen)
	rng := rand.New(rand.NewPCG(h.Sum64(), 0x7462686f7374))
	picks := make([]pick, 0, t.p.mix.Probes())
	for i := 0; i < t.p.mix.Probes(); i++ {
		src := pair[1]
		if i < t.p.mix.WDL || src == nil {
			src = pair[0]
		}
		if src == nil {
			src = pair[1]
		}
		picks = append(picks, src.draw(rng, t.set.tables))
	}
	out := t.p.runPicks(r.Context(), picks)
	if out.Err != nil {
		httpError(w, http.StatusInternalServerError, out.Err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(TargetAnswer{Material: mat, Probes: out.Probes, Reads: out.Reads, SlowReads: out.SlowReads,
		Note: "tbhost bench target: probe-shaped reads for load tests, not a chess engine"})
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// fenMaterial returns the material of a FEN's board as a Syzygy stem with
// white first: "KRvK".
func fenMaterial(fen string) (string, error) {
	board, _, _ := strings.Cut(strings.TrimSpace(fen), " ")
	if board == "" {
		return "", fmt.Errorf("missing fen parameter")
	}
	if strings.Count(board, "/") != 7 {
		return "", fmt.Errorf("fen %q: want 8 ranks separated by /", fen)
	}
	var white, black [6]int
	for _, c := range board {
		switch {
		case c == '/' || (c >= '1' && c <= '8'):
		case strings.ContainsRune("KQRBNP", c):
			white[strings.IndexRune("KQRBNP", c)]++
		case strings.ContainsRune("kqrbnp", c):
			black[strings.IndexRune("kqrbnp", c)]++
		default:
			return "", fmt.Errorf("fen %q: unexpected %q in the board", fen, c)
		}
	}
	if white[0] != 1 || black[0] != 1 {
		return "", fmt.Errorf("fen %q: want exactly one king per side", fen)
	}
	side := func(n [6]int) string {
		var b strings.Builder
		for i, c := range "KQRBNP" {
			b.WriteString(strings.Repeat(string(c), n[i]))
		}
		return b.String()
	}
	return side(white) + "v" + side(black), nil
}

func swapSides(mat string) string {
	w, b, _ := strings.Cut(mat, "v")
	return b + "v" + w
}
