package integrity

import (
	"fmt"
	"time"

	"github.com/tbhost/tbhost/internal/sizes"
	"github.com/tbhost/tbhost/internal/timeline"
)

// ScrubForecast is what a full scrub pass takes at the rate the scrub
// assumes and its slice per night, printed before a run starts (and in
// its JSON). The nights are internal/timeline's ScrubNights, the target
// timeline.TargetScrubNights: the same arithmetic as `lvm plan`'s TIMELINE.
type ScrubForecast struct {
	Images    int   `json:"images"`
	PassBytes int64 `json:"pass_bytes"` // every image end to end
	LeftBytes int64 `json:"left_bytes"` // what the pass in progress has still to read
	// Rate is the bytes/s assumed; RateFrom says where it comes from:
	// "measured" (the previous runs at the same --rate, from the state
	// file), "rate" (the --rate cap) or "assumed" (unthrottled: one HDD's
	// sequential rate per image read at once, timeline.DefaultHDDRate).
	Rate     int64  `json:"rate"`
	RateFrom string `json:"rate_from"`
	RateWhy  string `json:"rate_why"`
	// SliceSeconds is one run's time (--budget, or until --until); 0 when
	// the run has no time limit (then there are no nights to count).
	SliceSeconds float64 `json:"slice_seconds"`
	PassSeconds  float64 `json:"pass_seconds"` // a full pass at Rate
	LeftSeconds  float64 `json:"left_seconds"` // the rest of this pass at Rate
	PassNights   int     `json:"pass_nights,omitempty"`
	LeftNights   int     `json:"left_nights,omitempty"`
	TargetNights int     `json:"target_nights"`
	Warning      string  `json:"warning,omitempty"`
}

// forecastInput is what ForecastScrub needs of a run.
type forecastInput struct {
	Sizes    []int64 // each image's size
	Left     int64   // bytes this pass has still to read
	Rate     int64   // the cap, 0 unthrottled
	Parallel int     // images read at once
	Slice    time.Duration
	Runs     []RunRecord // the previous runs, from the state file
}

// measuredRate is the achieved rate of the previous runs that ran with the
// same cap (ok false when there is none to go by).
func measuredRate(runs []RunRecord, rateCap int64) (rate int64, n int, ok bool) {
	var bytes, secs float64 // float: a crafted state file's sums must not overflow
	for _, r := range runs {
		if r.RateCap == rateCap && r.Bytes > 0 && r.Seconds >= 1 && r.Seconds < 1e9 {
			bytes += float64(r.Bytes)
			secs += r.Seconds
			n++
		}
	}
	if n == 0 {
		return 0, 0, false
	}
	rate = int64(bytes / secs)
	if rate < 1 || bytes/secs > 1<<50 { // under 1 B/s or over 1 PiB/s: not a measurement
		return 0, 0, false
	}
	return rate, n, true
}

func forecastScrub(in forecastInput) ScrubForecast {
	f := ScrubForecast{Images: len(in.Sizes), LeftBytes: in.Left, TargetNights: timeline.TargetScrubNights}
	for _, s := range in.Sizes {
		f.PassBytes += s
	}
	if r, n, ok := measuredRate(in.Runs, in.Rate); ok {
		f.Rate, f.RateFrom = r, "measured"
		f.RateWhy = fmt.Sprintf("measured over the last %d runs at this --rate", n)
	} else if in.Rate > 0 {
		f.Rate, f.RateFrom, f.RateWhy = in.Rate, "rate", "the --rate cap; the backoff makes it slower under load"
	} else {
		k := int64(min(max(in.Parallel, 1), max(len(in.Sizes), 1)))
		f.Rate, f.RateFrom = k*timeline.DefaultHDDRate, "assumed"
		f.RateWhy = fmt.Sprintf("unthrottled: %d images at once x %s/s, one HDD's sequential rate", k, sizes.Format(timeline.DefaultHDDRate))
	}
	f.PassSeconds = float64(f.PassBytes) / float64(f.Rate)
	f.LeftSeconds = float64(f.LeftBytes) / float64(f.Rate)
	if in.Slice > 0 {
		f.SliceSeconds = in.Slice.Seconds()
		f.PassNights = timeline.ScrubNights(f.PassBytes, f.Rate, in.Slice)
		f.LeftNights = timeline.ScrubNights(f.LeftBytes, f.Rate, in.Slice)
		if f.PassNights > f.TargetNights {
			f.Warning = fmt.Sprintf("a full pass takes %d nights at %s/s, %s a night (target %d): raise --rate or --budget (health-check --set scrub_rate=... --set scrub_budget=...)",
				f.PassNights, sizes.Format(f.Rate), timeline.Human(f.SliceSeconds), f.TargetNights)
		}
	}
	return f
}

// String is the forecast as `integrity scrub` prints it before it starts.
func (f ScrubForecast) String() string {
	s := fmt.Sprintf("forecast: a full pass reads %s (%d images) at %s/s (%s): %s",
		sizes.Format(f.PassBytes), f.Images, sizes.Format(f.Rate), f.RateWhy, timeline.Human(f.PassSeconds))
	if f.SliceSeconds > 0 {
		s += fmt.Sprintf("; %s a night: %d nights for a full pass, %d for the %s left of this one", timeline.Human(f.SliceSeconds), f.PassNights, f.LeftNights, sizes.Format(f.LeftBytes))
	} else {
		s += fmt.Sprintf("; no --budget/--until: this run reads the %s left (%s)", sizes.Format(f.LeftBytes), timeline.Human(f.LeftSeconds))
	}
	return s
}
