package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleepReturnsEarlyOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if time.Since(start) > time.Minute {
		t.Error("Sleep waited despite a cancelled context")
	}
}

func TestSleepWaits(t *testing.T) {
	start := time.Now()
	if err := (Real{}).Sleep(context.Background(), 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < 20*time.Millisecond {
		t.Error("Sleep returned before d")
	}
}
