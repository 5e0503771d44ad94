package monitor

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/tbhost/tbhost/lvm"
)

// Fail-slow detection: a member that still answers, but with far higher
// read latency than its siblings under the same traffic (issue 20). A
// RAID 5 read is as slow as the member it lands on, so one slow disk drags
// the array's tail while its read *rate* looks balanced.
//
// Per judged interval, for each member m that read at least SlowMinIOPS
// reads/s, against the siblings that did too (m itself left out):
//
//	await ratio = r_await(m) / median(r_await of the siblings)
//	IOPS ratio  = (r/s + w/s)(m) / median((r/s + w/s) of the siblings)
//	busy ratio  = busy-per-I/O(m) / median(busy-per-I/O of the siblings)
//	busy-per-I/O = %util x 10 / (r/s + w/s)   ms the disk was busy per I/O
//
// The interval counts as slow at level f when await ratio >= f, r_await
// exceeds the siblings' median by at least slowMinExcessMS, and the wait is
// not explained by load: IOPS ratio <= hotIOPSRatio (it does no more I/O
// than its siblings) or busy ratio >= f/2. That is the load guard: a member
// that is merely busier (one hot table landing on it) queues more and so
// waits longer per read, but each I/O keeps the disk busy no longer than
// on its siblings; a slow disk is busy longer for every I/O, or waits
// longer while doing no more I/O than its siblings.
//
// A member is flagged slow (WARNING) when every interval it was judged in
// was slow at SlowFactor, and it was judged in at least half the window's
// intervals; CRITICAL when every one was slow at SlowCritFactor.

// slowMinExcessMS: r_await must exceed the siblings' median by at least
// this much. Ratios of sub-millisecond latencies (NVMe, or the host's page
// cache behind a VM disk) are noise, not a failing disk.
const slowMinExcessMS = 1.0

// slowAwaitBaseMS: the siblings' median r_await is taken as at least this
// (the kernel counts read time in whole ms: very fast siblings read as 0).
const slowAwaitBaseMS = 0.1

// hotIOPSRatio: a member doing more than this many times its siblings'
// median I/O per second may wait longer because of its load (the load guard).
const hotIOPSRatio = 1.1

// slowStats counts one member's slow intervals over a window.
type slowStats struct {
	judged, warn, crit int
}

// judgeSlowInterval counts, for one interval, which candidates were slow.
// rates holds the interval's rates of every member (index as ar.Members);
// cand are the members that take part (present and not skipped).
func judgeSlowInterval(rates []Rates, cand []int, th Thresholds, st []slowStats) {
	floor := th.SlowMinIOPS
	busy := make([]int, 0, len(cand))
	for _, i := range cand {
		if rates[i].ReadsPerS >= floor && rates[i].ReadsPerS > 0 {
			busy = append(busy, i)
		}
	}
	if len(busy) < 2 {
		return
	}
	n := len(busy)
	sc := latencyScratch{make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n)}
	sib := make([]Rates, 0, n)
	for _, i := range busy {
		sib = sib[:0]
		for _, j := range busy {
			if j != i {
				sib = append(sib, rates[j])
			}
		}
		c := sc.compare(rates[i], sib)
		st[i].judged++
		if c.SlowAt(th.SlowFactor) {
			st[i].warn++
		}
		if c.SlowAt(th.SlowCritFactor) {
			st[i].crit++
		}
	}
}

// LatencyComparison is one disk's read latency against its siblings' over
// the same interval (the fail-slow rule; bench probe's per-disk table uses
// it too).
type LatencyComparison struct {
	// AwaitRatio: its r_await over the siblings' median r_await (taken as
	// at least 0.1 ms); ExcessMS: the difference.
	AwaitRatio, ExcessMS float64
	// IOPSRatio: its (r/s + w/s) over the siblings' median; BusyRatio: its
	// busy time per I/O over theirs (+Inf when theirs is 0).
	IOPSRatio, BusyRatio float64
}

// CompareLatency compares m with its siblings (none: the zero comparison).
func CompareLatency(m Rates, siblings []Rates) LatencyComparison {
	var sc latencyScratch
	return sc.compare(m, siblings)
}

// latencyScratch holds the buffers of compare, reused across the members
// of an interval (the exporter and check judge every member every sample).
type latencyScratch struct{ awaits, perIO, iops []float64 }

