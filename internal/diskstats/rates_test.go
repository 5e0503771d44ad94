package diskstats

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/procfs/blockdevice"
)

// Two real samples of the lab (internal/lab/testdata/captures/
// raid5-integrity-stripes5/proc/diskstats.0 and .1, 5 s apart under an
// O_DIRECT read of the LV), sdc's lines, and a hand-made pair with writes.
const (
	labSdc0 = "   8      32 sdc 48475 68467 2194074 832416 323 153 40485 3533 0 186392 837768 0 0 0 0 259 1819\n"
	labSdc1 = "   8      32 sdc 49044 68493 2270234 834514 323 153 40485 3533 0 187804 839866 0 0 0 0 259 1819\n"
	// 14-field (pre-4.18) lines: 200 reads in 600 ms, 50 writes of 8 sectors in 1000 ms over 2 s
	oldSda0 = "8 0 sda 1000 0 8000 3000 100 0 800 500 2 1500 4000\n"
	oldSda1 = "8 0 sda 1200 0 9600 3600 150 0 1200 1500 0 3100 9000\n"
)

func parseOne(t *testing.T, line, dev string) blockdevice.IOStats {
	t.Helper()
	s, err := Parse([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	st, ok := s.Devices[dev]
	if !ok {
		t.Fatalf("no %s in %q", dev, line)
	}
	return st
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestRatesIostatFormulasOnLabPair(t *testing.T) {
	a, b := parseOne(t, labSdc0, "sdc"), parseOne(t, labSdc1, "sdc")
	r, ok := Compute(a, b, 5)
	if !ok {
		t.Fatal("no rates")
	}
	// Derivation (T = 5 s):
	//   Δreads          = 49044 - 48475     = 569       -> r/s = 569/5 = 113.8
	//   Δread sectors   = 2270234 - 2194074 = 76160     -> 76160 x 512 / 5 = 7798784 B/s (rkB/s 7616)
	//   Δread ticks     = 834514 - 832416   = 2098 ms   -> r_await = 2098/569 = 3.68717... ms
	//   Δwrites         = 323 - 323         = 0         -> w/s 0, w_await 0
	//   Δio ticks       = 187804 - 186392   = 1412 ms   -> %util = 1412/5000 x 100 = 28.24
	//   Δweighted ticks = 839866 - 837768   = 2098      -> aqu-sz = 2098/5000 = 0.4196
	want := Rates{
		ReadsPerS: 113.8, ReadBytesPerS: 7798784, RAwaitMS: 2098.0 / 569,
		UtilPercent: 28.24, QueueSize: 0.4196, Reads: 569,
	}
	check(t, r, want)
	if kb := r.ReadBytesPerS / 1024; kb != 7616 {
		t.Errorf("rkB/s %v, want 7616", kb)
	}
}

func TestRatesWritesOn14FieldLines(t *testing.T) {
	a, b := parseOne(t, oldSda0, "sda"), parseOne(t, oldSda1, "sda")
	r, ok := Compute(a, b, 2)
	if !ok {
		t.Fatal("no rates")
	}
	// T = 2 s: Δreads 200 -> 100 r/s; Δread sectors 1600 -> 409600 B/s;
	// r_await 600/200 = 3 ms; Δwrites 50 -> 25 w/s; Δwrite sectors 400 ->
	// 102400 B/s; w_await 1000/50 = 20 ms; Δio ticks 1600 -> 80 %;
	// Δweighted 5000 -> aqu-sz 2.5. In-flight (2 -> 0) is a gauge: unused.
	check(t, r, Rates{
		ReadsPerS: 100, ReadBytesPerS: 409600, RAwaitMS: 3,
		WritesPerS: 25, WriteBytesPerS: 102400, WAwaitMS: 20,
		UtilPercent: 80, QueueSize: 2.5, Reads: 200, Writes: 50,
	})
}

func check(t *testing.T, got, want Rates) {
	t.Helper()
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"r/s", got.ReadsPerS, want.ReadsPerS}, {"rB/s", got.ReadBytesPerS, want.ReadBytesPerS},
		{"r_await", got.RAwaitMS, want.RAwaitMS}, {"w/s", got.WritesPerS, want.WritesPerS},
		{"wB/s", got.WriteBytesPerS, want.WriteBytesPerS}, {"w_await", got.WAwaitMS, want.WAwaitMS},
		{"%util", got.UtilPercent, want.UtilPercent}, {"aqu-sz", got.QueueSize, want.QueueSize},
	} {
		if !near(f.got, f.want) {
			t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
		}
	}
	if got.Reads != want.Reads || got.Writes != want.Writes {
		t.Errorf("reads %d writes %d, want %d %d", got.Reads, got.Writes, want.Reads, want.Writes)
	}
}

func TestUtilCappedAndNoAwaitWithoutIO(t *testing.T) {
	a := blockdevice.IOStats{IOsTotalTicks: 0}
	b := blockdevice.IOStats{IOsTotalTicks: 1500, ReadTicks: 40} // ticks without a completed read
	r, ok := Compute(a, b, 1)
	if !ok || r.UtilPercent != 100 || r.RAwaitMS != 0 {
		t.Errorf("%+v %v: want %%util capped at 100 and r_await 0 without reads", r, ok)
	}
	for _, secs := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, ok := Compute(a, b, secs); ok {
			t.Errorf("interval %v s has rates", secs)
		}
	}
}

