package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/tbhost/tbhost/prefix"
)

// ProbeConfig is one configuration of bench probe.
type ProbeConfig struct {
	IO       IO     `json:"io"`
	Advise   Advice `json:"advise"`
	Parallel int    `json:"parallel"` // goroutines per request (1 = sequential)
	Store    string `json:"store,omitempty"`
}

// Name is the configuration's label in tables and legends.
func (c ProbeConfig) Name() string {
	par := "seq"
	if c.Parallel > 1 {
		par = fmt.Sprintf("par%d", c.Parallel)
	}
	store := "no-store"
	if c.Store != "" {
		store = "store"
	}
	return strings.Join([]string{string(c.IO), string(c.Advise), par, store}, "/")
}

// Matrix is the reference experiment's grid: pread/mmap x normal/random x
// sequential/parallel x without/with the prefix store (store "" leaves the
// store out, halving the grid).
func Matrix(parallel int, store string) []ProbeConfig {
	if parallel < 2 {
		parallel = 4
	}
	stores := []string{""}
	if store != "" {
		stores = append(stores, store)
	}
	var cs []ProbeConfig
	for _, s := range stores {
		for _, io := range []IO{IOPread, IOMmap} {
			for _, adv := range []Advice{AdviseNormal, AdviseRandom} {
				for _, par := range []int{1, parallel} {
					cs = append(cs, ProbeConfig{IO: io, Advise: adv, Parallel: par, Store: s})
				}
			}
		}
	}
	return cs
}

// ProbeOptions is a bench probe run.
type ProbeOptions struct {
	Set     *TableSet
	Configs []ProbeConfig
	Load    Load
	Mix     Mix
	Weight  Weighting // zero: by positions, all materials
	Cache   CacheMode
	// DropCachesPath is /proc/sys/vm/drop_caches (under --root in tests).
	DropCachesPath string
	Seed           uint64
	// Raw, when set, receives one CSV line per request (latencies.csv).
	Raw *CSVSink
	// Progress, when set, is told before each configuration starts.
	Progress func(i, n int, c ProbeConfig)
	// Disks, when set, measures the disks under the tables during each
	// configuration's run (Run.Disks; disks.go).
	Disks *DiskWatch
}

