package monitor

import (
	"context"
	"time"

	"github.com/tbhost/tbhost/internal/clock"
	"github.com/tbhost/tbhost/internal/diskstats"
)

// The sampler is internal/diskstats (shared with the scrub's backoff); the
// names below keep monitor's API as it was.

// Sample is one reading of /proc/diskstats.
type Sample = diskstats.Sample

// Source produces samples; io.EOF means no more samples.
type Source = diskstats.Source

// Clock tells the time and waits; tests inject one that never sleeps.
type Clock = clock.Clock

// RealClock is the wall clock.
type RealClock = clock.Real

// ProcSource reads ROOT/proc/diskstats (bounded, validated).
type ProcSource = diskstats.ProcSource

// ReplaySource replays ROOT/proc/diskstats.0, .1, ...
type ReplaySource = diskstats.ReplaySource

// SliceSource replays samples given in memory (tests, benchmarks).
type SliceSource = diskstats.SliceSource

// NewProcSource reads diskstats under root ("/" for this host).
func NewProcSource(root string, c Clock) (*ProcSource, error) {
	return diskstats.NewProcSource(root, c)
}

// NewReplaySource finds root/proc/diskstats.N (or root/proc/diskstats).
func NewReplaySource(root string, start time.Time, interval time.Duration) (*ReplaySource, bool) {
	return diskstats.NewReplaySource(root, start, interval)
}

// Collect takes n+1 samples, interval apart (see diskstats.Collect).
func Collect(ctx context.Context, src Source, c Clock, interval time.Duration, n int) ([]Sample, error) {
	return diskstats.Collect(ctx, src, c, interval, n)
}
