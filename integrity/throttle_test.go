package integrity

import (
	"context"
	"math"
	"testing"
	"time"
)

func TestThrottleHoldsRateOnFakeClock(t *testing.T) {
	clk := newFakeClock()
	const rate = 100 << 20 // 100 MiB/s
	th := NewThrottle(rate, clk)
	start := clk.Now()
	var moved int64
	for i := 0; i < 250; i++ { // 1000 MiB in 4 MiB chunks
		if err := th.Wait(context.Background(), 4<<20); err != nil {
			t.Fatal(err)
		}
		moved += 4 << 20
	}
	secs := clk.Now().Sub(start).Seconds()
	got := float64(moved) / secs
	if math.Abs(got/rate-1) > 0.01 {
		t.Fatalf("achieved %.1f MiB/s over %.2fs, want 100 MiB/s +-1%%", got/(1<<20), secs)
	}
}

func TestThrottleStartsEmptyAndChangesRate(t *testing.T) {
	clk := newFakeClock()
	th := NewThrottle(10<<20, clk)
	// The very first 10 MiB already cost about a second: no initial burst.
	th.Wait(context.Background(), 10<<20)
	if d := clk.slept; d < 900*time.Millisecond {
		t.Fatalf("first 10 MiB at 10 MiB/s slept %v: the bucket started full", d)
	}
	th.SetRate(1 << 20)
	before := clk.Now()
	th.Wait(context.Background(), 2<<20)
	if d := clk.Now().Sub(before); d < 1900*time.Millisecond {
		t.Fatalf("2 MiB at 1 MiB/s took %v", d)
	}
	th.SetRate(0)
	before = clk.Now()
	th.Wait(context.Background(), 1<<30)
	if clk.Now() != before {
		t.Fatal("rate 0 must not throttle")
	}
}

func TestThrottleStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	th := NewThrottle(1, RealClock{})
	if err := th.Wait(ctx, 1<<20); err == nil {
		t.Fatal("want the context's error")
	}
}

func TestThrottleWaitUntilRefusesPastDeadline(t *testing.T) {
	clk := newFakeClock()
	th := NewThrottle(1<<20, clk)
	dl := clk.Now().Add(2500 * time.Millisecond)
	n := 0
	for th.WaitUntil(context.Background(), 1<<20, dl) == nil {
		n++
	}
	if n != 2 || clk.Now().After(dl) {
		t.Fatalf("%d MiB before a 2.5 s deadline at 1 MiB/s, clock %v past it", n, clk.Now().Sub(dl))
	}
	// the refused reservation was returned: after the deadline the bucket is not in debt
	th2 := NewThrottle(1<<20, clk)
	th2.WaitUntil(context.Background(), 5<<20, clk.Now().Add(time.Second))
	before := clk.Now()
	th2.Wait(context.Background(), 1<<20)
	if d := clk.Now().Sub(before); d > 1100*time.Millisecond {
		t.Fatalf("a cancelled reservation still cost %v", d)
	}
}
