// Package benchcmd is the `tbhost bench` command group: a thin layer over
// internal/bench (probe, replay, and a built-in target for demos).
package benchcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/tbhost/tbhost/internal/bench"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/urfave/cli/v2"
)

// Command returns the `bench` command group.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure tail latency before cutover: probe-shaped disk reads, request-log replay",
		Description: `Users feel the tail, not the mean. A tablebase request is a burst of probes (23 WDL + 70 DTZ
   on the public server); each probe reads a sparse-index entry, a 32-byte run of block lengths
   and one compressed block. bench probe issues exactly those reads from the parsed table
   layouts, through the prefix store if you have one, and compares pread/mmap, kernel advice,
   parallel probes and the store in one grid. bench replay sends a logged request stream to
   one or more tablebase HTTP servers (GET /standard?fen=...) and compares their latency.

   Both print p50/p90/p99/p99.9/max per configuration or target (HDR histograms, warm-up
   excluded) and, with --out DIR, write summary.json, ecdf.png and ecdf.svg (latency ECDF on a
   log axis; --offset adds the client's round trip, as in the reference migration's figure).

   Typical use, in minutes:
     tbhost bench probe --tables /srv/syzygy --store /srv/prefix --matrix --out /tmp/bench
     tbhost bench fens --tables /srv/syzygy --count 10000 > fens.log      (a demo log)
     tbhost bench serve --tables /srv/syzygy --listen 127.0.0.1:9090 &  (a demo target)
     tbhost bench replay --log fens.log --target http://127.0.0.1:9090 --out /tmp/replay

EXIT CODES:
   0 all requests succeeded, 1 some failed (named in the summary and the failures file) or
   the run was stopped early, 2 usage error, 3 could not run (tables unreadable, ...).`,
		Action: cliutil.GroupAction,
		Subcommands: []*cli.Command{
			probeCommand(),
			replayCommand(),
			serveCommand(),
			fensCommand(),
		},
	}
}

// withMaxTime bounds ctx by --max-time (0: unbounded).
func withMaxTime(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, d, fmt.Errorf("--max-time %s reached", d))
}

func tablesFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "tables", Usage: "table directory `DIR` (searched recursively; repeat for several); required"}
}

func storeFlag() cli.Flag {
	return &cli.StringFlag{Name: "store", Usage: "prefix store `DIR` (from tbhost prefix extract): probes read the prefix there and only the data block from the tables"}
}

func ioFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "io", Value: "pread", Usage: "how tables are read: pread or mmap"},
		&cli.StringFlag{Name: "advise", Value: "normal", Usage: "kernel hint: normal, or random (POSIX_FADV_RANDOM / MADV_RANDOM: no readahead)"},
		&cli.IntFlag{Name: "parallel", Value: 1, Usage: "split each request's probes over `N` goroutines (1 = sequential)"},
		&cli.StringFlag{Name: "mix", Value: "23/70", Usage: "probes per request as `WDL/DTZ` (the public server: 23 WDL, 70 DTZ)"},
	}
}

func outputFlags(offset time.Duration) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "out", Usage: "write summary.json, ecdf.png and ecdf.svg (and latencies.csv with --raw) into `DIR`"},
		&cli.BoolFlag{Name: "raw", Usage: "with --out: also write every request's latency to latencies.csv"},
		&cli.DurationFlag{Name: "offset", Value: offset, Usage: "added to latencies in the plot (the client's round trip, e.g. 30ms), printed in the legend; 0 for none"},
		&cli.DurationFlag{Name: "max-time", Usage: "stop after `DURATION` and report what was measured (exit 1); 0 = no limit"},
		&cli.Float64Flag{Name: "rate", Usage: "open loop: send `R` requests/s in total, latency measured from each request's intended send time (no coordinated omission); 0 = closed loop"},
		&cli.IntFlag{Name: "clients", Value: 12, Usage: fmt.Sprintf("concurrent clients (`N`, 1-%d)", bench.MaxClients)},
		cliutil.JSONFlag(),
	}
}

