package monitor

import (
	"github.com/prometheus/procfs/blockdevice"
)

// Rates are one device's activity over an interval, with iostat's formulas
// (see ../shared/docs/lvm-facts.md): deltas of /proc/diskstats over T seconds.
type Rates struct {
	ReadsPerS     float64 // r/s = reads / T
	ReadBytesPerS float64 // rkB/s x 1024 = sectors x 512 / T
	RAwaitMS      float64 // r_await = read_ticks / reads (ms); 0 without reads
	QueueSize     float64 // aqu-sz = weighted_ticks / (1000 T)
	UtilPercent   float64 // %util = io_ticks / (1000 T) x 100
	Reads         uint64  // reads completed in the interval
}

// ComputeRates applies iostat's formulas to two readings secs apart. A
// counter that went backwards (device re-created) counts as no activity.
func ComputeRates(a, b blockdevice.IOStats, secs float64) Rates {
	if secs <= 0 {
		return Rates{}
	}
	reads := delta(a.ReadIOs, b.ReadIOs)
	r := Rates{
		Reads:         reads,
		ReadsPerS:     float64(reads) / secs,
		ReadBytesPerS: float64(delta(a.ReadSectors, b.ReadSectors)) * 512 / secs,
		QueueSize:     float64(delta(a.WeightedIOTicks, b.WeightedIOTicks)) / (1000 * secs),
		UtilPercent:   float64(delta(a.IOsTotalTicks, b.IOsTotalTicks)) / (1000 * secs) * 100,
	}
	if reads > 0 {
		r.RAwaitMS = float64(delta(a.ReadTicks, b.ReadTicks)) / float64(reads)
	}
	if r.UtilPercent > 100 {
		r.UtilPercent = 100
	}
	return r
}

func delta(a, b uint64) uint64 {
	if b < a {
		return 0
	}
	return b - a
}
