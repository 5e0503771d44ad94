package integrity

import (
	"fmt"
	"sort"
	"time"

	"path/filepath"

	"github.com/prometheus/procfs/blockdevice"
)

// DiskCounters are the cumulative read counters of one disk in /proc/diskstats.
type DiskCounters struct {
	Reads       uint64 // reads completed
	ReadTicksMs uint64 // milliseconds spent by all reads
}

// DiskStatsSource samples the read counters of block devices.
type DiskStatsSource interface {
	Sample() (map[string]DiskCounters, error)
}

// ProcDiskstats samples ROOT/proc/diskstats with prometheus/procfs, so a
// fixture tree can stand in for /proc. (It does not go through the monitor
// package: monitor folds integrity status into its health, so importing it
// here would be a cycle.)
type ProcDiskstats struct {
	Root string // "/" for this host
}

// Sample implements DiskStatsSource.
func (p ProcDiskstats) Sample() (map[string]DiskCounters, error) {
	root := p.Root
	if root == "" {
		root = "/"
	}
	fs, err := blockdevice.NewFS(filepath.Join(root, "proc"), filepath.Join(root, "sys"))
	if err != nil {
		return nil, fmt.Errorf("diskstats: %w", err)
	}
	stats, err := fs.ProcDiskstats()
	if err != nil {
		return nil, fmt.Errorf("diskstats under %s: %w", root, err)
	}
	out := make(map[string]DiskCounters, len(stats))
	for _, st := range stats {
		out[st.DeviceName] = DiskCounters{Reads: st.ReadIOs, ReadTicksMs: st.ReadTicks}
	}
	return out, nil
}

// BackoffRule is how the scrub yields to foreground reads, judged from the
// member disks' r_await (iostat's formula: read ticks / reads over the
// sampling interval). It is AIMD, like TCP:
//
//   - if any member disk's r_await over the last interval exceeds MaxAwait,
//     the rate is halved (never below MinRate): foreground reads are queueing
//     behind the scrub;
//   - if every member's r_await is below MaxAwait/2, the rate grows by an
//     eighth of MaxRate (never above MaxRate): the disks have room again;
//   - in between, or when no member completed a read, the rate is kept.
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
// samples of their counters.
func (r BackoffRule) Next(cur int64, disks []string, prev, now map[string]DiskCounters) BackoffDecision {
	d := BackoffDecision{Rate: cur}
	worst := time.Duration(-1)
	names := append([]string(nil), disks...)
	sort.Strings(names)
	for _, disk := range names {
		p, ok1 := prev[disk]
		n, ok2 := now[disk]
		if !ok1 || !ok2 || n.ReadTicksMs < p.ReadTicksMs {
			continue // the disk vanished, or its counters were reset
		}
		// iostat's r_await: read ticks / reads over the interval
		reads := n.Reads - p.Reads
		if n.Reads < p.Reads || reads == 0 {
			continue // no reads: no r_await
		}
		aw := time.Duration(float64(n.ReadTicksMs-p.ReadTicksMs) / float64(reads) * float64(time.Millisecond))
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
