package monitor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/lvm"
)

// Env is what a monitor command reads: a root tree and a command runner.
type Env struct {
	Root   string       // "/" for this host, or a fixture/snapshot tree
	Runner execx.Runner // runs lvm on the host (unused under a snapshot root)
	Clock  Clock        // nil: the wall clock
}

// Snapshot reports whether Root is a saved tree rather than this host.
func (e Env) Snapshot() bool { return e.Root != "" && e.Root != "/" }

func (e Env) clock() Clock {
	if e.Clock == nil {
		return RealClock{}
	}
	return e.Clock
}

// LVM returns where LVM's report comes from: `lvm lvs/pvs` through the
// runner on this host; ROOT/lvm/{lvs,pvs}.json under a snapshot root (the
// layout of the lab's captures), or nothing when the snapshot has none.
func (e Env) LVM() LVMReporter {
	if !e.Snapshot() {
		return lvm.Client{Runner: e.Runner}
	}
	dir := filepath.Join(e.Root, "lvm")
	if _, err := os.Stat(filepath.Join(dir, "lvs.json")); err != nil {
		return nil
	}
	return FileReport{Dir: dir}
}

// Discover finds the named arrays (all when none) under the env's root.
func (e Env) Discover(ctx context.Context, names []string) (Topology, error) {
	t, err := Discover(ctx, DiscoverOptions{Root: e.Root, LVM: e.LVM(), Names: names})
	if err != nil {
		return t, err
	}
	if e.Snapshot() && e.LVM() == nil {
		t.Notes = append(t.Notes, fmt.Sprintf("no %s: arrays found from sys/block alone, without LVM health", filepath.Join(e.Root, "lvm", "lvs.json")))
	}
	return t, nil
}

// Source returns the sampler and the clock to pace it with. Under a
// snapshot root, proc/diskstats.0, .1, ... are replayed as if taken
// interval apart (no waiting), or proc/diskstats as a single sample; on
// this host (root "/") /proc/diskstats is read live.
func (e Env) Source(interval time.Duration) (Source, Clock, string, error) {
	if e.Snapshot() {
		if src, ok := NewReplaySource(e.Root, time.Unix(0, 0).UTC(), interval); ok {
			note := fmt.Sprintf("replaying %d samples of %s as %s apart", len(src.Files), filepath.Join(e.Root, "proc", "diskstats.N"), interval)
			if len(src.Files) == 1 {
				note = fmt.Sprintf("one saved sample (%s): no rates", src.Files[0])
			}
			return src, instantClock{}, note, nil
		}
	}
	src, err := NewProcSource(e.Root, e.clock())
	if err != nil {
		return nil, nil, "", err
	}
	return src, e.clock(), "", nil
}

// instantClock paces a replay: no waiting.
type instantClock struct{}

func (instantClock) Now() time.Time                                   { return time.Unix(0, 0).UTC() }
func (instantClock) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// CheckOptions are monitor check's knobs.
type CheckOptions struct {
	Names      []string
	For        time.Duration // the window
	Interval   time.Duration // between samples inside the window
	Thresholds Thresholds
	// ScrubStates are scrub state files to read besides each LVM array's
	// default one (ScrubStatePath): the disks a running scrub reads are
	// left out of skew and latency judgement.
	ScrubStates []string
}

// Check discovers, samples over the window and judges. An error means the
// check could not run (Nagios UNKNOWN).
func Check(ctx context.Context, e Env, o CheckOptions) (Report, error) {
	topo, err := e.Discover(ctx, o.Names)
	if err != nil {
		return Report{}, err
	}
	if !e.Snapshot() && e.Runner != nil { // the disks of a snapshot cannot be asked
		probs, notes := SMARTProblems(ctx, e.Runner, "/sys/class/block", topo.Arrays)
		for i := range topo.Arrays {
			topo.Arrays[i].Problems = append(topo.Arrays[i].Problems, probs[topo.Arrays[i].Name]...)
		}
		topo.Notes = append(topo.Notes, notes...)
	}
	if len(topo.Arrays) == 0 { // nothing to sample
		r := Evaluate(nil, nil, o.Thresholds)
		r.Notes = topo.Notes
		return r, nil
	}
	if o.Interval <= 0 || o.Interval > o.For {
		o.Interval = o.For
	}
	src, clock, note, err := e.Source(o.Interval)
	if err != nil {
		return Report{}, err
	}
	n := int(o.For / o.Interval)
	samples, err := Collect(ctx, src, clock, o.Interval, max(n, 1))
	if err != nil {
		return Report{}, fmt.Errorf("sampling: %w", err)
	}
	// A member can vanish inside the window (pulled, or dropped by the
	// kernel): its counters disappear, which alone only says "not judged".
	// The topology as it is at the end of the window says it is missing.
	if !e.Snapshot() {
		if end, err := e.Discover(ctx, o.Names); err == nil {
			topo.Arrays = WithVanished(topo.Arrays, end.Arrays)
		}
	}
	th, scrubNotes := e.withScrubSkip(topo.Arrays, o.ScrubStates, o.Thresholds)
	r := Evaluate(topo.Arrays, samples, th)
	r.Notes = append(r.Notes, topo.Notes...)
	r.Notes = append(r.Notes, scrubNotes...)
	r.Notes = append(r.Notes, unmatchedSkips(topo.Arrays, o.Thresholds.Skip)...)
	if note != "" {
		r.Notes = append(r.Notes, note)
	}
	return r, nil
}