// A counter printed as 32 bits wraps at 2^32: the difference is taken
// modulo 2^32, as iostat does. read ticks 4294967000 -> 200 is 296 + 200 =
// 496 ms more, for 100 reads: r_await 4.96 ms.
func TestBackwardsCounter32BitWrap(t *testing.T) {
	a := blockdevice.IOStats{ReadIOs: 1000, ReadTicks: 4294967000, IOsTotalTicks: 4294967295, WeightedIOTicks: 10}
	b := blockdevice.IOStats{ReadIOs: 1100, ReadTicks: 200, IOsTotalTicks: 499, WeightedIOTicks: 506}
	r, ok := Compute(a, b, 1)
	if !ok {
		t.Fatal("a 32-bit wrap must give rates")
	}
	// Δio ticks = (2^32 - 4294967295) + 499 = 500 ms -> 50 %
	check(t, r, Rates{ReadsPerS: 100, RAwaitMS: 4.96, UtilPercent: 50, QueueSize: 0.496, Reads: 100})
}

// A device reset (re-created, counters from 0) is no wrap: no rates for
// that interval; neither is a 64-bit counter going backwards.
func TestBackwardsCounterResetHasNoRates(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b blockdevice.IOStats
	}{
		{"reads restart", blockdevice.IOStats{ReadIOs: 48475, ReadTicks: 832416}, blockdevice.IOStats{ReadIOs: 12, ReadTicks: 30}},
		{"only ticks restart", blockdevice.IOStats{ReadIOs: 10, ReadTicks: 1 << 30}, blockdevice.IOStats{ReadIOs: 20, ReadTicks: 5}},
		{"64-bit sectors back", blockdevice.IOStats{ReadSectors: 1 << 40}, blockdevice.IOStats{ReadSectors: 1<<40 - 1}},
		{"just below 2^32 by more than half", blockdevice.IOStats{WriteIOs: 1 << 31}, blockdevice.IOStats{WriteIOs: 0}},
	} {
		if r, ok := Compute(c.a, c.b, 5); ok {
			t.Errorf("%s: rates %+v, want none", c.name, r)
		}
	}
}

// Window sums the intervals with rates: a reset in the middle costs that
// interval, not the window (first-to-last would see the counters go back).
func TestWindowSkipsTheResetInterval(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(k int, reads, ticks uint64) Sample {
		return Sample{Time: t0.Add(time.Duration(k) * 5 * time.Second),
			Devices: map[string]blockdevice.IOStats{"sdc": {ReadIOs: reads, ReadTicks: ticks}}}
	}
	// 0->1: 500 reads, 2500 ms; 1->2: reset (sdc re-created); 2->3: 400 reads, 1200 ms
	samples := []Sample{at(0, 10000, 50000), at(1, 10500, 52500), at(2, 100, 300), at(3, 500, 1500)}
	r, n := Window(samples, "sdc")
	// two intervals, 10 s: 900 reads -> 90 r/s; r_await 3700/900 ms
	if n != 2 || !near(r.ReadsPerS, 90) || !near(r.RAwaitMS, 3700.0/900) {
		t.Errorf("%d intervals, %+v", n, r)
	}
	if _, n := Window(samples[1:3], "sdc"); n != 0 {
		t.Errorf("the reset interval alone has %d intervals with rates", n)
	}
	if _, n := Window(samples, "sdz"); n != 0 {
		t.Errorf("an unknown device has rates")
	}
}
