package integrity

import (
	"errors"
	"testing"
	"time"
)

// The policy owns the scrub's defaults: what the command used to fill in
// itself (state path, all images at once, the backoff floor).
func TestScrubPolicyDefaults(t *testing.T) {
	o, err := ScrubPolicy{Rate: 100 << 20}.Options("vg-hdd", "tables")
	if err != nil {
		t.Fatal(err)
	}
	if o.StatePath != "/var/lib/tbhost/scrub-vg-hdd-tables.json" || o.Chunk != 4<<20 || o.Parallel != MaxScrubParallel {
		t.Fatalf("%+v", o)
	}
	// the floor: a sixteenth of the rate (6.25 MiB/s), at least 1 MiB/s
	if b := o.Backoff; b.MaxAwait != 60*time.Millisecond || b.MinRate != 100<<20/16 || b.MaxRate != 100<<20 {
		t.Fatalf("backoff %+v", b)
	}
	if f := BackoffFloor(8 << 20); f != 1<<20 {
		t.Fatalf("floor of 8 MiB/s: %d, want 1 MiB/s", f)
	}
	o, err = ScrubPolicy{Rate: 0, Chunk: 1 << 20, Parallel: 2, MaxAwait: time.Second, MinRate: 5 << 20, StatePath: "/tmp/s.json"}.Options("a", "b")
	if err != nil || o.Rate != 0 || o.Chunk != 1<<20 || o.Parallel != 2 || o.StatePath != "/tmp/s.json" || o.Backoff.MaxAwait != time.Second || o.Backoff.MinRate != 5<<20 {
		t.Fatalf("given values must be kept: %+v %v", o, err)
	}
}

func TestScrubPolicyRefuses(t *testing.T) {
	for field, p := range map[string]ScrubPolicy{
		"rate":     {Rate: -1},
		"chunk":    {Chunk: 64<<10 + 512},
		"parallel": {Parallel: -2},
		"min-rate": {MinRate: -1},
	} {
		_, err := p.Options("vg", "lv")
		var pe *PolicyError
		if !errors.As(err, &pe) || pe.Field != field {
			t.Errorf("%+v: %v, want a PolicyError on %s", p, err, field)
		}
	}
	for _, c := range []int64{32 << 10, 1<<20 + 1} {
		if err := (ScrubPolicy{Chunk: c}).Validate(); err == nil {
			t.Errorf("chunk %d accepted", c)
		}
	}
}
