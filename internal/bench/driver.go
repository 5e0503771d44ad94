package bench

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sync/errgroup"
)

// Load is how requests are issued.
type Load struct {
	// Clients is the number of concurrent clients (goroutines).
	Clients int
	// Requests is the total number of requests, warm-up included.
	Requests int64
	// Warmup is how many of the first requests (by sequence number) are
	// issued but left out of the statistics.
	Warmup int64
	// Rate, when > 0, is an open-loop arrival rate in requests per second:
	// request i is due at start + i/Rate and its latency is measured from
	// that intended send time, so a stalled server cannot hide its queue
	// (no coordinated omission). 0 means closed loop: each client sends its
	// next request as soon as the previous one has finished.
	Rate float64
	// Schedule, when set, is the intended send time of every request as an
	// offset from the start (a log's own timestamps, bench replay --speed):
	// open loop like Rate, latency measured from the intended time. It
	// needs one offset per request, not decreasing.
	Schedule []time.Duration
	// LateAfter is how far behind its intended time a request may be sent
	// before it counts as late (Result.Late); default 1 ms.
	LateAfter time.Duration
	// Progress, when set, is called about once a second from a separate
	// goroutine with the number of finished requests (for progress bars).
	Progress func(done, total int64)
	// OwnProcessors gives each client a processor of its own (see
	// ownProcessors), for clients that block in the kernel (the probe's
	// disk reads). Ignored above MaxOwnProcessorClients clients.
	// GOMAXPROCS is process-wide: runs with OwnProcessors should not
	// overlap (a later restore undoes an earlier raise; measurements
	// suffer, results stay correct).
	OwnProcessors bool
	// SplitEvenly gives every client its own share of the requests,
	// Requests/Clients (the first Requests%Clients clients one more), and
	// a client stops when it has made its share, as each of fio's jobs
	// makes its own --number_ios; without it a client takes the next
	// request number until Requests are issued, and all clients stay busy
	// to the end. Closed loop only (Rate 0, no Schedule).
	SplitEvenly bool
}

// Validate checks the load for nonsense values and names the flag at fault.
// MaxClients bounds Load.Clients: each client is a goroutine with its own
// latency histograms (and, in a replay, a connection); far fewer saturate
// any tablebase server.
const MaxClients = 4096

func (l Load) Validate() error {
	switch {
	case l.Clients < 1 || l.Clients > MaxClients:
		return fmt.Errorf("--clients %d: want 1 to %d", l.Clients, MaxClients)
	case l.Requests < 1:
		return fmt.Errorf("--requests %d: need at least 1 request", l.Requests)
	case l.Warmup < 0:
		return fmt.Errorf("--warmup %d: must not be negative", l.Warmup)
	case l.Warmup >= l.Requests:
		return fmt.Errorf("--warmup %d leaves nothing to measure out of %d requests; lower --warmup or raise --requests", l.Warmup, l.Requests)
	case l.Rate < 0:
		return fmt.Errorf("--rate %g: must not be negative (0 = closed loop)", l.Rate)
	case l.Schedule != nil && l.Rate > 0:
		return fmt.Errorf("--rate and a timed log's schedule exclude each other: give --speed 0 to ignore the log's timestamps, or leave out --rate")
	case l.SplitEvenly && (l.Rate > 0 || l.Schedule != nil):
		return fmt.Errorf("internal: a load split evenly between its clients is a closed loop: no rate, no schedule")
	case l.Schedule != nil && int64(len(l.Schedule)) != l.Requests:
		return fmt.Errorf("schedule of %d send times for %d requests", len(l.Schedule), l.Requests)
	}
	for i := 1; i < len(l.Schedule); i++ {
		if l.Schedule[i] < l.Schedule[i-1] || l.Schedule[0] < 0 {
			return fmt.Errorf("schedule: request %d is due before request %d", i, i-1)
		}
	}
	return nil
}

// Outcome is what one request did, as its Op reports it.
type Outcome struct {
	Err       error // transport error, timeout, read error
	Status    int   // HTTP status (0 for disk probes)
	Probes    int64 // table probes in the request
	Reads     int64 // reads issued
	SlowReads int64 // reads (or parts of reads) that went to the table files rather than the prefix store
}

// Failed reports whether the request counts as a failure: an error, or an
// HTTP status outside 2xx.
func (o Outcome) Failed() bool {
	return o.Err != nil || (o.Status != 0 && (o.Status < 200 || o.Status > 299))
}

