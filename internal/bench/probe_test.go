package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tbhost/tbhost/internal/realdata"
	"github.com/tbhost/tbhost/prefix"
	"github.com/tbhost/tbhost/prefix/prefixtest"
)

// copyTables copies the real tables into a temp dir (they are read-only and
// shared) and writes a prefix store beside them; it returns both dirs.
func copyTables(t testing.TB) (tables, store string) {
	t.Helper()
	tables, store = realdata.CopyTables(t), t.TempDir()
	set, err := LoadTables(context.Background(), []string{tables})
	if err != nil {
		t.Fatal(err)
	}
	if err := set.ExtractStore(context.Background(), store); err != nil {
		t.Fatal(err)
	}
	return tables, store
}

// On the real tables, the sparse entry plus the block-length walk must land
// inside a block for every position: this checks the probe reads what a
// real reader reads, at the offsets the prefix parser reported, through
// os.File and through the raw pread of clients on their own threads.
func TestProbeWalkLandsInBlockOnRealTables(t *testing.T) {
	set, err := LoadTables(context.Background(), []string{realdata.Tables(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, ownProcessor := range []bool{false, true} {
		t.Run(fmt.Sprintf("ownProcessor=%v", ownProcessor), func(t *testing.T) { probeWalkLandsInBlock(t, set, ownProcessor) })
	}
}

func probeWalkLandsInBlock(t *testing.T, set *TableSet, ownProcessor bool) {
	p := sequentialProber(t, set, AdviseNormal, ownProcessor)
	if _, raw := p.readers[0].R.(*rawPread); raw != ownProcessor {
		t.Fatalf("reader %T for ownProcessor=%v", p.readers[0].R, ownProcessor)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, p.maxRead)
	var out Outcome
	for i := 0; i < 5000; i++ {
		src := p.wdl
		if i%2 == 1 {
			src = p.dtz
		}
		pk := src.draw(rng, set.tables)
		found, err := p.probe(pk, buf, &out)
		if err != nil {
			t.Fatal(err)
		}
		if !found {
			tb := set.tables[pk.table]
			t.Fatalf("%s subtable %d position %d: walk left the blocks", tb.Name, pk.sub, pk.idx)
		}
	}
	if out.Reads < 3*5000 || out.SlowReads != out.Reads {
		t.Errorf("reads %d slow %d for 5000 probes without a store", out.Reads, out.SlowReads)
	}
}

// recReader records the reads made through it.
type recReader struct {
	r     io.ReaderAt
	mu    sync.Mutex
	reads [][2]int64
}

func (r *recReader) ReadAt(p []byte, off int64) (int, error) {
	r.mu.Lock()
	r.reads = append(r.reads, [2]int64{off, int64(len(p))})
	r.mu.Unlock()
	return r.r.ReadAt(p, off)
}

// syntheticProber writes the synthetic table spec and returns its loaded
// set and a DTZ-only prober whose reads of the table rec records.
func syntheticProber(t *testing.T, spec prefixtest.Spec, w Weighting) (*TableSet, *prober, *recReader) {
	t.Helper()
	dir := t.TempDir()
	path, _, err := prefixtest.WriteTable(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	set, err := LoadTables(context.Background(), []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	rec := &recReader{r: f}
	p, err := newProber(set.tables, []tableReader{{R: rec, SlowFrom: set.tables[0].Prefix}}, Mix{DTZ: 1}, 1, w)
	if err != nil {
		t.Fatal(err)
	}
	return set, p, rec
}

// On a synthetic table the probe's reads come in the documented shape and
// order: 6-byte sparse entry, 32-byte block-length run, block size + 4.
func TestProbeShapeOnSyntheticTable(t *testing.T) {
	set, p, rec := syntheticProber(t, prefixtest.Spec{Name: "KRvK.rtbz", Subs: []prefixtest.Sub{{BlockSizeLog: 8, IdxBits: 6}}}, Weighting{By: "bytes"})
	st := set.tables[0].Subtables[0]
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 200; i++ {
		rec.reads = nil
		out := p.run(context.Background(), p.plan(rng))
		if out.Err != nil || out.Probes != 1 {
			t.Fatalf("%+v", out)
		}
		if len(rec.reads) < 3 {
			t.Fatalf("reads %v", rec.reads)
		}
		sp, bl, data := rec.reads[0], rec.reads[1], rec.reads[len(rec.reads)-1]
		if sp[1] != 6 || sp[0] < st.SparseOff || sp[0]+6 > st.SparseOff+st.SparseSize {
			t.Fatalf("sparse read %v outside [%d,+%d)", sp, st.SparseOff, st.SparseSize)
		}
		if bl[1] > 32 || bl[1]%2 != 0 || bl[0] < st.BlenOff || bl[0]+bl[1] > st.BlenOff+st.BlenSize {
			t.Fatalf("block-length read %v outside [%d,+%d)", bl, st.BlenOff, st.BlenSize)
		}
		if data[0] < st.DataOff || data[0] >= st.DataOff+st.DataSize || (data[0]-st.DataOff)%256 != 0 {
			t.Fatalf("data read %v not at a block start in [%d,+%d)", data, st.DataOff, st.DataSize)
		}
		if data[1] != 256+4 && data[0]+data[1] != set.tables[0].Size {
			t.Fatalf("data read %v: want block size + 4 = 260 bytes", data)
		}
		// only the data read ends beyond the prefix: one slow read per probe
		if out.SlowReads != 1 {
			t.Fatalf("slow reads %d with the prefix on fast storage, want 1", out.SlowReads)
		}
	}
}

// A synthetic table's sparse index agrees with its block lengths, so probes
// land without a walk (three reads) and spread over the data blocks like on a
// real table, instead of piling onto one block: the lab's load depends on it.
func TestProbesSpreadOverSyntheticData(t *testing.T) {
	subs := make([]prefixtest.Sub, prefixtest.NumSubtables("KRPvKR.rtbz"))
	for i := range subs {
		subs[i] = prefixtest.Sub{BlockSizeLog: 6, IdxBits: 12}
	}
	set, p, rec := syntheticProber(t, prefixtest.Spec{Name: "KRPvKR.rtbz", Subs: subs}, Weighting{By: "positions"})
	blocks := int64(0)
	for _, st := range set.tables[0].Subtables {
		blocks += int64(st.NumBlocks)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	const probes = 2000
	seen := map[int64]bool{}
	for i := 0; i < probes; i++ {
		rec.reads = nil
		if out := p.run(context.Background(), p.plan(rng)); out.Err != nil {
			t.Fatal(out.Err)
		}
		if len(rec.reads) != 3 {
			t.Fatalf("probe %d: %d reads %v, want 3 (the sparse entry lands on the block)", i, len(rec.reads), rec.reads)
		}
		seen[rec.reads[2][0]] = true
	}
	if want := min(blocks, probes) / 2; int64(len(seen)) < want {
		t.Fatalf("%d probes read %d distinct data blocks of %d, want at least %d", probes, len(seen), blocks, want)
	}
}

func TestMatrixOnRealTablesWithStore(t *testing.T) {
	tables, store := copyTables(t)
	set, err := LoadTables(context.Background(), []string{tables})
	if err != nil {
		t.Fatal(err)
	}
	cfgs := Matrix(2, store)
	if len(cfgs) != 16 {
		t.Fatalf("%d configurations, want 16", len(cfgs))
	}
	rep, err := RunProbes(context.Background(), ProbeOptions{
		Set: set, Configs: cfgs, Mix: DefaultMix(), Cache: CacheEvict,
		Load: Load{Clients: 2, Requests: 30, Warmup: 10}, Seed: 7,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 16 {
		t.Fatalf("%d runs", len(rep.Runs))
	}
	for _, r := range rep.Runs {
		if r.Requests != 20 || r.Failures != 0 || r.ProbesPerRequest != 93 {
			t.Errorf("%s: %+v", r.Name, r)
		}
		if r.Probe.Store != "" && r.SlowReadsPerProbe != 1 {
			t.Errorf("%s: %.2f slow reads per probe with the store, want exactly 1", r.Name, r.SlowReadsPerProbe)
		}
		if r.Probe.Store == "" && (r.SlowReadsPerProbe != r.ReadsPerProbe || r.ReadsPerProbe < 3) {
			t.Errorf("%s: %.2f slow of %.2f reads per probe without the store", r.Name, r.SlowReadsPerProbe, r.ReadsPerProbe)
		}
		if r.Cache == nil || r.Cache.Done == "" {
			t.Errorf("%s: cache preparation not reported", r.Name)
		}
	}

	// a stale prefix is refused by the prefix package, not benchmarked
	pp := filepath.Join(store, "KRvKP.rtbw.prefix")
	b, err := os.ReadFile(pp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pp, b[:len(b)-64], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = RunProbes(context.Background(), ProbeOptions{Set: set, Configs: cfgs[8:9], Mix: DefaultMix(), Cache: CacheKeep,
		Load: Load{Clients: 1, Requests: 2, Warmup: 1}})
	if err == nil || !strings.Contains(err.Error(), "KRvKP.rtbw") {
		t.Errorf("truncated prefix: %v", err)
	}
	dir := t.TempDir()
	if err := rep.WriteFiles(dir, 0); err != nil {
		t.Fatal(err)
	}
	checkPlots(t, dir, "mmap/random/par2/store")
}

func TestWeightingByRequestMix(t *testing.T) {
	set, err := LoadTables(context.Background(), []string{realdata.Tables(t)})
	if err != nil {
		t.Fatal(err)
	}
	log := "8/8/8/8/8/8/8/KRk5 w - - 0 1\n" + // KRvK
		"8/8/8/8/8/8/8/krK5 b - - 0 1\n" + // KRvK, colours swapped
		"/standard?fen=8/8/8/8/8/8/8/KQkr4_w_-_-_0_1\n" + // KQvKR: not in the set
		"8/8/8/8/8/8/8/KBNk4 w - - 0 1\n" // KBNvK
	mix, unmatched, example, err := set.MaterialMix(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if unmatched != 1 || example != "KQvKR" || len(mix) != 2 || mix["KRvK"] != 2.0/3 || mix["KBNvK"] != 1.0/3 {
		t.Fatalf("mix %v, unmatched %d (%s)", mix, unmatched, example)
	}
	p := newPicker(set.tables, true, Weighting{By: "positions", Materials: mix})
	rng := rand.New(rand.NewPCG(5, 6))
	counts := map[string]int{}
	for i := 0; i < 30000; i++ {
		pk := p.draw(rng, set.tables)
		counts[set.tables[pk.table].Name]++
	}
	if len(counts) != 2 || counts["KRvK.rtbz"] < 19000 || counts["KRvK.rtbz"] > 21000 {
		t.Errorf("DTZ probes by table: %v, want 2/3 KRvK and 1/3 KBNvK", counts)
	}
	// by bytes, the largest DTZ file gets the largest share
	pb := newPicker(set.tables, true, Weighting{By: "bytes"})
	counts = map[string]int{}
	for i := 0; i < 30000; i++ {
		counts[set.tables[pb.draw(rng, set.tables).table].Name]++
	}
	if counts["KBNvK.rtbz"] < counts["KRvK.rtbz"] || counts["KBNvK.rtbz"] < 30000/10 {
		t.Errorf("by bytes: %v", counts)
	}
	if _, err := ParseWeight("files"); err == nil {
		t.Error("--weight files accepted")
	}
}

// With only sparse prefixes on fast storage (prefix extract --upto
// sparse-index), the block-length run comes from the tables too: 2 slow
// reads per probe, or more when the walk needs another run.
func TestSparsePrefixStoreHalvesSlowReads(t *testing.T) {
	tables, _ := copyTables(t)
	set, err := LoadTables(context.Background(), []string{tables})
	if err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	rep, err := prefix.Extract(context.Background(), set.parsed, prefix.ExtractOptions{Store: store, Upto: prefix.UptoSparseIndex})
	if err != nil || len(rep.Failed) > 0 {
		t.Fatalf("extract: %v %v", err, rep.Failed)
	}
	for _, how := range []IO{IOPread, IOMmap} {
		r, err := RunProbes(context.Background(), ProbeOptions{Set: set, Mix: DefaultMix(), Cache: CacheKeep,
			Configs: []ProbeConfig{{IO: how, Advise: AdviseRandom, Parallel: 1, Store: store}},
			Load:    Load{Clients: 2, Requests: 20, Warmup: 2}})
		if err != nil {
			t.Fatal(err)
		}
		run := r.Runs[0]
		if run.SlowReadsPerProbe < 2 || run.SlowReadsPerProbe != run.ReadsPerProbe-1 {
			t.Errorf("%s: %.2f slow of %.2f reads per probe with sparse prefixes, want all but the sparse entry", how, run.SlowReadsPerProbe, run.ReadsPerProbe)
		}
	}
}

// A sequential request allocates nothing, so a probe run sees no garbage
// collection, whose stop-the-world would wait for the raw reads in flight
// (rawPread) and stall every client behind the slowest disk.
func TestSequentialRequestAllocatesNothing(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := prefixtest.WriteTable(dir, prefixtest.Spec{Name: "KRvK.rtbz", Subs: []prefixtest.Sub{{BlockSizeLog: 8, IdxBits: 6}}}); err != nil {
		t.Fatal(err)
	}
	set, err := LoadTables(context.Background(), []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	p := sequentialProber(t, set, AdviseRandom, true)
	rng := rand.New(rand.NewPCG(5, 6))
	ctx := context.Background()
	if out := p.request(ctx, rng); out.Err != nil || out.Probes != int64(DefaultMix().Probes()) {
		t.Fatalf("request: %+v", out)
	}
	if raceEnabled {
		t.Skip("built with -race: its instrumentation allocates")
	}
	if n := testing.AllocsPerRun(200, func() { p.request(ctx, rng) }); n != 0 {
		t.Errorf("a sequential request makes %.1f allocations, want 0", n)
	}
}

// sequentialProber opens set for pread with advice (through rawPread
// when ownProcessor) and returns a prober of the default mix, one probe after
// the other; the files are closed when tb ends.
func sequentialProber(tb testing.TB, set *TableSet, advice Advice, ownProcessor bool) *prober {
	tb.Helper()
	readers, closers, _, err := set.open(ProbeConfig{IO: IOPread, Advise: advice, Parallel: 1}, ownProcessor)
	tb.Cleanup(func() {
		for _, c := range closers {
			c.Close()
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	p, err := newProber(set.tables, readers, DefaultMix(), 1, Weighting{By: "positions"})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}