func parseMix(s string) (bench.Mix, error) {
	w, d, ok := strings.Cut(s, "/")
	nw, err1 := strconv.Atoi(w)
	nd, err2 := strconv.Atoi(d)
	if !ok || err1 != nil || err2 != nil || nw < 0 || nd < 0 || nw+nd == 0 {
		return bench.Mix{}, cliutil.Usagef("--mix %q: want WDL/DTZ probe counts such as 23/70", s)
	}
	return bench.Mix{WDL: nw, DTZ: nd}, nil
}

func probeConfig(c *cli.Context) (bench.ProbeConfig, bench.Mix, error) {
	how, err := bench.ParseIO(c.String("io"))
	if err != nil {
		return bench.ProbeConfig{}, bench.Mix{}, cliutil.Usage(err)
	}
	adv, err := bench.ParseAdvice(c.String("advise"))
	if err != nil {
		return bench.ProbeConfig{}, bench.Mix{}, cliutil.Usage(err)
	}
	if c.Int("parallel") < 1 {
		return bench.ProbeConfig{}, bench.Mix{}, cliutil.Usagef("--parallel %d: need at least 1", c.Int("parallel"))
	}
	mix, err := parseMix(c.String("mix"))
	if err != nil {
		return bench.ProbeConfig{}, bench.Mix{}, err
	}
	return bench.ProbeConfig{IO: how, Advise: adv, Parallel: c.Int("parallel"), Store: c.String("store")}, mix, nil
}

func loadTables(ctx context.Context, g *cliutil.Globals, dirs []string) (*bench.TableSet, error) {
	if len(dirs) == 0 {
		return nil, cliutil.Usagef("--tables DIR is required: the directory holding the .rtbw/.rtbz files (e.g. /srv/syzygy)")
	}
	set, err := bench.LoadTables(ctx, dirs)
	if err != nil {
		return nil, cliutil.CannotRun(err)
	}
	for _, n := range set.Notices {
		fmt.Fprintf(g.Stderr, "tbhost: %s\n", n)
	}
	return set, nil
}

// finish prints the report, writes --out files and picks the exit code.
func finish(c *cli.Context, g *cliutil.Globals, rep *bench.Report, sinks ...*bench.CSVSink) error {
	var errs []error
	for _, s := range sinks {
		if s == nil {
			continue
		}
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		} else if s.Lines() > 0 {
			rep.Files = append(rep.Files, s.Path)
		}
	}
	rep.OffsetMs = float64(c.Duration("offset")) / 1e6 // in effect with or without --out
	if dir := c.String("out"); dir != "" {
		if err := rep.WriteFiles(dir, c.Duration("offset")); err != nil {
			errs = append(errs, err)
		}
	}
	if err := g.Output(rep, rep.WriteTable); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return cliutil.CannotRun(err)
	}
	if rep.Failed() {
		return cliutil.Problemf("some requests failed or the run stopped early (see above)")
	}
	var failed []string
	for _, gr := range rep.Gates {
		if !gr.Pass {
			failed = append(failed, gr.Message)
		}
	}
	if len(failed) > 0 {
		return cliutil.Problemf("cutover gate failed: %s", strings.Join(failed, "; "))
	}
	return nil
}

func rawSink(c *cli.Context) (*bench.CSVSink, error) {
	if !c.Bool("raw") {
		return nil, nil
	}
	if c.String("out") == "" {
		return nil, cliutil.Usagef("--raw writes latencies.csv into --out DIR; give --out")
	}
	return bench.NewCSVSink(filepath.Join(c.String("out"), "latencies.csv"), bench.RawHeader()), nil
}

// bar draws one progress bar per configuration or target on a terminal
// (nothing otherwise: cron logs get the summary only).
type bar struct {
	g    *cliutil.Globals
	mu   sync.Mutex
	name string
	bar  *progressbar.ProgressBar
}

