package monitor

import (
	"strings"
	"testing"
)

// resetAt makes disk's counters restart from zero (device re-created) at
// sample k: from then on they count only what was done after sample k.
func resetAt(s []Sample, disk string, k int) {
	base := s[k].Devices[disk]
	for j := k; j < len(s); j++ {
		d := s[j].Devices[disk]
		d.ReadIOs -= base.ReadIOs
		d.ReadSectors -= base.ReadSectors
		d.ReadTicks -= base.ReadTicks
		d.IOsTotalTicks -= base.IOsTotalTicks
		d.WeightedIOTicks -= base.WeightedIOTicks
		s[j].Devices[disk] = d
	}
}

// Issue 12 item 8: a counter going backwards is a reset, not an idle disk.
// One interval in which sdc was re-created: no rates for it, so skew is not
// judged (before: sdc "idle", CRITICAL).
func TestBackwardsCounterIsNoIdleDisk(t *testing.T) {
	s := seq(six, [][]uint64{{500, 500, 500, 500, 500, 500}, {500, 510, 495, 505, 490, 500}})
	resetAt(s, "sdc", 2) // sdc's counters restart from 0 at the last sample
	r := Evaluate([]Array{array(six...)}, s[1:], DefaultThresholds())
	ar := r.Arrays[0]
	if r.Status == Critical || strings.Contains(flags(ar), "idle") {
		t.Fatalf("%s %s: %s", r.Status, flags(ar), r.Summary)
	}
	if ar.Judged != 0 || !strings.Contains(ar.Note, "went backwards") {
		t.Errorf("judged %d, note %q", ar.Judged, ar.Note)
	}
	// the operator who wants no-traffic as UNKNOWN gets it for a reset too
	th := DefaultThresholds()
	th.NoTraffic = Unknown
	if r := Evaluate([]Array{array(six...)}, s[1:], th); r.Status != Unknown {
		t.Errorf("--no-traffic unknown: %s", r.Status)
	}
}

// A reset in the middle of a window costs that interval only: the others
// are judged, and sdc's window rates are those of the intervals it has.
func TestBackwardsCounterMidWindow(t *testing.T) {
	s := seq(six, [][]uint64{{500, 500, 500, 500, 500, 500}, {500, 500, 500, 500, 500, 500}, {400, 400, 400, 400, 400, 400}})
	resetAt(s, "sdc", 2) // between samples 1 and 2 sdc was re-created
	r := Evaluate([]Array{array(six...)}, s, DefaultThresholds())
	ar := r.Arrays[0]
	if r.Status != OK || ar.Judged != 2 || ar.Intervals != 3 {
		t.Fatalf("%s judged %d of %d: %s", r.Status, ar.Judged, ar.Intervals, r.Summary)
	}
	// sdc: 500 reads in the first interval, the second has no rates (the
	// reset), 400 in the third: (500 + 400) / 10 s = 90 r/s
	if got := ar.Members[2].Rates.ReadsPerS; got != 90 {
		t.Errorf("sdc window rate %v, want 90 (two intervals with rates)", got)
	}
	if got := ar.Members[0].Rates.ReadsPerS; got != 1400.0/15 {
		t.Errorf("sda window rate %v, want 1400/15", got)
	}
}

// A 32-bit tick counter wrapping is handled as iostat does: the interval
// keeps its rates (r_await 5 ms as for every disk) and is judged.
func TestTickCounterWrapKeepsRates(t *testing.T) {
	s := seq(six, [][]uint64{{500, 510, 495, 505, 490, 500}})
	for k := range s { // sdc's ticks sit just below 2^32 and wrap during the interval
		d := s[k].Devices["sdc"]
		d.ReadTicks += 1<<32 - 1000
		d.ReadTicks &= 1<<32 - 1
		s[k].Devices["sdc"] = d
	}
	if s[1].Devices["sdc"].ReadTicks >= s[0].Devices["sdc"].ReadTicks {
		t.Fatal("the test must make sdc's ticks wrap")
	}
	r := Evaluate([]Array{array(six...)}, s, DefaultThresholds())
	ar := r.Arrays[0]
	if r.Status != OK || ar.Judged != 1 || ar.Members[2].Rates.RAwaitMS != 5 || ar.Members[2].Rates.ReadsPerS != 99 {
		t.Fatalf("%s judged %d, sdc %+v", r.Status, ar.Judged, ar.Members[2].Rates)
	}
}
