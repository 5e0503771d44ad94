package bench

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Issue 18: with the default 30 ms offset, replay latencies of 0.2-2 ms sat
// between the ticks 30 and 50 on an axis padded to 27-35 ms: the comparison
// could not be read. The axis now follows the curves' spread and a narrow
// range gets its own labelled ticks.
func TestPlotAxisKeepsAnOffsetComparisonReadable(t *testing.T) {
	dlo, dhi := 30.2, 32.0 // 0.2 to 2 ms plus 30 ms
	lo, hi := latencyRange(dlo, dhi)
	if share := math.Log(dhi/dlo) / math.Log(hi/lo); share < 0.8 {
		t.Errorf("axis %.2f-%.2f ms: the curves fill %.0f %% of it, want >= 80 %%", lo, hi, 100*share)
	}
	inside := 0
	for _, tk := range (logTicks{}).Ticks(lo, hi) {
		if tk.Label != "" && tk.Value >= dlo && tk.Value <= dhi {
			inside++
		}
	}
	if inside < 3 {
		t.Errorf("%d labelled ticks between %.1f and %.1f ms, want >= 3", inside, dlo, dhi)
	}
	// A wide range keeps its 1-2-5 decades.
	var labels []string
	for _, tk := range (logTicks{}).Ticks(0.01, 100) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "0.01 0.02 0.05 0.1 0.2 0.5 1 2 5 10 20 50 100" {
		t.Errorf("wide-range labels %q", got)
	}
}

// Issue 18: the ECDF alone cannot show p99 and p99.9 (they are the last
// pixel below 1). The plot has a tail view, 1-F on a log axis, with the
// percentiles marked where they are read.
func TestPlotHasTheTailView(t *testing.T) {
	h := hdrhistogram.New(histLowest, histHighest, histDigits)
	for i := 0; i < 100000; i++ {
		v := time.Duration(200+i%1000) * time.Microsecond
		if i%1000 == 0 {
			v = 40 * time.Millisecond // the 0.1 % tail
		}
		recordLatency(h, v)
	}
	rep := &Report{Command: "replay", Runs: []Run{{Name: "target-a", Requests: h.TotalCount(), hist: h}}}
	dir := t.TempDir()
	path := filepath.Join(dir, "ecdf.svg")
	if err := plotECDF(path, rep, 30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1 - F (log scale)", "0.01 (p99)", "0.001 (p99.9)", "1e-4 (p99.99)", "fraction of requests at most x"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("ecdf.svg lacks %q", want)
		}
	}
	if err := plotECDF(filepath.Join(dir, "ecdf.png"), rep, 0); err != nil {
		t.Fatal(err)
	}
}
