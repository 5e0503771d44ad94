package monitor

import (
	"encoding/binary"
	"math"
	"testing"
	"time"
)

// FuzzScrubState: any state file yields only plain disk names (never a
// path), at most as many as it has bytes; no panic.
func FuzzScrubState(f *testing.F) {
	now := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)
	f.Add([]byte(`{"updated":"2026-12-01T13:59:58Z","reading_disks":["/dev/sdd"],"pid":7}`))
	f.Add([]byte(`{"updated":"2026-12-01T13:00:00Z","reading_disks":["/dev/sdd"]}`))
	f.Add([]byte(`{"updated":"2026-12-01T14:00:00Z","reading_disks":["../etc/passwd","sda"]}`))
	f.Add([]byte(`{"updated":"2026-12-01T14:00:00Z","reading_disks":[]}`))
	f.Add([]byte(`{garbage`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, b []byte) {
		ds, err := parseScrubState(b, now)
		if err != nil && ds != nil {
			t.Fatalf("error %v with disks %v", err, ds)
		}
		if len(ds) > len(b) {
			t.Fatalf("%d disks from %d bytes", len(ds), len(b))
		}
		for _, d := range ds {
			if !validDiskName(d) {
				t.Fatalf("disk %q from %q", d, b)
			}
		}
	})
}

// FuzzSlowJudgement: from arbitrary counters of 4 disks over 4 intervals,
// Evaluate never panics, flags a member slow only when it read at least
// the floor in the window, never flags a skipped member, and its ratios are
// finite and non-negative.
func FuzzSlowJudgement(f *testing.F) {
	seed := make([]byte, 4*4*3*2)
	for i := range seed {
		seed[i] = byte(i * 7)
	}
	f.Add(seed, uint8(0))
	f.Add(make([]byte, 96), uint8(2))
	f.Fuzz(func(t *testing.T, b []byte, skip uint8) {
		disks := six[:4]
		var rows [][]ioRow
		for k := 0; k < 4; k++ {
			var row []ioRow
			for i := range disks {
				o := (k*4 + i) * 6
				var v [3]uint16
				for j := range v {
					if o+2*j+1 < len(b) {
						v[j] = binary.LittleEndian.Uint16(b[o+2*j:])
					}
				}
				row = append(row, ioRow{reads: uint64(v[0]), awaitMS: float64(v[1]) / 16, util: float64(v[2] % 101)})
			}
			rows = append(rows, row)
		}
		th := DefaultThresholds()
		if int(skip) < len(disks) {
			th.Skip = []string{disks[skip]}
		}
		r := Evaluate([]Array{array(disks...)}, latencySeq(disks, rows), th)
		for _, m := range r.Arrays[0].Members {
			if math.IsNaN(m.AwaitRatio) || math.IsInf(m.AwaitRatio, 0) || m.AwaitRatio < 0 {
				t.Fatalf("%s ratio %v", m.Disk, m.AwaitRatio)
			}
			if m.Slow && m.Skipped {
				t.Fatalf("%s skipped and slow", m.Disk)
			}
			if m.Slow && m.Rates.ReadsPerS*4 < th.SlowMinIOPS*2 {
				// slow needs >= floor in at least half the 4 intervals
				t.Fatalf("%s slow at %.2f reads/s over the window", m.Disk, m.Rates.ReadsPerS)
			}
			if m.Slow && m.SlowSeverity != Warning && m.SlowSeverity != Critical {
				t.Fatalf("%s slow with severity %v", m.Disk, m.SlowSeverity)
			}
		}
	})
}
