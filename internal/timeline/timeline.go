// Package timeline forecasts how long the long steps of building and
// running a tablebase host take: the initial RAID sync and integrity
// initialisation, copying the tables, extracting the prefix store, one full
// integrity scrub pass at the nightly slice, and a rebuild after a disk is
// replaced. Every figure names the bytes and the rate it assumed; the rates
// have defaults (Defaults) that flags override.
package timeline

import (
	"fmt"
	"math"
	"time"

	"github.com/tbhost/tbhost/internal/sizes"
)

// Rates are the throughputs a forecast assumes, in bytes per second.
type Rates struct {
	// HDD is one HDD's sequential rate averaged over its whole surface (the
	// RAID sync and a rebuild stream every disk end to end).
	HDD int64 `json:"hdd" yaml:"hdd"`
	// Integrity is the rate at which dm-integrity initialises (or
	// re-initialises) one image: it reads the data and writes the checksums.
	Integrity int64 `json:"integrity" yaml:"integrity"`
	// ArrayWrite is what the raid5 + integrity LV takes when tables are
	// copied onto it.
	ArrayWrite int64 `json:"array_write" yaml:"array_write"`
	// PrefixRead is the rate at which the prefixes are read from the tables
	// array (the first 2 % of every file: sequential within a file, a seek
	// between files).
	PrefixRead int64 `json:"prefix_read" yaml:"prefix_read"`
	// Network is the copy rate from the old host.
	Network int64 `json:"network" yaml:"network"`
	// Scrub is integrity scrub's total read cap, ScrubBudget the nightly slice.
	Scrub       int64         `json:"scrub" yaml:"scrub"`
	ScrubBudget time.Duration `json:"-" yaml:"-"`
}

// The defaults, each with where it comes from.
const (
	// A 6 TB 7200 rpm drive reads ~230 MB/s on the outer tracks and ~110 MB/s
	// on the inner ones: 160 MiB/s over the whole surface. md's resync cap
	// (dev.raid.speed_limit_max, 200,000 KiB/s) is above it.
	DefaultHDDRate = 160 << 20
	// dm-integrity reads each sector and writes its tag (journal mode: twice):
	// half the disk's rate.
	DefaultIntegrityRate = 80 << 20
	// Gigabit Ethernet carries about 112 MiB/s of rsync payload.
	DefaultNetworkRate = 112 << 20
	// health-check's scrub slice: 400 MiB/s over all images (67 MiB/s per
	// HDD of the reference host, well under its sequential rate, and backing
	// off under foreground load) for 2 hours a night.
	DefaultScrubRate   = 400 << 20
	DefaultScrubBudget = 2 * time.Hour
	// TargetScrubNights is the longest a full scrub pass should take.
	TargetScrubNights = 14
)

// Defaults are the rates for an array of dataStripes data stripes.
func Defaults(dataStripes int) Rates { return FromHDDRate(DefaultHDDRate, dataStripes) }

// FromHDDRate derives every disk-bound rate from one HDD's sequential rate
// hdd (measured, e.g. with dd, or DefaultHDDRate): dm-integrity initialises
// at half of it (it reads each sector and writes its tag), the array takes
// full-stripe writes at half the rate of each data stripe (the journal
// writes twice), and the prefixes are read at half the streaming rate of the
// data stripes (a seek between files). Network and the scrub slice keep
// their defaults.
func FromHDDRate(hdd int64, dataStripes int) Rates {
	if dataStripes < 1 {
		dataStripes = 1
	}
	return Rates{
		HDD:         hdd,
		Integrity:   hdd / 2,
		ArrayWrite:  int64(dataStripes) * hdd / 2,
		PrefixRead:  int64(dataStripes) * hdd / 2,
		Network:     DefaultNetworkRate,
		Scrub:       DefaultScrubRate,
		ScrubBudget: DefaultScrubBudget,
	}
}

// Host is what a forecast needs to know of the arrays.
type Host struct {
	HDDs        int   // members of the raid5
	DataStripes int   // HDDs - 1
	ImageBytes  int64 // one raid image (the data on one HDD)
	Integrity   bool
	TablesBytes int64 // the table files to copy
	PrefixBytes int64 // the prefix store to extract
}

// Step is one forecast.
type Step struct {
	Name    string  `json:"name" yaml:"name"`
	What    string  `json:"what" yaml:"what"`
	Bytes   int64   `json:"bytes" yaml:"bytes"`
	Rate    int64   `json:"rate" yaml:"rate"`
	Seconds float64 `json:"seconds" yaml:"seconds"`
	Human   string  `json:"human" yaml:"human"`
	// Nights is set for the scrub: slices needed for one full pass.
	Nights int `json:"nights,omitempty" yaml:"nights,omitempty"`
	// Warning says when the step does not meet its target.
	Warning string `json:"warning,omitempty" yaml:"warning,omitempty"`
}

// Timeline is the forecast of every long step.
type Timeline struct {
	Rates              Rates   `json:"rates" yaml:"rates"`
	ScrubBudgetSeconds float64 `json:"scrub_budget_seconds" yaml:"scrub_budget_seconds"`
	Steps              []Step  `json:"steps" yaml:"steps"`
}