func newBar(g *cliutil.Globals) *bar {
	if !g.Terminal() || g.JSON {
		return nil
	}
	return &bar{g: g}
}

// set moves the bar of run name to done of total (a new name starts a new bar).
func (b *bar) set(name string, done, total int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar == nil || name != b.name {
		b.finishLocked()
		b.name = name
		b.bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(b.g.Stderr),
			progressbar.OptionSetDescription(name), progressbar.OptionShowCount(), progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("req"), progressbar.OptionThrottle(200*time.Millisecond))
	}
	b.bar.Set64(done)
}

func (b *bar) finish() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.finishLocked()
}

func (b *bar) finishLocked() {
	if b.bar != nil {
		b.bar.Finish()
		fmt.Fprintln(b.g.Stderr)
		b.bar = nil
	}
}

// ---- probe ----

func probeCommand() *cli.Command {
	return &cli.Command{
		Name:  "probe",
		Usage: "probe-shaped reads from the table files: pread vs mmap, advice, parallel probes, prefix store",
		Description: `Each request is a burst of probes (--mix, default 23 WDL + 70 DTZ). A probe picks a random
   position in a random subtable (weighted by its number of positions), then reads what a
   Syzygy reader reads, in order: the 6-byte sparse-index entry, the 32-byte run of block
   lengths it points to (another run if the walk leaves it), and the data block (block size
   + 4 bytes). The table layouts come from tbhost's prefix parser; with --store the first two
   reads come from the prefix store, so "slow/probe" (reads that reach the table files, i.e.
   the HDD array) drops to 1.

   --matrix runs the reference experiment's grid in one go: pread/mmap x normal/random advice
   x sequential/--parallel (default 4) x without/with the store (a temporary store is
   extracted when --store is not given). Before each configuration --cache decides the page
   cache: evict (the default: POSIX_FADV_DONTNEED on the files under test only, safe on a
   live server), drop (echo 3 > /proc/sys/vm/drop_caches: the whole host's page cache,
   needs root; falls back to evict and says so), keep (warm).

   Defaults are short (1000 requests, first 100 as warm-up, 12 clients): raise --requests on
   a real host. --cache drop empties the whole host's page cache: not on a live server.

   Columns: requests (measured), failed, mean, p50 ... max (latency of one whole request),
   req/s, reads/probe, slow/probe. --json prints the same as summary.json. A note says when
   the clients waited for a CPU for more than a tenth of the mean latency (their threads'
   run-queue wait): then this machine's processors, not the disks, set that part.`,
		Flags: append(append([]cli.Flag{
			tablesFlag(),
			storeFlag(),
			&cli.BoolFlag{Name: "matrix", Usage: "run the whole grid (pread/mmap x normal/random x sequential/parallel x without/with store); --io/--advise are ignored"},
			&cli.Int64Flag{Name: "requests", Value: 1000, Usage: "requests per configuration, warm-up included (`N`)"},
			&cli.Int64Flag{Name: "warmup", Value: 100, Usage: "first `N` requests of each configuration are not measured"},
			&cli.StringFlag{Name: "cache", Value: "evict", Usage: "page cache before each configuration: evict (the files under test), drop (the whole host's, root) or keep"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "random seed for positions (same seed, same reads)"},
			&cli.StringFlag{Name: "weight", Value: "positions", Usage: "spread probes by positions (a random position of the set) or bytes (evenly over the compressed data)"},
			&cli.StringFlag{Name: "weight-log", Usage: "request mix: weight each material by its share of the requests in `FILE` (FENs or /standard?fen= paths, as bench replay takes)"},
		}, ioFlags()...), outputFlags(0)...),
		Action: runProbe,
	}
}

