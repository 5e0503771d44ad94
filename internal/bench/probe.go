package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime/debug"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
)

// probeSubtable is what a probe needs to know about one subtable: where its
// sparse index, block-length list and data blocks sit in the file. It is
// filled from the prefix package's parsed layout (never parsed here).
type probeSubtable struct {
	SparseOff    int64
	SparseSize   int64
	BlenOff      int64
	BlenSize     int64
	DataOff      int64
	DataSize     int64
	BlockSizeLog uint8
	IdxBits      uint8
	NumBlocks    uint64 // entries in the block-length list
	TBSize       uint64 // encoded positions
}

// probeTable is one table file as the probe generator sees it.
type probeTable struct {
	Name      string // e.g. KRvK.rtbw
	Path      string
	DTZ       bool
	Size      int64
	Prefix    int64 // offset of the first data block
	Subtables []probeSubtable
}

// tableReader reads one table; reads that end past SlowFrom touch the table
// file (slow disks) rather than the prefix store.
type tableReader struct {
	R        io.ReaderAt
	SlowFrom int64 // bytes served from the prefix store (0 without a store)
}

// Mix is how many WDL and DTZ probes make one request. The public server
// was measured at 23 WDL and 70 DTZ probes per request.
type Mix struct {
	WDL int `json:"wdl"`
	DTZ int `json:"dtz"`
}

// DefaultMix is the probe burst of one request on the public server.
func DefaultMix() Mix { return Mix{WDL: 23, DTZ: 70} }

// Probes is the number of probes per request.
func (m Mix) Probes() int { return m.WDL + m.DTZ }

// pick is a probe's target: a subtable and a position index in it.
type pick struct {
	table, sub int
	idx        uint64
}

// Weighting is how probes spread over the subtables.
type Weighting struct {
	// By is "positions" (a random position of the whole set: subtables
	// weighted by their number of positions) or "bytes" (weighted by
	// compressed data size: reads spread evenly over the disk).
	By string `json:"by"`
	// Materials, when set, is a request mix: each material's share of the
	// probes (e.g. from a request log); within a material, By applies.
	// Materials absent from it get no probes.
	Materials map[string]float64 `json:"materials,omitempty"`
}

// ParseWeight reads the --weight flag.
func ParseWeight(s string) (Weighting, error) {
	switch s {
	case "positions", "bytes":
		return Weighting{By: s}, nil
	}
	return Weighting{}, fmt.Errorf("--weight %q: want positions (a random position of the set) or bytes (spread over the data)", s)
}

// picker draws subtables (and a random position in them) by weight, from
// WDL or DTZ tables.
type picker struct {
	refs []pick    // table/sub, idx unused
	cum  []float64 // cumulative weight
}

func stem(name string) string {
	return strings.TrimSuffix(strings.TrimSuffix(name, ".rtbw"), ".rtbz")
}

func newPicker(tables []probeTable, dtz bool, w Weighting) *picker {
	weight := func(s probeSubtable) float64 {
		if w.By == "bytes" {
			return float64(s.DataSize)
		}
		return float64(s.TBSize)
	}
	// with a request mix, a material's subtables share its weight
	perMaterial := map[string]float64{}
	for _, t := range tables {
		if t.DTZ == dtz {
			for _, s := range t.Subtables {
				perMaterial[stem(t.Name)] += weight(s)
			}
		}
	}
	p := &picker{}
	var total float64
	for ti, t := range tables {
		if t.DTZ != dtz {
			continue
		}
		for si, s := range t.Subtables {
			if s.DataSize == 0 || s.TBSize == 0 || s.NumBlocks == 0 {
				continue // single-value subtable: a probe reads nothing
			}
			wt := weight(s)
			if w.Materials != nil {
				wt = w.Materials[stem(t.Name)] * wt / perMaterial[stem(t.Name)]
			}
			if wt <= 0 {
				continue
			}
			total += wt
			p.refs = append(p.refs, pick{table: ti, sub: si})
			p.cum = append(p.cum, total)
		}
	}
	return p
}

func (p *picker) empty() bool { return len(p.refs) == 0 }

func (p *picker) draw(rng *rand.Rand, tables []probeTable) pick {
	x := rng.Float64() * p.cum[len(p.cum)-1]
	i := sort.Search(len(p.cum), func(i int) bool { return p.cum[i] > x })
	i = min(i, len(p.cum)-1)
	r := p.refs[i]
	r.idx = rng.Uint64N(tables[r.table].Subtables[r.sub].TBSize)
	return r
}

