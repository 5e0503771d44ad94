package monitor

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/tbhost/tbhost/internal/diskstats"
	"github.com/tbhost/tbhost/lvm"
)

// Severity is a Nagios status: its value is the plugin exit code. It is
// lvm.Severity, the module's one status type.
type Severity = lvm.Severity

// Nagios statuses.
const (
	OK       = lvm.OK
	Warning  = lvm.Warning
	Critical = lvm.Critical
	Unknown  = lvm.Unknown
)

// Worse returns the more serious of a and b (CRITICAL > WARNING > UNKNOWN > OK).
func Worse(a, b Severity) Severity { return lvm.Worse(a, b) }

// Problem is one finding with its severity.
type Problem struct {
	Severity Severity
	Text     string
	// Code says what it is (lvm's finding codes, for md arrays too).
	// Decide on it, never on Text.
	Code lvm.Code
}

// MarshalJSON keeps the shape `monitor topology --json` always had
// (severity as its exit code number), with the code added; keys are
// snake_case like every tbhost JSON object (issue 18).
func (p Problem) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Severity int      `json:"severity"`
		Text     string   `json:"text"`
		Code     lvm.Code `json:"code,omitempty"`
	}{int(p.Severity), p.Text, p.Code})
}

// Thresholds tune the skew detector.
type Thresholds struct {
	// Warn and Crit: a member is flagged when its read rate deviates from
	// the members' mean by more than this fraction in every judged interval
	// of the window (0.30 and 0.60 by default; Ceph flags PG imbalance at 30 %).
	Warn, Crit float64
	// MinReads is the floor: an interval is judged only when the members
	// average at least this many reads/s each. Below it the counts are too
	// small to tell skew from chance (default 10 reads/s per disk).
	MinReads float64
	// NoTraffic is the status when no interval could be judged and nothing
	// else is wrong: OK (default; cron stays quiet) or Unknown.
	NoTraffic Severity
	// SlowFactor and SlowCritFactor: a member whose r_await is at least
	// this many times its siblings' median in every judged interval is
	// flagged slow, WARNING (3) and CRITICAL (10); see slow.go.
	SlowFactor, SlowCritFactor float64
	// SlowMinIOPS is latency's traffic floor: a member's interval is judged
	// only when it and at least one sibling read this many reads/s (5).
	SlowMinIOPS float64
	// Skip names members (kernel name, by-id name or path) left out of the
	// skew and latency judgement, e.g. the disk an integrity scrub reads:
	// its own load is not a sibling's imbalance or a slow disk.
	Skip []string
}

// DefaultThresholds are tbhost monitor check's defaults.
func DefaultThresholds() Thresholds {
	return Thresholds{Warn: 0.30, Crit: 0.60, MinReads: 10, NoTraffic: OK, SlowFactor: 3, SlowCritFactor: 10, SlowMinIOPS: 5}
}

// idleBelow: a member reading less than this fraction of the members' mean
// in every judged interval is "idle" (CRITICAL whatever the thresholds).
// Not exactly zero: on an array built without --stripes the "idle" disks
// still serve a trickle of dm-integrity metadata reads for their siblings.
const idleBelow = 0.05

// Member flags.
const (
	FlagOK      = "ok"
	FlagUnder   = "under"
	FlagOver    = "over"
	FlagIdle    = "idle" // below 5 % of the mean: no (or next to no) reads
	FlagMissing = "missing"
	FlagSlow    = "slow" // r_await far above its siblings' under the same traffic
)

