package timeline

import (
	"math"
	"testing"
	"time"
)

// The reference host (tbhost lvm plan --example): 6 HDDs, 5 data stripes,
// each image 1,419,417 extents of 4 MiB; the full 3-7 set is
// 18,550,113,699,360 bytes with a 413,834,902,592-byte prefix store.
var refHost = Host{HDDs: 6, DataStripes: 5, ImageBytes: 1419417 << 22, Integrity: true,
	TablesBytes: 18_550_113_699_360, PrefixBytes: 413_834_902_592}

func TestForecastOfTheReferenceHost(t *testing.T) {
	tl, err := Forecast(refHost, Defaults(5))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		// 1,419,417 x 4 MiB / 160 MiB/s = 1419417*4/160 s
		"initial-sync": 35485.425,
		// the same bytes at 80 MiB/s
		"integrity-init": 70970.85,
		// 18,550,113,699,360 B at 112 MiB/s = 117,440,512 B/s (the array
		// takes 5 x 160/2 = 400 MiB/s, so the network bounds it)
		"copy-tables": 18_550_113_699_360.0 / 117_440_512,
		// 413,834,902,592 B at 5 x 160/2 = 400 MiB/s = 419,430,400 B/s
		"prefix-extract": 413_834_902_592.0 / 419_430_400,
		// 6 x 1,419,417 x 4 MiB at 400 MiB/s = 8516502*4/400 s
		"scrub-pass": 85165.02,
		// one image at 160 MiB/s, then re-initialising integrity at 80 MiB/s
		"rebuild": 35485.425 + 70970.85,
	}
	got := map[string]Step{}
	for _, s := range tl.Steps {
		got[s.Name] = s
	}
	for name, secs := range want {
		s, ok := got[name]
		if !ok {
			t.Errorf("no %s step", name)
			continue
		}
		if math.Abs(s.Seconds-secs) > 0.01*secs/100 {
			t.Errorf("%s: %.2f s, want %.2f s", name, s.Seconds, secs)
		}
	}
	// 85,165 s in slices of 2 h = 7,200 s: 11.83, so 12 nights
	if s := got["scrub-pass"]; s.Nights != 12 || s.Warning != "" {
		t.Errorf("scrub pass: %d nights (warning %q), want 12 and no warning", s.Nights, s.Warning)
	}
	if len(tl.Steps) != len(want) {
		t.Errorf("%d steps, want %d", len(tl.Steps), len(want))
	}
}

// The old health-check defaults (100 MiB/s for 30 minutes a night) need
// 6 x 1,419,417 x 4 MiB / 100 MiB/s = 340,660 s = 189.3 slices: 190 nights.
func TestOldScrubDefaultsWarn(t *testing.T) {
	r := Defaults(5)
	r.Scrub, r.ScrubBudget = 100<<20, 30*time.Minute
	tl, err := Forecast(refHost, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range tl.Steps {
		if s.Name == "scrub-pass" {
			if s.Nights != 190 || s.Warning == "" {
				t.Errorf("old defaults: %d nights, warning %q; want 190 nights and a warning", s.Nights, s.Warning)
			}
			return
		}
	}
	t.Fatal("no scrub-pass step")
}

func TestForecastRefusesZeroRates(t *testing.T) {
	r := Defaults(5)
	r.Network = 0
	if _, err := Forecast(refHost, r); err == nil {
		t.Error("a zero network rate was accepted")
	}
	if n := ScrubNights(1, 0, time.Hour); n != math.MaxInt32 {
		t.Errorf("ScrubNights with rate 0 = %d", n)
	}
}

func TestHuman(t *testing.T) {
	for s, want := range map[float64]string{30: "30s", 986.66: "16m", 35485.4: "9.9h", 157953.6: "43.9h", 106456.3: "29.6h", 3e5: "3.5 days"} {
		if got := Human(s); got != want {
			t.Errorf("Human(%v) = %q, want %q", s, got, want)
		}
	}
}

// A scrub goes no faster than its disks: an uncapped scrub of 6 images at
// 50 MiB/s each reads 300 MiB/s; under the reference host's defaults (6 x
// 160 MiB/s = 960 MiB/s above the 400 MiB/s cap) the cap rules.
func TestScrubBoundByTheDisks(t *testing.T) {
	r := FromHDDRate(50<<20, 5)
	r.Scrub = 1 << 40
	tl, err := Forecast(refHost, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range tl.Steps {
		if s.Name == "scrub-pass" && s.Rate != 300<<20 {
			t.Errorf("uncapped scrub at %d B/s, want 6 x 50 MiB/s = %d", s.Rate, 300<<20)
		}
	}
	if d := Defaults(5); d != FromHDDRate(DefaultHDDRate, 5) || d.Integrity != 80<<20 || d.PrefixRead != 400<<20 {
		t.Errorf("Defaults %+v do not derive from the 160 MiB/s HDD", d)
	}
}

// A rebuild's time is the sum of the write and the integrity
// re-initialisation, also when their average rate is under 1 B/s: the
// rate used to be truncated to 0, the time was +Inf, and lvm plan --json
// --hdd-rate 1B/s failed with exit 3 (json: unsupported value: +Inf).
func TestRebuildAtATinyRateIsFinite(t *testing.T) {
	r := Defaults(5)
	r.HDD = 1
	tl, err := Forecast(refHost, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range tl.Steps {
		if s.Name != "rebuild" {
			continue
		}
		want := float64(refHost.ImageBytes) + float64(refHost.ImageBytes)/float64(r.Integrity)
		if math.IsInf(s.Seconds, 0) || math.Abs(s.Seconds-want) > want*1e-9 || s.Rate < 1 {
			t.Errorf("rebuild at 1 B/s: %v s at %d B/s, want %v s", s.Seconds, s.Rate, want)
		}
		return
	}
	t.Fatal("no rebuild step")
}