// prober issues probe-shaped reads against a set of tables.
type prober struct {
	tables   []probeTable
	readers  []tableReader
	wdl, dtz *picker
	mix      Mix
	parallel int
	bufs     sync.Pool
	// picks holds *[]pick for request, so that a sequential request
	// allocates nothing: no garbage, no collection during a probe run, whose
	// stop-the-world would wait for every raw read in flight (rawPread),
	// on a fail-slow disk for seconds, and stall every client meanwhile.
	picks   sync.Pool
	maxRead int
}

func newProber(tables []probeTable, readers []tableReader, mix Mix, parallel int, w Weighting) (*prober, error) {
	if len(tables) != len(readers) {
		return nil, fmt.Errorf("internal: %d tables, %d readers", len(tables), len(readers))
	}
	if parallel < 1 {
		return nil, fmt.Errorf("--parallel %d: need at least 1", parallel)
	}
	p := &prober{tables: tables, readers: readers, mix: mix, parallel: parallel,
		wdl: newPicker(tables, false, w), dtz: newPicker(tables, true, w)}
	if p.wdl.empty() && p.dtz.empty() {
		if w.Materials != nil {
			return nil, fmt.Errorf("none of the request mix's materials has a table with compressed data here")
		}
		return nil, fmt.Errorf("no table with compressed data to probe (only single-value subtables): give larger tables")
	}
	maxRead := 32
	for _, t := range tables {
		for _, s := range t.Subtables {
			if n := 1<<s.BlockSizeLog + 4; s.DataSize > 0 && n > maxRead {
				maxRead = n
			}
		}
	}
	p.maxRead = maxRead
	p.bufs.New = func() any { b := make([]byte, maxRead); return &b }
	return p, nil
}

// plan draws the probes of one request. When the set has no WDL (or no DTZ)
// data, that part of the mix goes to the other kind so every request does
// the same amount of work.
func (p *prober) plan(rng *rand.Rand) []pick {
	return p.planInto(make([]pick, 0, p.mix.Probes()), rng)
}

// planInto is plan appending to picks (reused by request).
func (p *prober) planInto(picks []pick, rng *rand.Rand) []pick {
	n := p.mix.Probes()
	for i := 0; i < n; i++ {
		src := p.dtz
		if i < p.mix.WDL {
			src = p.wdl
		}
		if src.empty() {
			src = p.wdl
			if src.empty() {
				src = p.dtz
			}
		}
		picks = append(picks, src.draw(rng, p.tables))
	}
	return picks
}

// request performs one request: its probes in order, or split into
// p.parallel contiguous chunks run concurrently.
func (p *prober) request(ctx context.Context, rng *rand.Rand) Outcome {
	pp, _ := p.picks.Get().(*[]pick)
	if pp == nil {
		pp = new([]pick)
	}
	*pp = p.planInto((*pp)[:0], rng)
	out := p.runPicks(ctx, *pp)
	p.picks.Put(pp)
	return out
}

// runPicks reads the given probes, in order or split over p.parallel
// goroutines.
func (p *prober) runPicks(ctx context.Context, picks []pick) Outcome {
	if p.parallel == 1 || len(picks) < 2 {
		return p.run(ctx, picks)
	}
	n := min(p.parallel, len(picks))
	outs := make([]Outcome, n)
	// The chunks must run concurrently (that is what is measured): no limit.
	var g errgroup.Group
	for i := 0; i < n; i++ {
		lo, hi := i*len(picks)/n, (i+1)*len(picks)/n
		g.Go(func() error {
			outs[i] = p.run(ctx, picks[lo:hi])
			return nil
		})
	}
	g.Wait()
	var total Outcome
	for _, o := range outs {
		total.Probes += o.Probes
		total.Reads += o.Reads
		total.SlowReads += o.SlowReads
		if total.Err == nil {
			total.Err = o.Err
		}
	}
	return total
}

// run reads picks in order in the calling goroutine. A read from a mapped
// table whose page cannot be read (an I/O error under the file, or the
// file shortened during the run) raises SIGBUS in the reading thread,
// which the Go runtime turns into a crash of the whole process (exit 2,
// which cron reads as a usage error); with panic-on-fault for the reads it
// is this request's error instead, naming the table.
func (p *prober) run(ctx context.Context, picks []pick) (out Outcome) {
	bp := p.bufs.Get().(*[]byte)
	defer p.bufs.Put(bp)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	current := -1 // the table being read
	defer func() {
		if r := recover(); r != nil {
			out.Err = p.faultError(r, current)
		}
	}()
	for _, pk := range picks {
		if err := ctx.Err(); err != nil {
			out.Err = err
			return out
		}
		current = pk.table
		if _, err := p.probe(pk, *bp, &out); err != nil {
			out.Err = err
			return out
		}
		out.Probes++
	}
	return out
}