// Op performs request seq on behalf of client. It must honour ctx.
type Op func(ctx context.Context, client int, seq int64) Outcome

// Sample is one finished request, handed to Observer.
type Sample struct {
	Seq      int64
	Client   int
	Start    time.Time     // intended send time (open loop) or actual send time
	Latency  time.Duration // from Start to completion
	Warmup   bool
	Outcome  Outcome
	Elapsed  time.Duration // since the run started, at completion
	Intended bool          // Start is an intended (scheduled) time
}

// Observer sees every finished request (warm-up included). It is called
// concurrently from all clients and must do its own locking.
type Observer func(Sample)

// Result is a run's statistics, warm-up excluded.
type Result struct {
	OK             *hdrhistogram.Histogram // latencies of successful measured requests
	Failed         *hdrhistogram.Histogram // latencies of failed measured requests
	Issued         int64                   // requests finished, warm-up included
	Failures       int64                   // failed measured requests
	WarmupFailures int64                   // failed warm-up requests
	Probes         int64                   // measured requests' probes
	Reads          int64
	SlowReads      int64
	Elapsed        time.Duration
	Measured       time.Duration // from the first measured request's start to the end
	StoppedEarly   error         // non-nil when ctx ended the run before all requests
	Statuses       map[int]int64 // HTTP statuses of measured requests (0 = transport error)
	FirstError     string        // the first failure's error, for the report

	// Late counts the requests (warm-up included) an open-loop run sent
	// more than Load.LateAfter after their intended time: every client was
	// busy, so the load generator, not the server, fell behind; their
	// latency still counts from the intended time. Dropped counts those
	// never sent because the run ended first.
	Late, Dropped int64

	// CPU sums the process's threads' time on a CPU and their time
	// runnable but waiting for one, from the clients' start to the last
	// one's end (ThreadCPU), when each client had a processor of its own
	// (Load.OwnProcessors) and the threads' statistics could be read
	// (CPUMeasured): the clients' threads, and the runtime's, which sleep
	// through such a run. A wait that is a sizeable part of the latency
	// means the machine's processors, not the target, set it
	// (cpuWaitNotice).
	CPU         ThreadCPU
	CPUMeasured bool
}

// Rate is measured requests per second over the measured window.
func (r *Result) Rate() float64 {
	n := r.OK.TotalCount() + r.Failed.TotalCount()
	if r.Measured <= 0 || n == 0 {
		return 0
	}
	return float64(n) / r.Measured.Seconds()
}

type clientStats struct {
	ok, failed                   *hdrhistogram.Histogram
	issued, failures, warmupFail int64
	late                         int64
	probes, reads, slow          int64
	firstMeasured                time.Time
	statuses                     map[int]int64
	firstErr                     string
}