func runProbe(c *cli.Context) error {
	g := cliutil.Get(c)
	cfg, mix, err := probeConfig(c)
	if err != nil {
		return err
	}
	cache, err := bench.ParseCacheMode(c.String("cache"))
	if err != nil {
		return cliutil.Usage(err)
	}
	weight, err := bench.ParseWeight(c.String("weight"))
	if err != nil {
		return cliutil.Usage(err)
	}
	load := bench.Load{Clients: c.Int("clients"), Requests: c.Int64("requests"), Warmup: c.Int64("warmup"), Rate: c.Float64("rate")}
	if err := load.Validate(); err != nil {
		return cliutil.Usage(err)
	}
	raw, err := rawSink(c)
	if err != nil {
		return err
	}
	ctx, cancel := cliutil.SignalContext(c)
	defer cancel()
	ctx, cancelT := withMaxTime(ctx, c.Duration("max-time"))
	defer cancelT()
	set, err := loadTables(ctx, g, c.StringSlice("tables"))
	if err != nil {
		return err
	}
	configs := []bench.ProbeConfig{cfg}
	var notices []string
	if name := c.String("weight-log"); name != "" {
		f, err := os.Open(name)
		if err != nil {
			return cliutil.CannotRun(fmt.Errorf("--weight-log: %w", err))
		}
		mix, unmatched, example, err := set.MaterialMix(f)
		f.Close()
		if err != nil {
			return cliutil.Problem(fmt.Errorf("--weight-log %s: %w", name, err))
		}
		weight.Materials = mix
		notices = append(notices, fmt.Sprintf("probes weighted by the %d materials of %s", len(mix), name))
		if unmatched > 0 {
			notices = append(notices, fmt.Sprintf("%d requests of %s have a material these tables lack (e.g. %s); left out of the mix", unmatched, name, example))
		}
	}
	if c.Bool("matrix") {
		// refused before a temporary store is extracted for it
		if err := set.CheckOpenFiles(bench.Matrix(c.Int("parallel"), "store")); err != nil {
			return cliutil.CannotRun(err)
		}
		store := cfg.Store
		if store == "" {
			tmp, err := os.MkdirTemp("", "tbhost-bench-store-")
			if err != nil {
				return cliutil.CannotRun(fmt.Errorf("temporary prefix store: %w", err))
			}
			defer os.RemoveAll(tmp)
			if err := set.ExtractStore(ctx, tmp); err != nil {
				return cliutil.CannotRun(err)
			}
			store = tmp
			notices = append(notices, fmt.Sprintf("no --store: extracted a temporary prefix store in %s (removed afterwards); it sits on that disk, not on your NVMe array, so compare slow/probe rather than latency for the store rows", tmp))
		}
		configs = bench.Matrix(c.Int("parallel"), store)
	}
	disks, diskNotes := diskWatch(g, set)
	notices = append(notices, diskNotes...)
	in := set.Info()
	if !g.JSON {
		fmt.Fprintf(g.Stderr, "bench probe: %d tables (%d subtables with data), %d configuration(s) x %d requests of %d probes, %d clients\n",
			in.Tables, in.Subtables, len(configs), load.Requests, mix.Probes(), load.Clients)
	}
	pb := newBar(g)
	current := ""
	var curMu sync.Mutex
	load.Progress = func(done, total int64) {
		curMu.Lock()
		name := current
		curMu.Unlock()
		pb.set(name, done, total)
	}
	rep, err := bench.RunProbes(ctx, bench.ProbeOptions{
		Set: set, Configs: configs, Load: load, Mix: mix, Weight: weight, Cache: cache,
		DropCachesPath: g.Path("/proc/sys/vm/drop_caches"), Seed: c.Uint64("seed"), Raw: raw, Disks: disks,
		Progress: func(i, n int, pc bench.ProbeConfig) {
			name := fmt.Sprintf("[%d/%d] %s", i+1, n, pc.Name())
			curMu.Lock()
			current = name
			curMu.Unlock()
			if pb != nil {
				pb.set(name, 0, load.Requests)
			} else if !g.JSON {
				fmt.Fprintln(g.Stderr, name)
			}
		},
	})
	pb.finish()
	if err != nil {
		if raw != nil {
			raw.Close()
		}
		return cliutil.CannotRun(err)
	}
	rep.Notices = append(rep.Notices, notices...)
	return finish(c, g, rep, raw)
}

