// Package clock is time as tbhost's long-running loops see it (scrub,
// monitor sampling, sync waits, playbook retries): code takes a Clock so
// tests inject a fake one that never sleeps.
package clock

import (
	"context"
	"time"
)

// Clock tells the time and waits.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx is done (then it returns ctx.Err()).
	Sleep(ctx context.Context, d time.Duration) error
}

// Real is the wall clock.
type Real struct{}

// Now implements Clock.
func (Real) Now() time.Time { return time.Now() }

// Sleep implements Clock.
func (Real) Sleep(ctx context.Context, d time.Duration) error { return Sleep(ctx, d) }

// Sleep waits d, or until ctx is done, whichever comes first; it returns
// ctx.Err() in the second case. A d <= 0 does not wait.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