// faultError is the error of a memory fault r (a panic on fault) while
// reading table number table; any other panic goes on.
func (p *prober) faultError(r any, table int) error {
	fault, ok := r.(interface{ Addr() uintptr })
	if !ok || table < 0 {
		panic(r)
	}
	return fmt.Errorf("%s: a read from its mapping faulted at %#x (SIGBUS): the page could not be read, an I/O error under the file or the file shortened during the run (was %d bytes)",
		p.tables[table].Path, fault.Addr(), p.tables[table].Size)
}

// maxWalk bounds the block-length walk (the real walk moves a few blocks at
// most; a corrupt table must not loop forever).
const maxWalk = 1024

// probe reads what a Syzygy probe reads, in order: the sparse-index entry
// for the position, the 32-byte run of block lengths from the entry's block
// (another run when the walk leaves it), and the data block (block size + 4
// bytes). The block is found with the real entry and lengths, as a reader
// decoding the position would. found reports whether the walk ended inside
// a block (always, on a sound table).
func (p *prober) probe(pk pick, buf []byte, out *Outcome) (found bool, err error) {
	t := &p.tables[pk.table]
	s := &t.Subtables[pk.sub]
	rd := p.readers[pk.table]
	read := func(off int64, n int) ([]byte, error) {
		if off+int64(n) > t.Size {
			n = int(t.Size - off)
		}
		b := buf[:n]
		got, err := rd.R.ReadAt(b, off)
		if got < n && (err == nil || err == io.EOF) {
			// a short read is a failed one: the reader would decode
			// whatever the buffer held before
			err = fmt.Errorf("got %d: the file ends before the %d bytes it had when the run started (shortened or rewritten in place?)", got, t.Size)
		}
		if err != nil && (got < n || err != io.EOF) { // a full read may end with io.EOF at the file's end
			return nil, fmt.Errorf("%s: read %d bytes at %d: %w", t.Path, n, off, err)
		}
		out.Reads++
		if off+int64(n) > rd.SlowFrom {
			out.SlowReads++
		}
		return b, nil
	}

	// 1. sparse-index entry: u32 block, u16 offset into it
	main := pk.idx >> s.IdxBits
	e, err := read(s.SparseOff+6*int64(main), 6)
	if err != nil {
		return false, err
	}
	block := int64(binary.LittleEndian.Uint32(e))
	lit := int64(pk.idx & (1<<s.IdxBits - 1))
	if s.IdxBits > 0 {
		lit -= 1 << (s.IdxBits - 1)
	}
	lit += int64(binary.LittleEndian.Uint16(e[4:]))
	nb := int64(s.NumBlocks)
	if block >= nb {
		block = nb - 1
	}

	// 2. block lengths in 32-byte runs (16 entries), walking to the block
	// that holds the position
	var run []uint16
	runStart := int64(-1)
	length := func(b int64) (int64, error) {
		if runStart < 0 || b < runStart || b >= runStart+int64(len(run)) {
			start := b
			if lit < 0 { // walking backwards: end the run at b
				start = max(0, b-15)
			}
			n := int(min(16, nb-start))
			raw, err := read(s.BlenOff+2*start, 2*n)
			if err != nil {
				return 0, err
			}
			run = run[:0]
			for i := 0; i+1 < len(raw); i += 2 {
				run = append(run, binary.LittleEndian.Uint16(raw[i:]))
			}
			runStart = start
		}
		return int64(run[b-runStart]), nil
	}
	run = make([]uint16, 0, 16)
	if _, err := length(block); err != nil {
		return false, err
	}
	for steps := 0; steps < maxWalk; steps++ {
		if lit < 0 && block > 0 {
			block--
			l, err := length(block)
			if err != nil {
				return false, err
			}
			lit += l + 1
			continue
		}
		l, err := length(block)
		if err != nil {
			return false, err
		}
		if lit > l && block+1 < nb {
			lit -= l + 1
			block++
			continue
		}
		found = lit >= 0 && lit <= l
		break
	}

	// 3. the data block, block size + 4 bytes (clamped to the data)
	real := s.DataSize >> s.BlockSizeLog
	if block >= real {
		block = max(0, real-1)
	}
	off := s.DataOff + block<<s.BlockSizeLog
	_, err = read(off, 1<<s.BlockSizeLog+4)
	return found, err
}