// ---- replay ----

func replayCommand() *cli.Command {
	return &cli.Command{
		Name:  "replay",
		Usage: "replay a request log against tablebase HTTP servers and compare their latency",
		Description: `The log has one request per line: a FEN (sent as GET /standard?fen=<FEN>), or a URL path
   such as /standard?fen=... (a full http:// URL keeps its path and query). Blank lines and
   # comments are skipped. Every --target gets the same requests in the same order, one
   target after the other.

   Closed loop by default (--clients each send the next line when the previous answer is
   in); with --rate the requests are due at a fixed rate and latency counts from the due
   time, so a server that stalls is charged for the queue it causes.

   --warmup is a count (800000) or a share of the log (80%, the default: the reference
   replayed 1,000,000 requests and discarded the first 800,000). Warm-up requests are sent
   but not measured; their failures are still counted and written.

   Percentiles cover every measured request, failed ones included (a timeout is what the
   user felt). Any failed request (no answer, timeout, status outside 2xx) is written to the
   failures file (--failures, default DIR/failures.csv with --out, else
   ./bench-failures.csv, created only when something failed) and makes the exit code 1.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "log", Usage: "request log `FILE` (- for stdin); required"},
			&cli.StringSliceFlag{Name: "target", Usage: "base `URL` of a tablebase server, e.g. http://127.0.0.1:9090, or NAME=URL to name it for --gate (old=http://old-host:9090); repeat to compare; required"},
			&cli.Float64Flag{Name: "speed", Value: 1, Usage: "a timed log (nginx $msec, RFC 3339 or access-log times) is replayed at its own pace times `X` (2 = twice as fast), latency from each request's intended send time; 0 ignores the timestamps"},
			&cli.StringSliceFlag{Name: "gate", Usage: "cutover condition `STAT<=LIMIT`, checked on every other target: 'p99<=1.0*old' (no worse than the target named old), 'p99.9<=1.1*old', 'p99<=50ms'; STAT is p50, p90, p99, p99.9, max or mean; exit 1 when one fails (repeat for several)"},
			&cli.StringFlag{Name: "warmup", Value: "80%", Usage: "requests not measured: a count or a share of the log"},
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "per request; a request that takes longer fails"},
			&cli.StringFlag{Name: "failures", Usage: "CSV `FILE` for failed requests (target, seq, path, status, error, latency_ms, warmup)"},
		}, outputFlags(30*time.Millisecond)...),
		Action: runReplay,
	}
}

func runReplay(c *cli.Context) error {
	g := cliutil.Get(c)
	if c.String("log") == "" || len(c.StringSlice("target")) == 0 {
		return cliutil.Usagef("--log FILE and --target URL are required (e.g. --log requests.log --target http://127.0.0.1:9090)")
	}
	warm, err := bench.ParseWarmup(c.String("warmup"))
	if err != nil {
		return cliutil.Usage(err)
	}
	var names, urls []string
	seenName := map[string]bool{}
	for _, t := range c.StringSlice("target") {
		n, u, err := bench.ParseTarget(t)
		if err != nil {
			return cliutil.Usage(err)
		}
		if seenName[n] {
			return cliutil.Usagef("--target %q: the name %q is given twice", t, n)
		}
		seenName[n] = true
		names, urls = append(names, n), append(urls, u)
	}
	var gates []bench.Gate
	for _, s := range c.StringSlice("gate") {
		gt, err := bench.ParseGate(s)
		if err != nil {
			return cliutil.Usage(err)
		}
		if gt.Ref != "" && !seenName[gt.Ref] {
			return cliutil.Usagef("--gate %q: no target named %q; name one with --target %s=URL", s, gt.Ref, gt.Ref)
		}
		if gt.Ref != "" && len(urls) < 2 {
			return cliutil.Usagef("--gate %q compares targets: give at least two --target", s)
		}
		gates = append(gates, gt)
	}
	if c.Int("clients") < 1 || c.Int("clients") > bench.MaxClients {
		return cliutil.Usagef("--clients %d: want 1 to %d", c.Int("clients"), bench.MaxClients)
	}
	raw, err := rawSink(c)
	if err != nil {
		return err
	}
	var in io.Reader = g.Stdin
	if name := c.String("log"); name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return cliutil.CannotRun(fmt.Errorf("--log: %w", err))
		}
		defer f.Close()
		in = f
	}
	log, err := bench.ReadLog(in)
	if err != nil {
		return cliutil.Problem(fmt.Errorf("--log %s: %w", c.String("log"), err))
	}
	paths := log.Paths
	if log.Escaped > 0 {
		fmt.Fprintf(g.Stderr, "note: %d log lines held bytes a URL may not (space, CR/LF, control, non-ASCII, a stray %%): sent percent-encoded\n", log.Escaped)
	}
	failPath := c.String("failures")
	if failPath == "" {
		failPath = "bench-failures.csv"
		if c.String("out") != "" {
			failPath = filepath.Join(c.String("out"), "failures.csv")
		}
	}
	fails := bench.NewCSVSink(failPath, bench.FailureHeader())
	ctx, cancel := cliutil.SignalContext(c)
	defer cancel()
	ctx, cancelT := withMaxTime(ctx, c.Duration("max-time"))
	defer cancelT()
	if !g.JSON {
		fmt.Fprintf(g.Stderr, "bench replay: %d requests (warm-up %s) against %d target(s), %d clients\n",
			len(paths), warm, len(c.StringSlice("target")), c.Int("clients"))
	}
	pb := newBar(g)
	var schedule []time.Duration
	speed := c.Float64("speed")
	switch {
	case speed < 0 || speed > 1000:
		return cliutil.Usagef("--speed %g: want 0 (ignore the log's times) or a factor up to 1000", speed)
	case log.Offsets != nil && speed > 0 && c.Float64("rate") > 0:
		return cliutil.Usagef("--rate with a timed log: give --speed 0 to ignore its timestamps, or leave out --rate")
	case log.Offsets != nil && speed > 0:
		schedule = make([]time.Duration, len(log.Offsets))
		for i, o := range log.Offsets {
			schedule[i] = time.Duration(float64(o) / speed)
		}
		if !g.JSON {
			fmt.Fprintf(g.Stderr, "bench replay: a timed log (%s of requests): at its own pace x%g, %s\n",
				log.Offsets[len(log.Offsets)-1].Round(time.Millisecond), speed, schedule[len(schedule)-1].Round(time.Millisecond))
		}
	}
	if log.Disordered > 0 {
		fmt.Fprintf(g.Stderr, "note: %d log lines are earlier than the line before them (logged when the request ended): sent right after it\n", log.Disordered)
	}
	if log.Skipped > 0 {
		fmt.Fprintf(g.Stderr, "note: %d access-log lines of other methods than GET/HEAD skipped\n", log.Skipped)
	}
	rep, err := bench.RunReplay(ctx, bench.ReplayOptions{
		Schedule: schedule, Speed: speed,
		Paths: paths, Targets: urls, Names: names, Clients: c.Int("clients"), Warmup: warm,
		Rate: c.Float64("rate"), Timeout: c.Duration("timeout"), Failures: fails, Raw: raw,
		Progress: pb.set,
	})
	pb.finish()
	if err != nil {
		fails.Close()
		if raw != nil {
			raw.Close()
		}
		return cliutil.Usage(err)
	}
	if len(gates) > 0 && len(rep.Runs) == len(urls) {
		if rep.Gates, err = bench.CheckGates(gates, rep.Runs); err != nil {
			return cliutil.Usage(err)
		}
	}
	return finish(c, g, rep, fails, raw)
}

// ---- serve ----

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "a built-in tablebase-shaped HTTP target for demos and tests (a load generator, not a chess engine)",
		Description: `Serves GET /standard?fen=<FEN> by doing one request's worth of probe-shaped reads (--mix)
   from the tables, through the prefix store with --store. The FEN's material picks the
   table (KRvK, or its colour-swapped twin); a hash of the FEN picks subtables and positions.
   The answer is JSON with the material and the reads done, NOT a chess result: use it to
   exercise disks and bench replay, never as a tablebase. Unknown material: 404; bad FEN: 400.

   Listens on 127.0.0.1:9090 by default; stops on Ctrl-C or SIGTERM.`,
		Flags: append([]cli.Flag{
			tablesFlag(),
			storeFlag(),
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:9090", Usage: "`ADDR` to listen on"},
			&cli.DurationFlag{Name: "delay", Usage: "answer every request `DURATION` later: a stand-in for a slower host when trying a --gate of bench replay"},
		}, ioFlags()...),
		Action: func(c *cli.Context) error {
			g := cliutil.Get(c)
			cfg, mix, err := probeConfig(c)
			if err != nil {
				return err
			}
			ctx, cancel := cliutil.SignalContext(c)
			defer cancel()
			set, err := loadTables(ctx, g, c.StringSlice("tables"))
			if err != nil {
				return err
			}
			tg, err := bench.NewTarget(set, cfg, mix)
			if err != nil {
				return cliutil.CannotRun(err)
			}
			defer tg.Close()
			ln, err := net.Listen("tcp", c.String("listen"))
			if err != nil {
				return cliutil.CannotRun(fmt.Errorf("--listen %s: %w (port in use? pick another)", c.String("listen"), err))
			}
			if c.Duration("delay") < 0 {
				return cliutil.Usagef("--delay %s: not negative", c.Duration("delay"))
			}
			srv := &http.Server{Handler: bench.Delayed(tg, c.Duration("delay")), ReadHeaderTimeout: 10 * time.Second}
			go func() {
				<-ctx.Done()
				shut, done := context.WithTimeout(context.Background(), 5*time.Second)
				defer done()
				srv.Shutdown(shut)
			}()
			fmt.Fprintf(g.Stderr, "bench serve: %d tables, %s, on http://%s/standard?fen=... (Ctrl-C to stop)\n",
				set.Info().Tables, cfg.Name(), ln.Addr())
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return cliutil.CannotRun(fmt.Errorf("serve: %w", err))
			}
			return nil
		},
	}
}

// ---- fens ----

func fensCommand() *cli.Command {
	return &cli.Command{
		Name:  "fens",
		Usage: "write a demo request log: random positions with the materials of the given tables",
		Description: `Writes --count FENs, one per line, each with the material of one of the tables (WDL or DTZ
   with compressed data), pieces on random squares (pawns on ranks 2-7, kings apart, colours
   swapped in half the lines). Plausible, not checked for legality: load for bench replay
   against bench serve, not a test set for a chess engine.`,
		Flags: []cli.Flag{
			tablesFlag(),
			&cli.IntFlag{Name: "count", Value: 10000, Usage: "number of lines (`N`)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "random seed"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` instead of stdout"},
		},
		Action: func(c *cli.Context) error {
			g := cliutil.Get(c)
			if c.Int("count") < 1 {
				return cliutil.Usagef("--count %d: need at least 1", c.Int("count"))
			}
			set, err := loadTables(c.Context, g, c.StringSlice("tables"))
			if err != nil {
				return err
			}
			var w io.Writer = g.Stdout
			if p := c.String("output"); p != "" {
				f, err := os.Create(p)
				if err != nil {
					return cliutil.CannotRun(fmt.Errorf("--output: %w", err))
				}
				defer f.Close()
				w = f
			}
			if err := bench.WriteFENs(w, set.Materials(), c.Int("count"), c.Uint64("seed")); err != nil {
				return cliutil.CannotRun(err)
			}
			return nil
		},
	}
}