// MemberResult is one member over the window.
type MemberResult struct {
	Member
	Rates     Rates    // over the whole window
	Share     float64  // of the array's reads over the window, 0..1
	Deviation float64  // window read rate vs the members' mean: -0.5 = half the mean
	Flag      string   // ok, under, over, idle, missing, slow
	Severity  Severity // of the flag
	// SiblingsAwaitMS is the median window r_await of the other members
	// that read; AwaitRatio is this member's r_await over it (0 when no
	// sibling read). Slow: flagged slow (the flag may still say idle).
	SiblingsAwaitMS, AwaitRatio float64
	Slow                        bool
	SlowSeverity                Severity // WARNING or CRITICAL when Slow
	// Skipped: left out of skew and latency judgement (Thresholds.Skip).
	Skipped bool
}

// ArrayResult is one array's verdict.
type ArrayResult struct {
	Array
	Status    Severity
	Members   []MemberResult
	Problems  []Problem // health, topology and skew findings
	ReadsPerS float64   // the array's members together, over the window
	Judged    int       // intervals with enough reads to judge skew
	Intervals int
	// Note says why skew was not judged ("" when it was).
	Note string
	// Notes are remarks that are no finding (members skipped).
	Notes []string
}

// Report is the verdict over all arrays.
type Report struct {
	Status  Severity
	Summary string // one line, without the status word
	Arrays  []ArrayResult
	Window  time.Duration
	Notes   []string
}

// Evaluate judges the arrays over the samples (at least two, in time order).
func Evaluate(arrays []Array, samples []Sample, th Thresholds) Report {
	r := Report{Status: OK}
	if len(samples) >= 2 {
		r.Window = samples[len(samples)-1].Time.Sub(samples[0].Time)
	}
	for _, a := range arrays {
		ar := evaluateArray(a, samples, th)
		r.Status = Worse(r.Status, ar.Status)
		r.Arrays = append(r.Arrays, ar)
	}
	if len(arrays) == 0 {
		r.Status = Unknown
		r.Summary = "no RAID arrays found (no LVM RAID LV, no md device)"
		return r
	}
	r.Summary = summarize(r)
	return r
}