// Drive runs op under load. It returns when all requests have finished or
// ctx ends (then Result.StoppedEarly says why); the returned error is only
// for invalid loads.
func Drive(ctx context.Context, load Load, op Op, observe Observer) (*Result, error) {
	if err := load.Validate(); err != nil {
		return nil, err
	}
	var next, done atomic.Int64
	defer reportProgress(load, &done)()
	lateAfter := load.LateAfter
	if lateAfter <= 0 {
		lateAfter = time.Millisecond
	}
	var interval time.Duration
	if load.Rate > 0 {
		interval = time.Duration(float64(time.Second) / load.Rate)
	}
	load.OwnProcessors = load.ownsProcessors()
	if load.OwnProcessors {
		defer ownProcessors(load.Clients)()
	}
	stats := newClientStats(load.Clients)
	// The histograms (about half a megabyte a client) and whatever the
	// caller allocated are collected now, before the clock starts. The
	// driver itself allocates nothing per request, so a run whose requests
	// do not allocate either (the probe's reads) sees no collection, whose
	// stop-the-world phases would land in the latency tail (with a thread
	// per client on 2 CPUs one took 85 ms: probe p99.9 6x fio's).
	runtime.GC()
	// The threads' scheduler statistics before the first request and after
	// the last: how long the clients waited for a CPU.
	cpuBefore, cpuErr := ThreadCPU{}, error(nil)
	if load.OwnProcessors {
		cpuBefore, cpuErr = readProcessCPU(procRoot)
	}
	start := time.Now()
	// Every client runs at once (that is the load), so the group has no
	// limit; Load.Validate bounds the clients.
	var g errgroup.Group
	for c := 0; c < load.Clients; c++ {
		st := stats[c]
		client := c
		g.Go(func() error {
			lastYield := start
			for made, limit := int64(0), load.clientLimit(client); made < limit && ctx.Err() == nil; made++ {
				seq := next.Add(1) - 1
				if seq >= load.Requests {
					return nil
				}
				begin := time.Now()
				if interval > 0 || load.Schedule != nil {
					if load.Schedule != nil {
						begin = start.Add(load.Schedule[seq])
					} else {
						begin = start.Add(time.Duration(seq) * interval)
					}
					if behind := time.Since(begin); behind > lateAfter {
						st.late++
					}
					if wait := time.Until(begin); wait > 0 {
						t := time.NewTimer(wait)
						select {
						case <-ctx.Done():
							t.Stop()
							return nil
						case <-t.C:
						}
					}
				}
				out := op(ctx, client, seq)
				// One monotonic clock read ends the interval: time.Since of
				// a reading with a monotonic part reads only that clock,
				// where time.Now would read the wall clock first, inside
				// the measured interval (a vDSO call, 50-170 ns here).
				lat := time.Since(begin)
				done.Add(1)
				if !st.record(ctx, load, Sample{Seq: seq, Client: client, Start: begin, Latency: lat, Outcome: out,
					Elapsed: begin.Sub(start) + lat, Intended: interval > 0 || load.Schedule != nil}, observe) {
					return nil
				}
				if end := begin.Add(lat); load.OwnProcessors && end.Sub(lastYield) >= yieldEvery {
					runtime.Gosched() // between two requests, before the runtime preempts one
					lastYield = end
				}
			}
			return nil
		})
	}
	g.Wait()
	end := time.Now()
	res := collect(ctx, load, stats, start, end)
	if load.OwnProcessors && cpuErr == nil {
		if after, err := readProcessCPU(procRoot); err == nil {
			res.CPU, res.CPUMeasured = after.sub(cpuBefore), true
		}
	}
	return res, nil
}

// clientLimit is how many requests client may make: its share when the
// load is split evenly, Requests/Clients and one more for the first
// Requests%Clients clients; otherwise no limit of its own (the shared
// count stops it).
func (l Load) clientLimit(client int) int64 {
	if !l.SplitEvenly {
		return math.MaxInt64
	}
	share := l.Requests / int64(l.Clients)
	if int64(client) < l.Requests%int64(l.Clients) {
		share++
	}
	return share
}

// reportProgress calls load.Progress about once a second with done's
// count until the returned function is called.
func reportProgress(load Load, done *atomic.Int64) (stop func()) {
	if load.Progress == nil {
		return func() {}
	}
	quit, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				load.Progress(done.Load(), load.Requests)
			}
		}
	}()
	// stop returns once no Progress call can follow: the caller's bar is
	// finished right after, and a late call would draw it again
	return func() { close(quit); <-exited }
}

func newClientStats(clients int) []*clientStats {
	stats := make([]*clientStats, clients)
	for c := range stats {
		stats[c] = &clientStats{ok: newHistogram(), failed: newHistogram(), statuses: map[int]int64{}}
	}
	return stats
}

// record adds a finished request (s without Warmup, which record sets) to
// the client's statistics and hands it to observe. It returns false, and
// counts nothing but the request, when the request failed because the run
// ended: that is not a failure of the target, and the client stops.
func (st *clientStats) record(ctx context.Context, load Load, s Sample, observe Observer) bool {
	out, begin, lat := s.Outcome, s.Start, s.Latency
	s.Warmup = s.Seq < load.Warmup
	st.issued++
	if out.Err != nil && runEnded(ctx) {
		return false // cut short by the run's end, not a failure of the target
	}
	if out.Err != nil && st.firstErr == "" {
		st.firstErr = out.Err.Error()
	}
	if s.Warmup {
		if out.Failed() {
			st.warmupFail++
		}
	} else {
		if st.firstMeasured.IsZero() || begin.Before(st.firstMeasured) {
			st.firstMeasured = begin
		}
		st.probes += out.Probes
		st.reads += out.Reads
		st.slow += out.SlowReads
		status := out.Status
		if out.Err != nil {
			status = 0
		}
		if out.Status != 0 || out.Err != nil {
			st.statuses[status]++
		}
		if out.Failed() {
			st.failures++
			recordLatency(st.failed, lat)
		} else {
			recordLatency(st.ok, lat)
		}
	}
	if observe != nil {
		observe(s)
	}
	return true
}

