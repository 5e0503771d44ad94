package integrity

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/tbhost/tbhost/internal/clock"
	"golang.org/x/time/rate"
)

// Clock is time as the throttle and the scrub see it; tests pass a fake one.
type Clock = clock.Clock

// RealClock is the wall clock.
type RealClock = clock.Real

// Throttle limits a byte rate with a token bucket (golang.org/x/time/rate)
// that starts empty, so the achieved rate over any run never exceeds the
// limit by more than one burst. Several goroutines may share one Throttle:
// the limit is their total. A zero limit means unthrottled. The rate can be
// changed while running (the scrub's backoff does).
type Throttle struct {
	mu    sync.Mutex
	clock Clock
	lim   *rate.Limiter // nil: unthrottled
	burst int
	bps   int64
}

// NewThrottle returns a throttle at bytesPerSec (0: unthrottled).
func NewThrottle(bytesPerSec int64, clock Clock) *Throttle {
	if clock == nil {
		clock = RealClock{}
	}
	t := &Throttle{clock: clock}
	t.SetRate(bytesPerSec)
	return t
}

// burstFor is a tenth of a second's worth of bytes, at least 64 KiB.
func burstFor(bps int64) int {
	b := bps / 10
	if b < 64<<10 {
		b = 64 << 10
	}
	if b > 1<<30 {
		b = 1 << 30
	}
	return int(b)
}

// SetRate changes the limit (0: unthrottled) from now on.
func (t *Throttle) SetRate(bytesPerSec int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.bps = bytesPerSec
	if bytesPerSec <= 0 {
		t.lim = nil
		return
	}
	now := t.clock.Now()
	if t.lim == nil {
		t.burst = burstFor(bytesPerSec)
		t.lim = rate.NewLimiter(rate.Limit(bytesPerSec), t.burst)
		t.lim.ReserveN(now, t.burst) // start with an empty bucket
		return
	}
	t.lim.SetLimitAt(now, rate.Limit(bytesPerSec))
}

// Rate is the current limit in bytes per second (0: unthrottled).
func (t *Throttle) Rate() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bps
}

// ErrPastDeadline is returned by WaitUntil when the bytes could only be
// transferred after the deadline.
var ErrPastDeadline = errors.New("the rate limit reaches past the deadline")

// Wait blocks until n more bytes may be transferred.
func (t *Throttle) Wait(ctx context.Context, n int64) error {
	return t.WaitUntil(ctx, n, time.Time{})
}

// WaitUntil is Wait that gives up (without using the budget) when the wait
// would end after deadline; a zero deadline means none.
func (t *Throttle) WaitUntil(ctx context.Context, n int64, deadline time.Time) error {
	for n > 0 {
		t.mu.Lock()
		if t.lim == nil {
			t.mu.Unlock()
			return ctx.Err()
		}
		step := int64(t.burst)
		if n < step {
			step = n
		}
		now := t.clock.Now()
		r := t.lim.ReserveN(now, int(step))
		delay := r.DelayFrom(now)
		if !deadline.IsZero() && now.Add(delay).After(deadline) {
			r.CancelAt(now)
			t.mu.Unlock()
			return ErrPastDeadline
		}
		t.mu.Unlock()
		if err := t.clock.Sleep(ctx, delay); err != nil {
			return err
		}
		n -= step
	}
	return ctx.Err()
}
