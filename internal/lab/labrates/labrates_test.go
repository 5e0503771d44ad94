package labrates

import (
	"math"
	"testing"
)

// A lab boot by hand: 6 x 256 MiB HDDs, images of 60 extents of 4 MiB
// (251,658,240 bytes), the raw disk read 64 MiB in 0.5 s = 128 MiB/s.
// The model (timeline.FromHDDRate) then predicts:
//
//	sync + integrity init: the image at 64 MiB/s (integrity, the slower) = 240/64 = 3.75 s
//	uncapped scrub: 6 images at 6 x 128 MiB/s = 1.875 s for 1,440 MiB
//	extract: 36 MiB at 5 x 128 / 2 = 320 MiB/s = 0.1125 s
var byHand = Measured{HDDs: 6, DataStripes: 5, ImageBytes: 251_658_240,
	RawBytes: 64 << 20, RawReadSeconds: 0.5, RawWriteSeconds: 0.6,
	SyncSeconds: 5, ScrubBytes: 6 * 251_658_240, ScrubSeconds: 3, ExtractBytes: 36 << 20, ExtractSeconds: 0.2}

func TestCompareByHand(t *testing.T) {
	r, err := Compare(byHand)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"initial-sync": 3.75, "scrub-pass": 1.875, "prefix-extract": 0.1125}
	if r.HDDRate != 128<<20 || len(r.Comparisons) != 3 {
		t.Fatalf("%+v", r)
	}
	for _, c := range r.Comparisons {
		if math.Abs(c.PredictedSeconds-want[c.Name]) > 1e-6 {
			t.Errorf("%s: predicted %.4f s, want %.4f", c.Name, c.PredictedSeconds, want[c.Name])
		}
		if c.Ratio != c.PredictedSeconds/c.MeasuredSeconds || !c.Within {
			t.Errorf("%s: ratio %.3f within %v", c.Name, c.Ratio, c.Within)
		}
	}
	if !r.OK {
		t.Error("all within 2x, yet not OK")
	}
	// 3.75 s predicted, 7.6 s measured: ratio 0.49, outside 2x
	slow := byHand
	slow.SyncSeconds = 7.6
	if r, _ := Compare(slow); r.OK || r.Comparisons[0].Within {
		t.Errorf("a sync 2.03x slower than predicted passed: %+v", r.Comparisons[0])
	}
	fast := byHand
	fast.ExtractSeconds = 0.05 // predicted 0.1125: 2.25x pessimistic
	if r, _ := Compare(fast); r.OK || r.Comparisons[2].Within {
		t.Errorf("an extract 2.25x faster than predicted passed: %+v", r.Comparisons[2])
	}
}

func TestCompareRefusesMissingMeasurements(t *testing.T) {
	for name, edit := range map[string]func(*Measured){
		"no raw time":       func(m *Measured) { m.RawReadSeconds = 0 },
		"no sync":           func(m *Measured) { m.SyncSeconds = 0 },
		"negative scrub":    func(m *Measured) { m.ScrubSeconds = -1 },
		"NaN extract":       func(m *Measured) { m.ExtractSeconds = math.NaN() },
		"two HDDs":          func(m *Measured) { m.HDDs, m.DataStripes = 2, 1 },
		"stripes mismatch":  func(m *Measured) { m.DataStripes = 6 },
		"no extract bytes":  func(m *Measured) { m.ExtractBytes = 0 },
		"infinite raw time": func(m *Measured) { m.RawReadSeconds = math.Inf(1) },
	} {
		m := byHand
		edit(&m)
		if _, err := Compare(m); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