// collect merges the clients' statistics of a run from start to end.
func collect(ctx context.Context, load Load, stats []*clientStats, start, end time.Time) *Result {
	res := &Result{OK: newHistogram(), Failed: newHistogram(), Elapsed: end.Sub(start), Statuses: map[int]int64{}}
	var first time.Time
	for _, st := range stats {
		res.OK.Merge(st.ok)
		res.Failed.Merge(st.failed)
		res.Issued += st.issued
		res.Failures += st.failures
		res.WarmupFailures += st.warmupFail
		res.Late += st.late
		res.Probes += st.probes
		res.Reads += st.reads
		res.SlowReads += st.slow
		if res.FirstError == "" {
			res.FirstError = st.firstErr
		}
		for k, v := range st.statuses {
			res.Statuses[k] += v
		}
		if !st.firstMeasured.IsZero() && (first.IsZero() || st.firstMeasured.Before(first)) {
			first = st.firstMeasured
		}
	}
	if !first.IsZero() {
		res.Measured = end.Sub(first)
	}
	if res.Issued < load.Requests {
		res.Dropped = load.Requests - res.Issued
	}
	if ctx.Err() != nil && res.Issued < load.Requests {
		res.StoppedEarly = fmt.Errorf("stopped after %d of %d requests: %w", res.Issued, load.Requests, context.Cause(ctx))
	}
	return res
}

// runEnded reports whether ctx has ended, counting a deadline that has
// passed although ctx.Err is not set yet: a dial or read whose deadline
// is ctx's fails with "i/o timeout" at the deadline, a moment before the
// context's own timer cancels it, and that is the run's end, not a failure
// of the target.
func runEnded(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// yieldEvery is how often a client with a processor of its own gives it
// up between two requests (runtime.Gosched): half the 10 ms after which
// the runtime preempts a goroutine (ownProcessors), so that it never does
// so inside a timed request. Its own thread takes the client up again.
const yieldEvery = 5 * time.Millisecond

// MaxOwnProcessorClients is the most clients that get a processor each;
// more share GOMAXPROCS of them as goroutines.
const MaxOwnProcessorClients = 256

// ownsProcessors reports whether Drive gives each of l's clients a
// processor of its own: asked for, and at most MaxOwnProcessorClients of
// them (thousands of threads and processors cost more than they measure).
func (l Load) ownsProcessors() bool {
	return l.OwnProcessors && l.Clients <= MaxOwnProcessorClients
}

// probeLoad is l as the probe harness runs it: a processor per client.
func probeLoad(l Load) Load {
	l.OwnProcessors = true
	return l
}

// ownProcessors raises GOMAXPROCS, for the run, to the clients (restored
// afterwards), so that every client can run at once: a client whose read
// returns runs again as soon as the kernel schedules its thread, as fio's
// threads do, instead of queueing for one of fewer processors behind
// clients that are busy (that queue was the harness's own tail, issue 16).
// A client keeps its processor, and its thread, through a raw read
// (rawPread) and a page fault alike.
//
// The runtime preempts a goroutine that has held its processor for 10 ms,
// a client in a raw read or a page fault included (a cold run of 24,000
// reads from 12 clients: ~230 preemptions). So a client gives its
// processor up itself between two requests (yieldEvery), and, not locked
// to its thread (runtime.LockOSThread) and with no processor to spare, it
// is taken up again by its own thread at once. A locked goroutine runs
// again only through two thread hand-offs (its thread sleeps, another
// wakes to find it and hands the processor back), and with a processor to
// spare the runtime wakes a thread to look for work each time; either way
// a thread waited for a CPU of a small machine inside somebody's timed
// read. The run's other goroutines (the progress line, a signal, the
// deadline) get a processor when a client yields or ends.
//
// On the 2-CPU test machine, 12 clients, p99 over the same 4 KiB reads
// from 12 pthreads in C (testdata/cloop), median of 20-25 alternating
// rounds: cold, locked with a spare processor 1.10-1.25 (6 series each of
// pread and mmap), like this 0.96-1.11 (4 series each; unlocked without
// the yield 0.99-1.20); warm p99.9, locked 1.24-1.45, unlocked without the
// yield 1.17-1.97 (the preemption's signal lands in a read), like this
// 1.01-1.55 (docs/performance.md). It returns the function that restores
// GOMAXPROCS.
func ownProcessors(clients int) (restore func()) {
	prev := runtime.GOMAXPROCS(0)
	if clients > prev {
		runtime.GOMAXPROCS(clients)
		return func() { runtime.GOMAXPROCS(prev) }
	}
	return func() {}
}
