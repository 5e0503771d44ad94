package integrity

import (
	"fmt"
	"sort"
	"time"

	"github.com/tbhost/tbhost/internal/diskstats"
)

// DiskStatsSource samples /proc/diskstats: internal/diskstats, the sampler
// the monitor uses too (diskstats.ProcSource on a host or --root tree).
type DiskStatsSource = diskstats.Source

// BackoffRule is how the scrub yields to foreground reads, judged from the
// member disks' r_await (iostat's formula, from internal/diskstats: read
// ticks / reads over the sampling interval). It is AIMD, like TCP:
//
//   - if any member disk's r_await over the last interval exceeds MaxAwait,
//     the rate is halved (never below MinRate): foreground reads are queueing
//     behind the scrub;
//   - if every member's r_await is below MaxAwait/2, the rate grows by an
//     eighth of MaxRate (never above MaxRate): the disks have room again;
//   - in between, or when no member completed a read (or its counters were
//     reset, see diskstats.Diff), the rate is kept.
//
// The scrub's own reads count in r_await too; MaxAwait must sit above what
// one large sequential read costs on an idle disk (about 25 ms for 4 MiB at
// 160 MB/s), which is why the default is 60 ms.
type BackoffRule struct {
	MaxAwait time.Duration
	MinRate  int64 // bytes/s
	MaxRate  int64 // bytes/s: the --rate the user asked for
}

// DefaultMaxAwait is the r_await above which the scrub backs off.
const DefaultMaxAwait = 60 * time.Millisecond

// BackoffDecision is the outcome of one sample.
type BackoffDecision struct {
	Rate      int64         // new rate, bytes/s
	Changed   bool          // Rate differs from the current one
	WorstDisk string        // disk with the highest r_await ("" if none read)
	Await     time.Duration // its r_await
	Reason    string        // for humans: "sdc r_await 120ms > 60ms: halving"
}

// Next is the pure backoff step: current rate, the member disks, and two
// samples of /proc/diskstats (in time order).
func (r BackoffRule) Next(cur int64, disks []string, prev, now diskstats.Sample) BackoffDecision {
	d := BackoffDecision{Rate: cur}
	worst := time.Duration(-1)
	names := append([]string(nil), disks...)
	sort.Strings(names)
	secs := now.Time.Sub(prev.Time).Seconds()
	for _, disk := range names {
		p, ok1 := prev.Devices[disk]
		n, ok2 := now.Devices[disk]
		if !ok1 || !ok2 {
			continue // the disk vanished
		}
		rates, ok := diskstats.Compute(p, n, secs)
		if !ok || rates.Reads == 0 {
			continue // counters reset, or no reads: no r_await
		}
		aw := time.Duration(rates.RAwaitMS * float64(time.Millisecond))
		if aw > worst {
			worst, d.WorstDisk = aw, disk
		}
	}
	if worst < 0 {
		d.Reason = "no member disk completed a read: rate kept"
		return d
	}
	d.Await = worst
	min := r.MinRate
	if min <= 0 {
		min = 1 << 20
	}
	switch {
	case worst > r.MaxAwait:
		d.Rate = cur / 2
		if d.Rate < min {
			d.Rate = min
		}
		d.Reason = fmt.Sprintf("%s r_await %v > %v: backing off", d.WorstDisk, worst.Round(time.Millisecond), r.MaxAwait)
	case worst < r.MaxAwait/2:
		d.Rate = cur + r.MaxRate/8
		if d.Rate > r.MaxRate {
			d.Rate = r.MaxRate
		}
		d.Reason = fmt.Sprintf("%s r_await %v < %v: speeding up", d.WorstDisk, worst.Round(time.Millisecond), r.MaxAwait/2)
	default:
		d.Reason = fmt.Sprintf("%s r_await %v: rate kept", d.WorstDisk, worst.Round(time.Millisecond))
	}
	d.Changed = d.Rate != cur
	return d
}