func evaluateArray(a Array, samples []Sample, th Thresholds) ArrayResult {
	ar := ArrayResult{Array: a, Problems: append([]Problem(nil), a.Problems...)}
	ar.Members = make([]MemberResult, len(a.Members))
	var present, cand []int // cand: present and judged (not skipped)
	for i, m := range a.Members {
		ar.Members[i] = MemberResult{Member: m, Flag: FlagOK}
		if m.Missing || m.Disk == "" {
			ar.Members[i].Flag, ar.Members[i].Severity = FlagMissing, Critical
			continue
		}
		if len(samples) > 0 {
			if _, ok := samples[0].Devices[m.Disk]; !ok {
				ar.Members[i].Flag, ar.Members[i].Severity = FlagMissing, Critical
				ar.Problems = append(ar.Problems, Problem{Severity: Critical, Code: lvm.CodeMemberGone, Text: fmt.Sprintf("%s: %s is not in /proc/diskstats (disk gone?)", a.Name, m.Disk)})
				continue
			}
		}
		present = append(present, i)
		if skipped(m, th.Skip) {
			ar.Members[i].Skipped = true
		} else {
			cand = append(cand, i)
		}
	}
	if len(cand) == 0 && len(present) > 1 {
		// every member is skipped (a scrub reading all images at once):
		// the load is the same on each, so they compare among themselves
		cand = append([]int(nil), present...)
		for _, i := range present {
			ar.Members[i].Skipped = false
		}
	}
	if len(samples) < 2 {
		ar.Note = "fewer than two samples: no rates"
		ar.Problems = append(ar.Problems, Problem{Severity: Unknown, Code: lvm.CodeNoSamples, Text: fmt.Sprintf("%s: %s", a.Name, ar.Note)})
		ar.Status = worstOf(ar.Problems, ar.Members)
		return ar
	}
	ar.Intervals = len(samples) - 1
	minDev := make([]float64, len(ar.Members))
	maxDev := make([]float64, len(ar.Members))
	readAlways0 := make([]bool, len(ar.Members))
	for _, i := range present {
		minDev[i], maxDev[i], readAlways0[i] = math.Inf(1), math.Inf(-1), true
	}
	var lowest float64 = math.Inf(1)
	resets := 0
	slow := make([]slowStats, len(ar.Members))
	for k := 0; k+1 < len(samples); k++ {
		secs := samples[k+1].Time.Sub(samples[k].Time).Seconds()
		rates := make([]Rates, len(ar.Members))
		sum := 0.0
		reset := false // a member's counters went back: no rates this interval
		for _, i := range present {
			d := ar.Members[i].Disk
			r, ok := diskstats.Compute(samples[k].Devices[d], samples[k+1].Devices[d], secs)
			reset = reset || !ok
			rates[i] = r
		}
		for _, i := range cand {
			sum += rates[i].ReadsPerS
		}
		if len(cand) == 0 {
			break
		}
		if reset {
			resets++
			continue
		}
		mean := sum / float64(len(cand))
		lowest = math.Min(lowest, mean)
		if a.Syncing || len(cand) < 2 || secs <= 0 {
			continue
		}
		judgeSlowInterval(rates, cand, th, slow)
		if mean < th.MinReads {
			continue
		}
		ar.Judged++
		for _, i := range cand {
			dev := (rates[i].ReadsPerS - mean) / mean
			minDev[i] = math.Min(minDev[i], dev)
			maxDev[i] = math.Max(maxDev[i], dev)
			if dev > idleBelow-1 {
				readAlways0[i] = false
			}
		}
	}
	// the window as a whole: rates, shares, deviation
	total := 0.0
	for _, i := range present {
		d := ar.Members[i].Disk
		ar.Members[i].Rates, _ = diskstats.Window(samples, d)
		total += ar.Members[i].Rates.ReadsPerS
	}
	ar.ReadsPerS = total
	mean := 0.0
	if len(present) > 0 {
		mean = total / float64(len(present))
	}
	for _, i := range present {
		if total > 0 {
			ar.Members[i].Share = ar.Members[i].Rates.ReadsPerS / total
			ar.Members[i].Deviation = (ar.Members[i].Rates.ReadsPerS - mean) / mean
		}
	}
	switch {
	case a.Syncing:
		ar.Note = "skew not judged: " + orDefault(a.SyncAction, "sync") + " in progress"
	case len(cand) < 2:
		ar.Note = "skew not judged: fewer than two members present"
		if len(cand) < len(present) {
			ar.Note += " and not skipped"
		}
	case ar.Judged == 0 && resets > 0:
		ar.Note = fmt.Sprintf("skew not judged: a member's diskstats counters went backwards (device reset) in %d of %d intervals", resets, ar.Intervals)
		if th.NoTraffic != OK {
			ar.Problems = append(ar.Problems, Problem{th.NoTraffic, a.Name + ": " + ar.Note, lvm.CodeNoTraffic})
		}
	case ar.Judged == 0:
		ar.Note = fmt.Sprintf("skew not judged: too little traffic (%.1f reads/s per disk, below --min-reads %g)", lowest, th.MinReads)
		if th.NoTraffic != OK {
			ar.Problems = append(ar.Problems, Problem{Severity: th.NoTraffic, Code: lvm.CodeNoTraffic, Text: a.Name + ": " + ar.Note})
		}
	default:
		flagSkew(&ar, cand, minDev, maxDev, readAlways0, mean, th)
	}
	if !a.Syncing && len(cand) >= 2 {
		flagSlow(&ar, cand, slow, th)
	}
	if skippedNames := skippedLabels(ar.Members); skippedNames != "" {
		ar.Notes = append(ar.Notes, skippedNames+" left out of skew and latency judgement (--skip)")
	}
	ar.Status = worstOf(ar.Problems, ar.Members)
	return ar
}

