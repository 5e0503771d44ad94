package integrity

import (
	"fmt"
	"path/filepath"
	"time"
)

// The scrub policy's defaults (what `tbhost integrity scrub` uses when a
// flag is not given).
const (
	// DefaultScrubRate is the total read rate over all images: well under
	// one HDD's sequential rate, so the foreground keeps most of the disks.
	DefaultScrubRate = 100 << 20
	// DefaultScrubChunk is the bytes per read: large sequential O_DIRECT
	// reads, so a 7200 rpm disk streams instead of seeking.
	DefaultScrubChunk = 4 << 20
	// MinScrubChunk is the smallest chunk accepted; every chunk is a
	// multiple of 4 KiB (O_DIRECT alignment).
	MinScrubChunk = 64 << 10
	// AllImages (Parallel 0) reads every image at once, up to
	// MaxScrubParallel: each image sits on its own disk.
	AllImages        = 0
	MaxScrubParallel = 64
	// DefaultStateDir holds the scrub's checkpoint files.
	DefaultStateDir = "/var/lib/tbhost"
	// MinBackoffRate is the lowest floor of the backoff.
	MinBackoffRate = 1 << 20
)

// ScrubPolicy is how gently, how long and from where a scrub of one LV
// reads: everything `tbhost integrity scrub` takes from its flags. A zero
// field means its default (the constants above), except Rate: 0 is
// unthrottled, and the command's --rate defaults to DefaultScrubRate.
// Options checks the policy and turns it into the ScrubOptions the read
// loop runs with.
type ScrubPolicy struct {
	// Rate caps the total read rate over all images in bytes/s; 0 reads
	// unthrottled, and then there is no backoff either.
	Rate int64
	// Chunk is the bytes per read (default DefaultScrubChunk): a multiple of
	// 4 KiB, at least MinScrubChunk.
	Chunk int64
	// Parallel is the number of images read at once; AllImages (0) reads
	// them all.
	Parallel int
	// MaxAwait is the r_await above which the scrub backs off (default
	// DefaultMaxAwait; see BackoffRule).
	MaxAwait time.Duration
	// MinRate is the backoff's floor; 0 is BackoffFloor(Rate).
	MinRate int64
	// Deadline stops the run (zero: none); the next run resumes.
	Deadline time.Time
	// Slice is the time a run gets, for the forecast's nights (--budget,
	// or the time to --until when the command started); 0 is the time from
	// the scrub's start to Deadline.
	Slice time.Duration
	// StatePath is the checkpoint file; "" is DefaultStatePath(vg, lv).
	StatePath string
	// Direct reads with O_DIRECT (falls back to buffered reads, with a
	// note, where the kernel refuses it).
	Direct bool
}

// DefaultStatePath is where the scrub of vg/lv keeps its checkpoint unless
// told otherwise: /var/lib/tbhost/scrub-<vg>-<lv>.json. Other tools (the
// monitor) read it there to learn which disks a running scrub reads.
func DefaultStatePath(vg, lv string) string {
	return filepath.Join(DefaultStateDir, fmt.Sprintf("scrub-%s-%s.json", vg, lv))
}

// BackoffFloor is the rate the backoff never goes below: a sixteenth of the
// cap, at least MinBackoffRate (1 MiB/s).
func BackoffFloor(rate int64) int64 {
	return max(rate/16, MinBackoffRate)
}

// PolicyError is a policy field with a value the scrub cannot use; Field
// is the name `tbhost integrity scrub` gives it as a flag.
type PolicyError struct {
	Field string
	Want  string
}

func (e *PolicyError) Error() string { return e.Field + ": " + e.Want }

// Validate says whether the scrub can run with p.
func (p ScrubPolicy) Validate() error {
	switch {
	case p.Rate < 0:
		return &PolicyError{"rate", "want 0 (unthrottled) or a positive rate, e.g. 100MiB/s"}
	case p.Chunk != 0 && (p.Chunk < MinScrubChunk || p.Chunk%4096 != 0):
		return &PolicyError{"chunk", "want a multiple of 4KiB, at least 64KiB (e.g. 4MiB)"}
	case p.Parallel < 0:
		return &PolicyError{"parallel", "want 0 (all images) or a positive number of images"}
	case p.Slice < 0:
		return &PolicyError{"budget", "want a positive duration, e.g. 2h"}
	case p.MinRate < 0:
		return &PolicyError{"min-rate", "want 0 (the default floor) or a positive rate"}
	}
	return nil
}

// Options checks p and returns the read loop's options for vg/lv, every
// default filled in. Targets, Identity, BlockSize, Stats and Events are
// the caller's (ScrubLV fills the first four from the LV).
func (p ScrubPolicy) Options(vg, lv string) (ScrubOptions, error) {
	if err := p.Validate(); err != nil {
		return ScrubOptions{}, err
	}
	o := ScrubOptions{Rate: p.Rate, Chunk: p.Chunk, Parallel: p.Parallel, Deadline: p.Deadline, Slice: p.Slice, StatePath: p.StatePath, Direct: p.Direct}
	if o.Chunk == 0 {
		o.Chunk = DefaultScrubChunk
	}
	if o.Parallel == AllImages {
		o.Parallel = MaxScrubParallel
	}
	if o.StatePath == "" {
		o.StatePath = DefaultStatePath(vg, lv)
	}
	o.Backoff = BackoffRule{MaxAwait: p.MaxAwait, MinRate: p.MinRate, MaxRate: p.Rate}
	if o.Backoff.MaxAwait <= 0 {
		o.Backoff.MaxAwait = DefaultMaxAwait
	}
	if o.Backoff.MinRate == 0 {
		o.Backoff.MinRate = BackoffFloor(p.Rate)
	}
	return o, nil
}
