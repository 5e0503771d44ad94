package diskstats

import (
	"math"

	"github.com/prometheus/procfs/blockdevice"
)

// Delta is what one device did between two samples: the differences of
// its counters over Secs seconds.
type Delta struct {
	Reads, ReadSectors, ReadTicks    uint64 // ReadTicks: ms spent by all reads
	Writes, WriteSectors, WriteTicks uint64
	IOTicks                          uint64 // ms the device had I/O in flight
	WeightedTicks                    uint64 // ms x requests in flight
	Secs                             float64
}

// Diff is b - a for every counter, over secs seconds. ok is false when the
// interval has no rates: secs <= 0, or a counter went backwards by more
// than a 32-bit wrap (the device was reset or re-created; see wrapDelta).
func Diff(a, b blockdevice.IOStats, secs float64) (d Delta, ok bool) {
	if !(secs > 0) || math.IsInf(secs, 0) {
		return Delta{}, false
	}
	d.Secs = secs
	for _, c := range []struct {
		dst      *uint64
		old, new uint64
	}{
		{&d.Reads, a.ReadIOs, b.ReadIOs},
		{&d.ReadSectors, a.ReadSectors, b.ReadSectors},
		{&d.ReadTicks, a.ReadTicks, b.ReadTicks},
		{&d.Writes, a.WriteIOs, b.WriteIOs},
		{&d.WriteSectors, a.WriteSectors, b.WriteSectors},
		{&d.WriteTicks, a.WriteTicks, b.WriteTicks},
		{&d.IOTicks, a.IOsTotalTicks, b.IOsTotalTicks},
		{&d.WeightedTicks, a.WeightedIOTicks, b.WeightedIOTicks},
	} {
		v, good := wrapDelta(c.old, c.new)
		if !good {
			return Delta{}, false
		}
		*c.dst = v
	}
	return d, true
}

// wrapDelta is new - old for a cumulative counter. When the counter went
// backwards it either wrapped or was reset:
//
//   - a 32-bit wrap: the old value fits in 32 bits (the kernel prints the
//     tick fields, and on 32-bit kernels every field, as a 32-bit number)
//     and the difference taken modulo 2^32, as iostat takes it in the
//     counter's own 32-bit type, is less than half the 32-bit range;
//   - otherwise a reset (device re-created, counters restarted from 0):
//     no meaningful difference, ok is false.
func wrapDelta(old, new uint64) (uint64, bool) {
	if new >= old {
		return new - old, true
	}
	if old <= math.MaxUint32 {
		if d := uint64(uint32(new - old)); d < 1<<31 {
			return d, true
		}
	}
	return 0, false
}

// Add sums two deltas (consecutive intervals of one device).
func (d Delta) Add(e Delta) Delta {
	return Delta{
		Reads: d.Reads + e.Reads, ReadSectors: d.ReadSectors + e.ReadSectors, ReadTicks: d.ReadTicks + e.ReadTicks,
		Writes: d.Writes + e.Writes, WriteSectors: d.WriteSectors + e.WriteSectors, WriteTicks: d.WriteTicks + e.WriteTicks,
		IOTicks: d.IOTicks + e.IOTicks, WeightedTicks: d.WeightedTicks + e.WeightedTicks,
		Secs: d.Secs + e.Secs,
	}
}

// Rates are one device's activity over an interval with iostat's formulas
// (sysstat's iostat -x; ../shared/docs/lvm-facts.md), T = Secs:
//
//	r/s     = Δreads / T
//	rkB/s   = Δread_sectors x 512 / 1024 / T  (ReadBytesPerS keeps bytes)
//	r_await = Δread_ticks / Δreads  ms, 0 without reads
//	w/s, wkB/s, w_await likewise with the write fields
//	%util   = Δio_ticks / (1000 T) x 100, at most 100
//	aqu-sz  = Δweighted_ticks / (1000 T)
type Rates struct {
	ReadsPerS      float64
	ReadBytesPerS  float64
	RAwaitMS       float64
	WritesPerS     float64
	WriteBytesPerS float64
	WAwaitMS       float64
	UtilPercent    float64
	QueueSize      float64
	Reads          uint64 // reads completed in the interval
	Writes         uint64 // writes completed in the interval
}

// Rates applies iostat's formulas to the delta (zero Rates when Secs <= 0).
func (d Delta) Rates() Rates {
	if !(d.Secs > 0) {
		return Rates{}
	}
	t := d.Secs
	r := Rates{
		Reads:          d.Reads,
		Writes:         d.Writes,
		ReadsPerS:      float64(d.Reads) / t,
		ReadBytesPerS:  float64(d.ReadSectors) * 512 / t,
		WritesPerS:     float64(d.Writes) / t,
		WriteBytesPerS: float64(d.WriteSectors) * 512 / t,
		UtilPercent:    math.Min(float64(d.IOTicks)/(1000*t)*100, 100),
		QueueSize:      float64(d.WeightedTicks) / (1000 * t),
	}
	if d.Reads > 0 {
		r.RAwaitMS = float64(d.ReadTicks) / float64(d.Reads)
	}
	if d.Writes > 0 {
		r.WAwaitMS = float64(d.WriteTicks) / float64(d.Writes)
	}
	return r
}

// Compute is the rates of one device between two samples secs apart; ok
// is false when the interval has none (see Diff).
func Compute(a, b blockdevice.IOStats, secs float64) (Rates, bool) {
	d, ok := Diff(a, b, secs)
	if !ok {
		return Rates{}, false
	}
	return d.Rates(), true
}

// Window is the rates of device dev over samples (in time order): the
// deltas of the consecutive intervals that have rates, summed, so an
// interval where the device was reset is left out instead of hiding the
// whole window's activity. intervals counts the intervals used; 0 (and zero
// Rates) when the device has no rates in the window.
func Window(samples []Sample, dev string) (r Rates, intervals int) {
	var sum Delta
	for k := 0; k+1 < len(samples); k++ {
		a, ok1 := samples[k].Devices[dev]
		b, ok2 := samples[k+1].Devices[dev]
		if !ok1 || !ok2 {
			continue
		}
		d, ok := Diff(a, b, samples[k+1].Time.Sub(samples[k].Time).Seconds())
		if !ok {
			continue
		}
		sum = sum.Add(d)
		intervals++
	}
	if intervals == 0 {
		return Rates{}, 0
	}
	return sum.Rates(), intervals
}
