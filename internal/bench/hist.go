// Package bench measures what tablebase users feel: the latency tail of
// probe-shaped reads from the table files (bench probe) and of HTTP requests
// replayed from a log (bench replay). Latencies go into HDR histograms, one
// per client, merged at the end; output is a summary table, JSON, CSV and
// an ECDF plot with a log latency axis.
package bench

import (
	"fmt"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds: 1 ns to 1 hour at 3 significant digits (0.1 % error).
const (
	histLowest  = 1
	histHighest = int64(time.Hour)
	histDigits  = 3
)

// newHistogram returns an empty latency histogram in nanoseconds.
func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowest, histHighest, histDigits)
}

// recordLatency adds d to h, clamped to the histogram's range so an
// hour-long stall is still counted (as one hour) rather than dropped.
func recordLatency(h *hdrhistogram.Histogram, d time.Duration) {
	v := int64(d)
	if v < histLowest {
		v = histLowest
	}
	if v > histHighest {
		v = histHighest
	}
	_ = h.RecordValue(v) // cannot fail inside the clamped range
}

// Latency is a summary of a latency distribution, in milliseconds in JSON.
type Latency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p99_9_ms"`
	Max   float64 `json:"max_ms"`
}

func nsToMs(v float64) float64 { return v / 1e6 }

// summarize reads the percentiles of h.
func summarize(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	q := h.ValueAtPercentiles([]float64{50, 90, 99, 99.9})
	return Latency{
		Count: h.TotalCount(),
		Mean:  nsToMs(h.Mean()),
		P50:   nsToMs(float64(q[50])),
		P90:   nsToMs(float64(q[90])),
		P99:   nsToMs(float64(q[99])),
		P999:  nsToMs(float64(q[99.9])),
		Max:   nsToMs(float64(h.Max())),
	}
}

// ECDFPoint is one step of an empirical CDF: Fraction of the samples took
// at most Ms milliseconds.
type ECDFPoint struct {
	Ms       float64 `json:"ms"`
	Fraction float64 `json:"fraction"`
}

// ecdf turns h into ECDF steps (one per non-empty histogram bucket).
func ecdf(h *hdrhistogram.Histogram) []ECDFPoint {
	total := h.TotalCount()
	if total == 0 {
		return nil
	}
	var pts []ECDFPoint
	var cum int64
	for _, b := range h.Distribution() {
		if b.Count == 0 {
			continue
		}
		cum += b.Count
		pts = append(pts, ECDFPoint{Ms: nsToMs(float64(b.To)), Fraction: float64(cum) / float64(total)})
	}
	return pts
}

// formatMs prints a latency in milliseconds with a unit a human reads at a
// glance: 850ns, 12.3µs, 4.56ms, 1.23s.
func formatMs(ms float64) string {
	switch {
	case ms == 0:
		return "0"
	case ms < 0.001:
		return fmt.Sprintf("%.0fns", ms*1e6)
	case ms < 1:
		return fmt.Sprintf("%.3gµs", ms*1e3)
	case ms < 1000:
		return fmt.Sprintf("%.3gms", ms)
	default:
		return fmt.Sprintf("%.3gs", ms/1e3)
	}
}