func (sc *latencyScratch) compare(m Rates, siblings []Rates) LatencyComparison {
	if len(siblings) == 0 {
		return LatencyComparison{}
	}
	sc.awaits, sc.perIO, sc.iops = sc.awaits[:0], sc.perIO[:0], sc.iops[:0]
	for _, r := range siblings {
		sc.awaits = append(sc.awaits, r.RAwaitMS)
		sc.perIO = append(sc.perIO, busyPerIO(r))
		sc.iops = append(sc.iops, r.ReadsPerS+r.WritesPerS)
	}
	awaits, perIO, iops := sc.awaits, sc.perIO, sc.iops
	medAwait := math.Max(median(awaits), slowAwaitBaseMS)
	c := LatencyComparison{AwaitRatio: m.RAwaitMS / medAwait, ExcessMS: m.RAwaitMS - medAwait, BusyRatio: math.Inf(1)}
	if med := median(iops); med > 0 {
		c.IOPSRatio = (m.ReadsPerS + m.WritesPerS) / med
	}
	if med := median(perIO); med > 0 {
		c.BusyRatio = busyPerIO(m) / med
	}
	return c
}

// SlowAt reports whether the comparison is slow at factor f: r_await f
// times the siblings' median and slowMinExcessMS above it, not explained
// by load (no more I/O than hotIOPSRatio times theirs, or each I/O keeps
// the disk busy f/2 times longer).
func (c LatencyComparison) SlowAt(f float64) bool {
	return c.AwaitRatio >= f && c.ExcessMS >= slowMinExcessMS && (c.IOPSRatio <= hotIOPSRatio || c.BusyRatio >= f/2)
}

// busyPerIO is the ms the disk was busy per I/O (reads and writes).
func busyPerIO(r Rates) float64 {
	n := r.ReadsPerS + r.WritesPerS
	if n <= 0 {
		return 0
	}
	return r.UtilPercent * 10 / n
}

// median of vs (0 for none); vs is reordered.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	sort.Float64s(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}

// flagSlow turns the counts into flags and one finding per slow member.
// The window figures (r_await, %util, aqu-sz of the member, the siblings'
// median r_await) are in the message, with the next step.
func flagSlow(ar *ArrayResult, cand []int, st []slowStats, th Thresholds) {
	need := max(1, (ar.Intervals+1)/2)
	// the siblings' window r_await, for the ratio shown and exported
	sib := make([]float64, 0, len(cand))
	for _, i := range cand {
		sib = sib[:0]
		for _, j := range cand {
			if j != i && ar.Members[j].Rates.ReadsPerS > 0 {
				sib = append(sib, ar.Members[j].Rates.RAwaitMS)
			}
		}
		if len(sib) > 0 {
			m := &ar.Members[i]
			m.SiblingsAwaitMS = median(sib)
			m.AwaitRatio = m.Rates.RAwaitMS / math.Max(m.SiblingsAwaitMS, slowAwaitBaseMS)
		}
	}
	for _, i := range cand {
		s := st[i]
		if s.judged < need || s.warn < s.judged {
			continue
		}
		m := &ar.Members[i]
		sev, factor := Warning, th.SlowFactor
		if s.crit == s.judged {
			sev, factor = Critical, th.SlowCritFactor
		}
		m.Slow, m.SlowSeverity = true, sev
		if sev.Rank() >= m.Severity.Rank() || m.Flag == FlagOK {
			m.Flag, m.Severity = FlagSlow, Worse(m.Severity, sev)
		}
		who := "serial " + orDefault(m.Serial, "unknown")
		if m.ID != "" {
			who = m.ID + ", " + who
		}
		ar.Problems = append(ar.Problems, Problem{Severity: sev, Code: lvm.CodeMemberSlow, Text: fmt.Sprintf(
			"%s: %s (%s, %s) slow: r_await %.1f ms, %%util %.0f, aqu-sz %.2f at %.1f reads/s, vs the siblings' median r_await %.1f ms "+
				"(%.0fx; over %gx in %d of %d intervals); replace it: tbhost lvm replace %s --old /dev/%s --new NEWDISK",
			ar.Name, m.Label(), who, orDefault(m.ImageLabel(), "no image"), m.Rates.RAwaitMS, m.Rates.UtilPercent, m.Rates.QueueSize,
			m.Rates.ReadsPerS, m.SiblingsAwaitMS, m.AwaitRatio, factor, s.judged, ar.Intervals, ar.Name, m.Label())})
	}
}

// skipped reports whether the member is left out of skew and latency
// judgement (Thresholds.Skip names it by kernel name or by-id name).
func skipped(m Member, skip []string) bool {
	for _, s := range skip {
		s = strings.TrimPrefix(s, "/dev/disk/by-id/")
		s = strings.TrimPrefix(s, "/dev/")
		if s != "" && (s == m.Disk || s == m.ID || s == m.partID) {
			return true
		}
	}
	return false
}

// skippedLabels lists the skipped members ("" when none).
func skippedLabels(ms []MemberResult) string {
	var out []string
	for _, m := range ms {
		if m.Skipped {
			out = append(out, m.Label())
		}
	}
	return strings.Join(out, ", ")
}
