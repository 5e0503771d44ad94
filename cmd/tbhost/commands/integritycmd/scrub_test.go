package integritycmd

import (
	"testing"
	"time"
)

func TestUntilTimeIsTheNextOccurrence(t *testing.T) {
	loc := time.FixedZone("X", 3600)
	now := time.Date(2026, 11, 30, 23, 10, 0, 0, loc)
	got, err := untilTime("06:00", now)
	if err != nil || !got.Equal(time.Date(2026, 12, 1, 6, 0, 0, 0, loc)) {
		t.Fatalf("23:10 -> 06:00: %v %v", got, err)
	}
	now = time.Date(2026, 11, 30, 1, 0, 0, 0, loc)
	if got, _ := untilTime("06:00", now); !got.Equal(time.Date(2026, 11, 30, 6, 0, 0, 0, loc)) {
		t.Fatalf("01:00 -> 06:00 the same day: %v", got)
	}
	if got, _ := untilTime("01:00", now); got.Sub(now) != 24*time.Hour {
		t.Fatalf("now exactly: tomorrow, got %v", got)
	}
	if got, err := untilTime("2026-12-01T05:00:00Z", now); err != nil || got.Hour() != 5 {
		t.Fatalf("RFC 3339: %v %v", got, err)
	}
	for _, bad := range []string{"6", "25:00", "tomorrow"} {
		if _, err := untilTime(bad, now); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