// WithVanished returns the arrays as found at the start of a window, with
// what a second look at its end found gone: a member whose disk is no
// longer among the array's present members is marked missing, and the end's
// health findings the start did not have (a missing PV, a partial LV) are
// added; a progress finding (lvm.ProgressCode: rebuild, re-initialisation,
// sync) the start had is replaced by the end's, so a check says the latest
// percent once instead of both. The samples of the window stay the start's.
func WithVanished(start, end []Array) []Array {
	byName := map[string]Array{}
	for _, a := range end {
		byName[a.Name] = a
	}
	out := make([]Array, len(start))
	for i, a := range start {
		out[i] = a
		later, ok := byName[a.Name]
		if !ok {
			continue
		}
		present := map[string]bool{}
		for _, m := range later.Members {
			if !m.Missing && m.Disk != "" {
				present[m.Disk] = true
			}
		}
		out[i].Members = append([]Member(nil), a.Members...)
		out[i].Problems = append([]Problem(nil), a.Problems...)
		for j, m := range out[i].Members {
			if !m.Missing && m.Disk != "" && len(m.Images) > 0 && !present[m.Disk] {
				out[i].Members[j].Missing = true
				out[i].Degraded = true
				out[i].Problems = append(out[i].Problems, Problem{Severity: Critical, Code: lvm.CodeMemberGone,
					Text: fmt.Sprintf("%s: %s (%s) vanished during the window: pulled, or dropped by the kernel", a.Name, m.Disk, strings.Join(m.Images, ","))})
			}
		}
		seen := map[string]bool{}
		progressAt := map[lvm.Code]int{} // a progress finding's index in out[i].Problems
		for j, p := range out[i].Problems {
			seen[string(p.Code)+"\x00"+p.Text] = true
			if lvm.ProgressCode(p.Code) {
				progressAt[p.Code] = j
			}
		}
		for _, p := range later.Problems {
			if j, ok := progressAt[p.Code]; ok {
				out[i].Problems[j] = p // the latest percent
			} else if !seen[string(p.Code)+"\x00"+p.Text] {
				if lvm.ProgressCode(p.Code) {
					progressAt[p.Code] = len(out[i].Problems)
				}
				out[i].Problems = append(out[i].Problems, p)
			}
		}
		out[i].Degraded = out[i].Degraded || later.Degraded
	}
	return out
}

// unmatchedSkips are notes on --skip names that match no member of the
// arrays checked: a typo (sdz for sdc) would otherwise leave the disk a
// scrub reads judged, and its skew raise the alert --skip was meant to
// keep quiet, with nothing saying why. A note, not a refusal: the disk may
// be the one that has just gone missing, and the check must still say so.
func unmatchedSkips(arrays []Array, skip []string) []string {
	var members []Member
	var names []string
	for _, a := range arrays {
		for _, m := range a.Members {
			members = append(members, m)
			if m.Disk != "" {
				names = append(names, m.Disk)
			}
		}
	}
	var notes []string
	for _, s := range skip {
		if !slices.ContainsFunc(members, func(m Member) bool { return skipped(m, []string{s}) }) {
			notes = append(notes, fmt.Sprintf("--skip %s names no member of the arrays checked (members: %s): nothing was left out of judgement", s, strings.Join(names, ", ")))
		}
	}
	return notes
}