// RunProbes runs every configuration in turn and returns the report.
func RunProbes(ctx context.Context, o ProbeOptions) (*Report, error) {
	if err := o.Load.Validate(); err != nil {
		return nil, err
	}
	if o.Mix.Probes() < 1 {
		return nil, fmt.Errorf("--mix %d/%d: a request needs at least one probe", o.Mix.WDL, o.Mix.DTZ)
	}
	info := o.Set.Info()
	mix, w := o.Mix, o.Weight
	if w.By == "" {
		w.By = "positions"
	}
	rep := &Report{Command: "probe", Started: time.Now().UTC(), Clients: o.Load.Clients, Rate: o.Load.Rate,
		Tables: &info, Mix: &mix, Weight: &w, Seed: o.Seed}
	rep.Notices = append(rep.Notices, o.Set.Notices...)
	if err := o.Set.CheckOpenFiles(o.Configs); err != nil {
		return nil, err
	}
	for i, c := range o.Configs {
		if o.Progress != nil {
			o.Progress(i, len(o.Configs), c)
		}
		run, notice, err := runProbeConfig(ctx, o, c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name(), err)
		}
		rep.Runs = append(rep.Runs, run)
		if notice != "" {
			rep.Notices = append(rep.Notices, notice)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return rep, nil
}

// runProbeConfig runs configuration c; the notice, when not "", says that
// the clients' wait for a CPU was a sizeable part of the latency.
func runProbeConfig(ctx context.Context, o ProbeOptions, c ProbeConfig) (Run, string, error) {
	readers, closers, files, err := o.Set.open(c, ownProcessorReads(o.Load, c))
	defer func() {
		for _, cl := range closers {
			cl.Close()
		}
	}()
	if err != nil {
		return Run{}, "", err
	}
	w := o.Weight
	if w.By == "" {
		w.By = "positions"
	}
	p, err := newProber(o.Set.tables, readers, o.Mix, c.Parallel, w)
	if err != nil {
		return Run{}, "", err
	}
	prep := prepareCache(o.Cache, o.DropCachesPath, files)
	rngs := make([]*rand.Rand, o.Load.Clients)
	for i := range rngs {
		rngs[i] = rand.New(rand.NewPCG(o.Seed, uint64(i)))
	}
	var observe Observer
	if o.Raw != nil {
		name := c.Name()
		observe = func(s Sample) {
			o.Raw.Write(name, strconv.FormatInt(s.Seq, 10), strconv.Itoa(s.Client), msString(s.Elapsed-s.Latency),
				msString(s.Latency), "", strconv.FormatBool(s.Outcome.Failed()), strconv.FormatBool(s.Warmup))
		}
	}
	before, _ := o.Disks.Sample(ctx) // a failed sample: no per-disk table, not a failed run
	res, err := Drive(ctx, probeLoad(o.Load), func(ctx context.Context, client int, _ int64) Outcome {
		return p.request(ctx, rngs[client])
	}, observe)
	if err != nil {
		return Run{}, "", err
	}
	after, _ := o.Disks.Sample(context.WithoutCancel(ctx))
	run := newRun(c.Name(), o.Load, res)
	run.Disks = o.Disks.Since(before, after)
	cc := c
	run.Probe = &cc
	run.Cache = &prep
	return run, cpuWaitNotice(run.Name, run.Latency.Mean, res), nil
}

// ownProcessorReads reports whether every read of configuration c under
// load comes from a client with a processor of its own (see rawPread): the
// driver gives each client one (at most MaxOwnProcessorClients of them),
// and a request's probes run one after the other in its client
// (--parallel 1); parallel probes are goroutines that share the
// processors.
func ownProcessorReads(l Load, c ProbeConfig) bool {
	return probeLoad(l).ownsProcessors() && c.Parallel <= 1
}

// open opens every table for configuration c: through the prefix store
// when c.Store is set. It returns the readers, what to close, and the files
// whose cache matters. A configuration whose open files would not fit
// under the process's limit is refused before the first open
// (checkOpenFiles).
func (s *TableSet) open(c ProbeConfig, ownProcessor bool) ([]tableReader, []io.Closer, []string, error) {
	if err := checkOpenFiles(c, len(s.tables), openFileUse()); err != nil {
		return nil, nil, nil, err
	}
	return s.openAll(c, ownProcessor)
}

// openAll is open without the check first; where the opens meet the
// limit anyway (descriptors opened meanwhile, the system's own limit), the
// error says how to raise it.
func (s *TableSet) openAll(c ProbeConfig, ownProcessor bool) ([]tableReader, []io.Closer, []string, error) {
	limitHit := func(err error) error {
		if tooManyOpenFiles(err) {
			return fmt.Errorf("%w: %s", err, openFilesFix(descriptorsNeeded(c, len(s.tables), 0), c.IO))
		}
		return err
	}
	var store *prefix.Store
	if c.Store != "" {
		var err error
		// the manifest once for all tables, not once a table
		if store, err = prefix.OpenStore(c.Store); err != nil {
			return nil, nil, nil, limitHit(fmt.Errorf("prefix store: %w", err))
		}
	}
	var readers []tableReader
	var closers []io.Closer
	var files []string
	for _, t := range s.tables {
		if store != nil {
			tr, cls, fs, err := openThroughStore(t, store, c.IO, c.Advise, ownProcessor)
			closers = append(closers, cls...)
			if err != nil {
				return nil, closers, nil, limitHit(err)
			}
			readers = append(readers, tr)
			files = append(files, fs...)
			continue
		}
		r, cl, err := openFile(t.Path, c.IO, c.Advise, ownProcessor)
		if err != nil {
			return nil, closers, nil, limitHit(err)
		}
		closers = append(closers, cl)
		files = append(files, t.Path)
		readers = append(readers, tableReader{R: r})
	}
	return readers, closers, files, nil
}
