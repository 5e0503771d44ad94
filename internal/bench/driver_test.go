package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestLoadValidateNamesTheFlag(t *testing.T) {
	for _, l := range []Load{
		{Clients: 0, Requests: 10},
		{Clients: 1, Requests: 0},
		{Clients: 1, Requests: 10, Warmup: 10},
		{Clients: 1, Requests: 10, Rate: -1},
		{Clients: 2, Requests: 10, Rate: 100, SplitEvenly: true},
		{Clients: 2, Requests: 2, Schedule: []time.Duration{0, 1}, SplitEvenly: true},
	} {
		if err := l.Validate(); err == nil {
			t.Errorf("%+v: accepted", l)
		}
	}
}

func TestDriveWarmupExcludedAndHistogramsMerged(t *testing.T) {
	var calls atomic.Int64
	res, err := Drive(context.Background(), Load{Clients: 4, Requests: 200, Warmup: 50},
		func(ctx context.Context, client int, seq int64) Outcome {
			calls.Add(1)
			if seq == 10 || seq == 100 || seq == 150 {
				return Outcome{Err: errors.New("boom"), Probes: 1}
			}
			return Outcome{Probes: 2, Reads: 6, SlowReads: 3}
		}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 200 || res.Issued != 200 {
		t.Fatalf("calls %d issued %d, want 200", calls.Load(), res.Issued)
	}
	if got := res.OK.TotalCount() + res.Failed.TotalCount(); got != 150 {
		t.Errorf("measured %d, want 150 (200 - 50 warm-up)", got)
	}
	if res.Failures != 2 || res.WarmupFailures != 1 {
		t.Errorf("failures %d warm-up failures %d, want 2 and 1", res.Failures, res.WarmupFailures)
	}
	if res.Probes != 148*2+2 || res.SlowReads != 148*3 {
		t.Errorf("probes %d slow %d", res.Probes, res.SlowReads)
	}
}

// Split evenly, every client makes its own share of the requests however
// slow it is, as each fio job makes its --number_ios; otherwise the fast
// clients take what a slow one leaves.
func TestDriveSplitEvenly(t *testing.T) {
	run := func(split bool) ([]int64, map[int64]bool) {
		var mu sync.Mutex
		made := make([]int64, 5)
		seqs := map[int64]bool{}
		_, err := Drive(context.Background(), Load{Clients: 5, Requests: 23, SplitEvenly: split},
			func(_ context.Context, client int, seq int64) Outcome {
				if client == 0 {
					time.Sleep(20 * time.Millisecond)
				}
				mu.Lock()
				defer mu.Unlock()
				made[client]++
				if seqs[seq] {
					t.Errorf("request %d made twice", seq)
				}
				seqs[seq] = true
				return Outcome{}
			}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return made, seqs
	}
	made, seqs := run(true)
	if want := []int64{5, 5, 5, 4, 4}; fmt.Sprint(made) != fmt.Sprint(want) {
		t.Errorf("split evenly: clients made %v requests, want %v", made, want)
	}
	for seq := int64(0); seq < 23; seq++ {
		if !seqs[seq] {
			t.Errorf("split evenly: request %d never made", seq)
		}
	}
	if made, _ = run(false); made[0] >= 4 {
		t.Errorf("not split: the slow client made %d of 23 requests (%v), the fast ones should have taken most of its share", made[0], made)
	}
}

// An open-loop run measures from the intended send time, so one stall shows
// up in every request queued behind it; a closed loop hides all but one.
func TestOpenLoopSeesCoordinatedOmission(t *testing.T) {
	stall := func(ctx context.Context, _ int, seq int64) Outcome {
		if seq == 20 {
			time.Sleep(150 * time.Millisecond)
		}
		return Outcome{}
	}
	slow := func(res *Result) int64 {
		var n int64
		for _, b := range res.OK.Distribution() {
			if b.From >= int64(75*time.Millisecond) {
				n += b.Count
			}
		}
		return n
	}
	closed, err := Drive(context.Background(), Load{Clients: 1, Requests: 300}, stall, nil)
	if err != nil {
		t.Fatal(err)
	}
	open, err := Drive(context.Background(), Load{Clients: 1, Requests: 300, Rate: 1000}, stall, nil)
	if err != nil {
		t.Fatal(err)
	}
	// (a margin of one for a scheduling hiccup on a loaded machine)
	if n := slow(closed); n < 1 || n > 2 {
		t.Errorf("closed loop: %d requests >= 75ms, want the stalled one", n)
	}
	// the stall delays the ~75 requests due in the following 75 ms by >= 75 ms
	if n := slow(open); n < 40 {
		t.Errorf("open loop: only %d requests >= 75ms; the queue behind the stall is hidden", n)
	}
}

func TestDriveStopsWithContext(t *testing.T) {
	// Cancel after a few requests rather than after a wall-clock deadline: on
	// a loaded machine a 50 ms deadline can pass before any client runs.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls atomic.Int64
	res, err := Drive(ctx, Load{Clients: 2, Requests: 1 << 40}, func(ctx context.Context, _ int, _ int64) Outcome {
		if calls.Add(1) == 3 {
			cancel()
		}
		time.Sleep(time.Millisecond)
		return Outcome{}
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StoppedEarly == nil || res.Issued == 0 || res.Issued >= 1<<40 {
		t.Fatalf("stopped early %v after %d requests", res.StoppedEarly, res.Issued)
	}
}

func TestSummarizeAndFormat(t *testing.T) {
	h := newHistogram()
	for i := 1; i <= 1000; i++ {
		recordLatency(h, time.Duration(i)*time.Microsecond)
	}
	recordLatency(h, 2*time.Hour) // clamped, still counted
	s := summarize(h)
	if s.Count != 1001 {
		t.Errorf("count %d", s.Count)
	}
	if s.P50 < 0.49 || s.P50 > 0.51 || s.P99 < 0.98 || s.P99 > 1.0 {
		t.Errorf("p50 %g p99 %g ms", s.P50, s.P99)
	}
	if s.Max < 3.59e6 {
		t.Errorf("max %g ms: the 2h stall was not kept", s.Max)
	}
	pts := ecdf(h)
	if len(pts) == 0 || pts[len(pts)-1].Fraction != 1 {
		t.Fatalf("ecdf %v", pts)
	}
	for i := 1; i < len(pts); i++ {
		if pts[i].Ms <= pts[i-1].Ms || pts[i].Fraction < pts[i-1].Fraction {
			t.Fatalf("ecdf not monotonic at %d: %v %v", i, pts[i-1], pts[i])
		}
	}
	for ms, want := range map[float64]string{0.0005: "500ns", 0.0123: "12.3µs", 4.56: "4.56ms", 1234: "1.23s"} {
		if got := formatMs(ms); got != want {
			t.Errorf("formatMs(%g) = %q, want %q", ms, got, want)
		}
	}
}

// Issue 16: the probe harness gives each client a processor (GOMAXPROCS
// raised to the clients for the run, restored afterwards), so a client
// whose read returns is not queued behind the others for one of fewer
// processors; and not one more, which the runtime would wake a thread for
// at every preemption (ownProcessors).
func TestProbeClientsHaveAProcessorEach(t *testing.T) {
	clients := max(12, runtime.GOMAXPROCS(0)+1)
	before := runtime.GOMAXPROCS(0)
	var mu sync.Mutex
	procs := map[int]bool{}
	_, err := Drive(context.Background(), probeLoad(Load{Clients: clients, Requests: 600}), func(_ context.Context, c int, _ int64) Outcome {
		time.Sleep(100 * time.Microsecond) // a blocking read
		mu.Lock()
		defer mu.Unlock()
		procs[runtime.GOMAXPROCS(0)] = true
		return Outcome{Reads: 1}
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(procs) != 1 || !procs[clients] {
		t.Errorf("GOMAXPROCS during the run %v, want %d: one processor per client, none to spare", procs, clients)
	}
	if after := runtime.GOMAXPROCS(0); after != before {
		t.Errorf("GOMAXPROCS %d after the run, was %d", after, before)
	}
}

// deadlineRaceCtx is the moment between a context's deadline and its timer
// firing: Deadline has passed, Err is still nil.
type deadlineRaceCtx struct{ context.Context }

func (deadlineRaceCtx) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// Found against python3 -m http.server (issue 16): dials whose deadline is
// the run's failed with "i/o timeout" at the run's end before ctx.Err was
// set, and were counted as the target's failures (136 of 4183 requests).
func TestRequestsCutByTheDeadlineAreNotFailures(t *testing.T) {
	ctx := deadlineRaceCtx{context.Background()}
	res, err := Drive(ctx, Load{Clients: 2, Requests: 10}, func(context.Context, int, int64) Outcome {
		return Outcome{Err: errors.New("dial tcp 127.0.0.1:1: i/o timeout")}
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failures != 0 || res.Failed.TotalCount() != 0 {
		t.Errorf("%d failures counted for requests cut by the run's deadline, want 0", res.Failures)
	}
}
