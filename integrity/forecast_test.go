package integrity

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The reference host's images: 1,419,417 extents of 4 MiB each (the
// `lvm plan --example` raid5 over six 6 TB HDDs; internal/timeline's refHost).
const refImage = int64(1419417) << 22

func refSizes() []int64 { return []int64{refImage, refImage, refImage, refImage, refImage, refImage} }

func near(a, b float64) bool { return math.Abs(a-b) < 0.01 }

// Issue 15 item 4: the scrub's own forecast, against figures worked out by
// hand (MiB = 2^20 bytes):
//
//	a pass: 6 x 1,419,417 x 4 MiB = 34,066,008 MiB (35,720,748,023,808 bytes)
func TestScrubForecastArithmetic(t *testing.T) {
	const passMiB = 34066008
	if got := int64(6) * refImage; got != passMiB<<20 {
		t.Fatalf("pass bytes %d", got)
	}
	t.Run("the old health-check slice: --rate 100MiB/s --budget 30m", func(t *testing.T) {
		// 34,066,008 / 100 = 340,660.08 s; / 1,800 s = 189.26: 190 nights
		f := forecastScrub(forecastInput{Sizes: refSizes(), Left: passMiB << 20, Rate: 100 << 20, Parallel: 64, Slice: 30 * time.Minute})
		if f.PassBytes != passMiB<<20 || f.Rate != 100<<20 || f.RateFrom != "rate" || !near(f.PassSeconds, 340660.08) || f.SliceSeconds != 1800 {
			t.Fatalf("%+v", f)
		}
		if f.PassNights != 190 || f.LeftNights != 190 || f.TargetNights != 14 || !strings.Contains(f.Warning, "190 nights") {
			t.Fatalf("nights %d/%d, warning %q: want 190 and a warning", f.PassNights, f.LeftNights, f.Warning)
		}
	})
	t.Run("measured rate of the previous runs at the same cap", func(t *testing.T) {
		// two runs at --rate 400MiB/s achieved 320 MiB/s under backoff:
		// 2,304,000 MiB in 7,200 s and 1,152,000 MiB in 3,600 s; a run at
		// 100 MiB/s does not count. 34,066,008 / 320 = 106,456.275 s; / 7,200
		// = 14.79: 15 nights, over the target of 14 (the cap alone would
		// say 85,165 s: 11.83, 12 nights). Half the pass left (3 images,
		// 17,033,004 MiB): 53,228.14 s / 7,200 = 7.39: 8 nights.
		runs := []RunRecord{
			{Seconds: 7200, Bytes: 2304000 << 20, RateCap: 400 << 20},
			{Seconds: 7200, Bytes: 720000 << 20, RateCap: 100 << 20},
			{Seconds: 3600, Bytes: 1152000 << 20, RateCap: 400 << 20},
		}
		f := forecastScrub(forecastInput{Sizes: refSizes(), Left: 3 * refImage, Rate: 400 << 20, Parallel: 64, Slice: 2 * time.Hour, Runs: runs})
		if f.Rate != 320<<20 || f.RateFrom != "measured" || !strings.Contains(f.RateWhy, "last 2 runs") {
			t.Fatalf("rate %d (%s: %s), want 320 MiB/s measured over 2 runs", f.Rate, f.RateFrom, f.RateWhy)
		}
		if !near(f.PassSeconds, 106456.275) || f.PassNights != 15 || f.LeftNights != 8 || f.Warning == "" {
			t.Fatalf("%+v", f)
		}
		f = forecastScrub(forecastInput{Sizes: refSizes(), Left: 3 * refImage, Rate: 400 << 20, Parallel: 64, Slice: 2 * time.Hour})
		if f.RateFrom != "rate" || f.PassNights != 12 || f.Warning != "" {
			t.Fatalf("at the cap: %+v", f)
		}
	})
	t.Run("unthrottled, no time limit", func(t *testing.T) {
		// 6 images at once x 160 MiB/s = 960 MiB/s: 34,066,008 / 960 =
		// 35,485.425 s; no slice: no nights; --parallel 2: 320 MiB/s
		f := forecastScrub(forecastInput{Sizes: refSizes(), Left: passMiB << 20, Parallel: 64})
		if f.Rate != 960<<20 || f.RateFrom != "assumed" || !near(f.PassSeconds, 35485.425) || f.PassNights != 0 || f.Warning != "" {
			t.Fatalf("%+v", f)
		}
		if !strings.Contains(f.String(), "no --budget/--until") {
			t.Errorf("%s", f)
		}
		if f = forecastScrub(forecastInput{Sizes: refSizes(), Parallel: 2}); f.Rate != 320<<20 {
			t.Fatalf("parallel 2: %+v", f)
		}
	})
}

// The forecast comes before the first read, and a run's achieved rate is
// kept in the state file for the next run's forecast.
func TestScrubForecastsBeforeReadingAndMeasuresTheRun(t *testing.T) {
	dir := t.TempDir()
	targets := imageFiles(t, dir, 8<<20, 8<<20)
	state := filepath.Join(dir, "s.json")
	clk := newFakeClock()
	var kinds []string
	opts := ScrubOptions{Targets: targets, Identity: "u", StatePath: state, Rate: 1 << 20, Chunk: 1 << 20, Clock: clk,
		Deadline: clk.Now().Add(5 * time.Second), Events: func(e ScrubEvent) { kinds = append(kinds, e.Kind) }}
	res, err := Scrub(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(kinds) == 0 || kinds[0] != EventForecast {
		t.Fatalf("events %v: the forecast must come first", kinds)
	}
	// 16 MiB at 1 MiB/s in 5 s slices: 16 MiB / 5 MiB = 3.2: 4 nights
	f := res.Forecast
	if f == nil || f.RateFrom != "rate" || f.PassBytes != 16<<20 || f.SliceSeconds != 5 || f.PassNights != 4 {
		t.Fatalf("forecast %+v", f)
	}
	var st ScrubState
	if _, err := readJSON(state, &st); err != nil || len(st.Runs) != 1 || st.Runs[0].Bytes != res.Bytes || st.Runs[0].RateCap != 1<<20 {
		t.Fatalf("runs %+v %v", st.Runs, err)
	}
	opts.Deadline = clk.Now().Add(5 * time.Second)
	res2, err := Scrub(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(float64(res.Bytes) / res.Seconds)
	if f := res2.Forecast; f.RateFrom != "measured" || f.Rate != want || f.LeftBytes != 16<<20-res.Bytes {
		t.Fatalf("second run's forecast %+v: want the measured %d B/s and %d bytes left", f, want, 16<<20-res.Bytes)
	}
}
