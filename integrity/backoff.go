package integrity

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tbhost/tbhost/internal/diskstats"
)

// DiskStatsSource samples /proc/diskstats: internal/diskstats, the sampler
// the monitor uses too (diskstats.ProcSource on a host or --root tree).
type DiskStatsSource = diskstats.Source

// BackoffRule is how the scrub yields to foreground reads, judged from
// r_await (iostat's formula, from internal/diskstats: read ticks / reads
// over the sampling interval). It is AIMD, like TCP:
//
//   - if the worst judged r_await over the last interval exceeds MaxAwait,
//     the rate is halved (never below MinRate): foreground reads are
//     queueing behind the scrub;
//   - if every judged r_await is below MaxAwait/2, or nothing but the scrub
//     read the member disks, the rate grows by an eighth of MaxRate (never
//     above MaxRate): the disks have room again;
//   - in between, or when no member completed a read (or its counters were
//     reset, see diskstats.Diff), the rate is kept.
//
// What is judged (see Load): a member disk the scrub is not reading, by its
// own r_await (all of it is foreground); a member the scrub is reading, by
// the r_await of the reads through the LV (Load.Foreground), because its
// own r_await counts the scrub's reads, whose latency is the chunk size's
// doing, not the rate's: halving the rate would not make them faster, and
// the scrub would back off from its own load down to the floor. Without a
// foreground device (Load.Foreground ""), such a member is judged by its
// own r_await, as every member was before: MaxAwait must then sit above
// what one large sequential read costs on an idle disk (about 25 ms for
// 4 MiB at 160 MB/s), which is why the default is 60 ms.
type BackoffRule struct {
	MaxAwait time.Duration
	MinRate  int64 // bytes/s
	MaxRate  int64 // bytes/s: the --rate the user asked for
}

// DefaultMaxAwait is the r_await above which the scrub backs off.
const DefaultMaxAwait = 60 * time.Millisecond

// Load is what the backoff knows of one interval besides the counters.
type Load struct {
	// Members are the array's member disks (kernel names: sdc).
	Members []string
	// Scrubbing are the members the scrub read from during the interval.
	Scrubbing map[string]bool
	// Foreground is the kernel name of the array's own device (dm-27): its
	// reads are the foreground's alone. ForegroundName names it (vg/lv).
	Foreground, ForegroundName string
}

// BackoffDecision is the outcome of one sample.
type BackoffDecision struct {
	Rate      int64         // new rate, bytes/s
	Changed   bool          // Rate differs from the current one
	WorstDisk string        // device with the highest judged r_await ("" if none)
	Await     time.Duration // its r_await
	Reason    string        // for humans: "sdc r_await 120ms > 60ms: backing off"
	// Skipped are the members not judged by their own r_await: the scrub
	// was reading them (their latency is judged through Foreground).
	Skipped []string
}

// Next is the backoff step for the member disks alone (nothing known of
// the scrub's own reads): Decide with Load{Members: disks}.
func (r BackoffRule) Next(cur int64, disks []string, prev, now diskstats.Sample) BackoffDecision {
	return r.Decide(cur, Load{Members: disks}, prev, now)
}

// Decide is the pure backoff step: the current rate, the interval's load,
// and two samples of /proc/diskstats (in time order).
func (r BackoffRule) Decide(cur int64, l Load, prev, now diskstats.Sample) BackoffDecision {
	d := BackoffDecision{Rate: cur}
	worst := time.Duration(-1)
	secs := now.Time.Sub(prev.Time).Seconds()
	rAwait := func(dev string) (time.Duration, bool) {
		p, ok1 := prev.Devices[dev]
		n, ok2 := now.Devices[dev]
		if !ok1 || !ok2 {
			return 0, false // the device vanished
		}
		rates, ok := diskstats.Compute(p, n, secs)
		if !ok || rates.Reads == 0 {
			return 0, false // counters reset, or no reads: no r_await
		}
		return time.Duration(rates.RAwaitMS * float64(time.Millisecond)), true
	}
	names := append([]string(nil), l.Members...)
	sort.Strings(names)
	for _, disk := range names {
		aw, ok := rAwait(disk)
		if !ok {
			continue
		}
		if l.Scrubbing[disk] && l.Foreground != "" {
			d.Skipped = append(d.Skipped, disk)
			continue
		}
		if aw > worst {
			worst, d.WorstDisk = aw, disk
		}
	}
	label := func(dev string) string { return dev }
	if len(d.Skipped) > 0 {
		fgName := l.ForegroundName
		if fgName == "" {
			fgName = "the LV"
		}
		label = func(dev string) string {
			if dev == l.Foreground {
				return fmt.Sprintf("reads through %s (%s)", fgName, dev)
			}
			return dev
		}
		if aw, ok := rAwait(l.Foreground); ok && aw > worst {
			worst, d.WorstDisk = aw, l.Foreground
		}
	}
	if worst < 0 {
		if len(d.Skipped) > 0 {
			// Only the scrub read the members: no foreground to protect.
			d.Rate = min(cur+r.MaxRate/8, r.MaxRate)
			d.Reason = fmt.Sprintf("only the scrub read %s (no foreground reads): speeding up", strings.Join(d.Skipped, ","))
			d.Changed = d.Rate != cur
			return d
		}
		d.Reason = "no member disk completed a read: rate kept"
		return d
	}
	d.Await = worst
	min := r.MinRate
	if min <= 0 {
		min = MinBackoffRate
	}
	who := label(d.WorstDisk)
	switch {
	case worst > r.MaxAwait:
		d.Rate = cur / 2
		if d.Rate < min {
			d.Rate = min
		}
		d.Reason = fmt.Sprintf("%s r_await %v > %v: backing off", who, worst.Round(time.Millisecond), r.MaxAwait)
	case worst < r.MaxAwait/2:
		d.Rate = cur + r.MaxRate/8
		if d.Rate > r.MaxRate {
			d.Rate = r.MaxRate
		}
		d.Reason = fmt.Sprintf("%s r_await %v < %v: speeding up", who, worst.Round(time.Millisecond), r.MaxAwait/2)
	default:
		d.Reason = fmt.Sprintf("%s r_await %v: rate kept", who, worst.Round(time.Millisecond))
	}
	d.Changed = d.Rate != cur
	return d
}