func flagSkew(ar *ArrayResult, present []int, minDev, maxDev []float64, idle []bool, mean float64, th Thresholds) {
	var idleNames []string
	type flagged struct {
		label string
		dev   float64
	}
	groups := map[string]map[Severity][]flagged{FlagOver: {}, FlagUnder: {}}
	for _, i := range present {
		m := &ar.Members[i]
		switch {
		case idle[i]:
			m.Flag, m.Severity = FlagIdle, Critical
			idleNames = append(idleNames, m.Label())
			continue
		case minDev[i] > th.Crit:
			m.Flag, m.Severity = FlagOver, Critical
		case maxDev[i] < -th.Crit:
			m.Flag, m.Severity = FlagUnder, Critical
		case minDev[i] > th.Warn:
			m.Flag, m.Severity = FlagOver, Warning
		case maxDev[i] < -th.Warn:
			m.Flag, m.Severity = FlagUnder, Warning
		default:
			continue
		}
		groups[m.Flag][m.Severity] = append(groups[m.Flag][m.Severity], flagged{m.Label(), m.Deviation})
	}
	if len(idleNames) > 0 {
		ar.Problems = append(ar.Problems, Problem{Severity: Critical, Code: lvm.CodeMemberIdle, Text: fmt.Sprintf(
			"%s: %s idle: (almost) no reads while the other members read (%.1f reads/s per disk on average)",
			ar.Name, strings.Join(idleNames, ", "), mean)})
	}
	for _, dir := range []string{FlagUnder, FlagOver} {
		for _, sev := range []Severity{Critical, Warning} {
			fl := groups[dir][sev]
			if len(fl) == 0 {
				continue
			}
			limit := th.Warn
			if sev == Critical {
				limit = th.Crit
			}
			parts := make([]string, len(fl))
			for j, f := range fl {
				parts[j] = fmt.Sprintf("%s %+.0f%%", f.label, 100*f.dev)
			}
			word := "less"
			if dir == FlagOver {
				word = "more"
			}
			ar.Problems = append(ar.Problems, Problem{Severity: sev, Code: lvm.CodeMemberSkewed, Text: fmt.Sprintf(
				"%s: %s read %s than the members' mean (%.1f reads/s) by over %.0f%% for the whole window",
				ar.Name, strings.Join(parts, ", "), word, mean, 100*limit)})
		}
	}
}

func worstOf(ps []Problem, ms []MemberResult) Severity {
	s := OK
	for _, p := range ps {
		s = Worse(s, p.Severity)
	}
	for _, m := range ms {
		s = Worse(s, m.Severity)
	}
	return s
}

// summarize makes the one-line summary: the worst findings first, or what
// was judged OK.
func summarize(r Report) string {
	var ps []Problem
	for _, a := range r.Arrays {
		for _, p := range a.Problems {
			if p.Severity != OK {
				ps = append(ps, p)
			}
		}
	}
	if len(ps) > 0 {
		// the worst severity's findings, at most two: a Nagios status line stays short
		sort.SliceStable(ps, func(i, j int) bool { return ps[i].Severity.Rank() > ps[j].Severity.Rank() })
		var texts []string
		for i, p := range ps {
			if i == 2 || p.Severity != ps[0].Severity {
				texts = append(texts, fmt.Sprintf("(+%d more findings below)", len(ps)-i))
				break
			}
			texts = append(texts, p.Text)
		}
		return strings.Join(texts, "; ")
	}
	var parts []string
	for _, a := range r.Arrays {
		if a.Note != "" {
			parts = append(parts, fmt.Sprintf("%s %s", a.Name, a.Note))
			continue
		}
		worst := 0.0
		for _, m := range a.Members {
			worst = math.Max(worst, math.Abs(m.Deviation))
		}
		parts = append(parts, fmt.Sprintf("%s balanced (%d disks, %.0f reads/s, max deviation %.0f%%)", a.Name, len(a.Members), a.ReadsPerS, 100*worst))
	}
	return strings.Join(parts, "; ")
}
