package labrates

import (
	"math"
	"strings"
	"testing"
)

// /proc/stat's first line twice: 100 ticks passed, 30 idle and 10 iowait:
// busy 60 %; guest time (already in user) is not counted twice.
func TestCPUBusy(t *testing.T) {
	got, err := CPUBusy("cpu 100 0 50 1000 20 0 5 0 0 0", "cpu 140 0 65 1030 30 0 10 0 40 0")
	if err != nil || math.Abs(got-0.6) > 1e-9 {
		t.Errorf("CPUBusy = %v, %v; want 0.6", got, err)
	}
	for _, bad := range [][2]string{
		{"cpu0 1 2 3 4 5", "cpu0 1 2 3 4 5"},
		{"cpu 1 2 3 4 5", "cpu 1 2 3 4 5"},       // nothing passed
		{"cpu 5 5 5 5 5 5", "cpu 1 1 1 1 1 1"},   // backwards
		{"cpu 1 2 3 4 5 6", "cpu 1 2 3 4 5 6 7"}, // other fields
		{"cpu 1 2 x 4 5 6", "cpu 1 2 3 4 5 6"},   // no number
		{"intr 1 2 3 4 5 6", "intr 1 2 3 4 5 6"}, // another line
		{"cpu -1 2 3 4 5 6", "cpu 1 2 3 4 5 6"},  // negative
		{"", ""},
	} {
		if v, err := CPUBusy(bad[0], bad[1]); err == nil {
			t.Errorf("CPUBusy(%q, %q) = %v, want an error", bad[0], bad[1], v)
		}
	}
}

// FuzzCPUBusy: whatever the two lines, no panic, and a result is a
// fraction in [0, 1] that only "cpu" lines give.
func FuzzCPUBusy(f *testing.F) {
	f.Add("cpu 100 0 50 1000 20 0 5 0 0 0", "cpu 140 0 65 1030 30 0 10 0 40 0")
	f.Add("cpu 1 2 3 4 5", "cpu 1 2 3 4 6")
	f.Add("cpu 18446744073709551615 0 0 0 0", "cpu 18446744073709551615 0 0 1 0")
	f.Fuzz(func(t *testing.T, a, b string) {
		v, err := CPUBusy(a, b)
		if err != nil {
			return
		}
		if !(v >= 0 && v <= 1) {
			t.Fatalf("CPUBusy(%q, %q) = %v, outside [0, 1]", a, b, v)
		}
		if !strings.HasPrefix(strings.TrimSpace(a), "cpu") || !strings.HasPrefix(strings.TrimSpace(b), "cpu") {
			t.Fatalf("a result from non-cpu lines %q, %q", a, b)
		}
	})
}