// Forecast computes the timeline of h at rates r.
func Forecast(h Host, r Rates) (Timeline, error) {
	if err := r.check(); err != nil {
		return Timeline{}, err
	}
	t := Timeline{Rates: r, ScrubBudgetSeconds: r.ScrubBudget.Seconds()}
	add := func(name, what string, bytes, rate int64) *Step {
		s := Step{Name: name, What: what, Bytes: bytes, Rate: rate}
		s.Seconds = float64(bytes) / float64(rate)
		s.Human = Human(s.Seconds)
		t.Steps = append(t.Steps, s)
		return &t.Steps[len(t.Steps)-1]
	}
	if h.HDDs > 0 && h.ImageBytes > 0 {
		add("initial-sync", fmt.Sprintf("initial RAID sync: every HDD end to end (%d in parallel, %s each)", h.HDDs, sizes.Format(h.ImageBytes)),
			h.ImageBytes, r.HDD)
		if h.Integrity {
			add("integrity-init", fmt.Sprintf("dm-integrity initialisation of the %d images (in parallel, alongside the sync)", h.HDDs),
				h.ImageBytes, r.Integrity)
		}
	}
	if h.TablesBytes > 0 {
		rate, by := r.Network, "the network"
		if r.ArrayWrite < rate {
			rate, by = r.ArrayWrite, "the array's write rate"
		}
		add("copy-tables", fmt.Sprintf("copy %s of tables (bound by %s)", sizes.Format(h.TablesBytes), by), h.TablesBytes, rate)
	}
	if h.PrefixBytes > 0 {
		add("prefix-extract", fmt.Sprintf("extract the %s prefix store from the tables array", sizes.Format(h.PrefixBytes)), h.PrefixBytes, r.PrefixRead)
	}
	if h.HDDs > 0 && h.ImageBytes > 0 && h.Integrity {
		total := int64(h.HDDs) * h.ImageBytes
		// the scrub reads every image at once, each from its own disk: it
		// goes no faster than the disks, whatever its cap
		rate, bound := r.Scrub, ""
		if disks := int64(h.HDDs) * r.HDD; disks < rate {
			rate, bound = disks, fmt.Sprintf(" (bound by the %d disks: the cap is %s/s)", h.HDDs, sizes.Format(r.Scrub))
		}
		s := add("scrub-pass", fmt.Sprintf("one integrity scrub pass over %d images (%s) at %s%s, %s a night",
			h.HDDs, sizes.Format(total), sizes.Format(rate)+"/s", bound, Human(r.ScrubBudget.Seconds())), total, rate)
		s.Nights = ScrubNights(total, rate, r.ScrubBudget)
		if s.Nights > TargetScrubNights {
			s.Warning = fmt.Sprintf("a full pass takes %d nights (target %d): raise the scrub rate or budget (health-check --set scrub_rate=... --set scrub_budget=...)", s.Nights, TargetScrubNights)
		}
	}
	if h.HDDs > 0 && h.ImageBytes > 0 {
		what := "rebuild onto a replaced HDD: one image written end to end"
		bytes, rate := h.ImageBytes, r.HDD
		secs := float64(bytes) / float64(rate)
		if h.Integrity {
			// lvm2 2.03.16 removes integrity before the repair and adds it
			// again afterwards: every image is re-initialised.
			what += ", then dm-integrity re-initialised on every image"
			secs += float64(h.ImageBytes) / float64(r.Integrity)
			// the time is the sum of the two; the rate shown is its
			// average, at least 1 B/s (truncated to 0 it made the time +Inf)
			rate = max(int64(float64(bytes)/secs), 1)
		}
		s := add("rebuild", what, bytes, rate)
		s.Seconds, s.Human = secs, Human(secs)
	}
	return t, nil
}

// ScrubNights is how many slices of budget at rate one pass over total
// bytes needs.
func ScrubNights(total, rate int64, budget time.Duration) int {
	if rate <= 0 || budget <= 0 {
		return math.MaxInt32
	}
	perNight := float64(rate) * budget.Seconds()
	return int(math.Ceil(float64(total) / perNight))
}

func (r Rates) check() error {
	for _, x := range []struct {
		name string
		v    int64
	}{{"hdd", r.HDD}, {"integrity", r.Integrity}, {"array write", r.ArrayWrite}, {"prefix read", r.PrefixRead}, {"network", r.Network}, {"scrub", r.Scrub}} {
		if x.v <= 0 {
			return fmt.Errorf("timeline: the %s rate must be above 0 (got %d)", x.name, x.v)
		}
	}
	if r.ScrubBudget <= 0 {
		return fmt.Errorf("timeline: the scrub budget must be above 0")
	}
	return nil
}

// Human prints seconds as "37m", "10.5h", "1.8 days".
func Human(s float64) string {
	switch {
	case s < 90:
		return fmt.Sprintf("%.0fs", s)
	case s < 90*60:
		return fmt.Sprintf("%.0fm", s/60)
	case s < 48*3600:
		return fmt.Sprintf("%.1fh", s/3600)
	}
	return fmt.Sprintf("%.1f days", s/86400)
}
