package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Run is the statistics of one configuration (probe) or one target (replay).
type Run struct {
	Name string `json:"name"`
	// Latency covers every measured request, failed ones included (a
	// timeout is what the user felt); Failures says how many failed.
	Latency        Latency          `json:"latency"`
	FailedLatency  *Latency         `json:"failed_latency,omitempty"`
	Requests       int64            `json:"requests"` // measured
	Warmup         int64            `json:"warmup"`   // issued but not measured
	Failures       int64            `json:"failures"`
	WarmupFailures int64            `json:"warmup_failures"`
	Statuses       map[string]int64 `json:"statuses,omitempty"` // HTTP status -> count ("no-answer": connection refused, timeout, ...)
	RequestsPerSec float64          `json:"requests_per_sec"`
	ElapsedSec     float64          `json:"elapsed_sec"`
	// probe runs only
	Probe             *ProbeConfig `json:"probe,omitempty"`
	ProbesPerRequest  float64      `json:"probes_per_request,omitempty"`
	ReadsPerProbe     float64      `json:"reads_per_probe,omitempty"`
	SlowReadsPerProbe float64      `json:"slow_reads_per_probe,omitempty"`
	Cache             *CachePrep   `json:"cache,omitempty"`
	// Disks: the physical reads of each disk under the tables during the
	// run (disks.go), when they could be measured.
	Disks []DiskIO `json:"disks,omitempty"`
	// replay runs only
	Target string `json:"target,omitempty"`

	StoppedEarly string `json:"stopped_early,omitempty"`
	FirstError   string `json:"first_error,omitempty"`
	// open loop (--rate, a timed log): requests sent late because every
	// client was busy (their latency counts from the intended time), and
	// requests never sent
	Late    int64 `json:"late"`
	Dropped int64 `json:"dropped"`

	hist *hdrhistogram.Histogram // all measured requests, for the ECDF
}

// newRun turns a driver result into a Run.
func newRun(name string, load Load, res *Result) Run {
	all := newHistogram()
	all.Merge(res.OK)
	all.Merge(res.Failed)
	r := Run{
		Name:           name,
		Latency:        summarize(all),
		Requests:       all.TotalCount(),
		Warmup:         min(load.Warmup, res.Issued),
		Failures:       res.Failures,
		WarmupFailures: res.WarmupFailures,
		RequestsPerSec: res.Rate(),
		ElapsedSec:     res.Elapsed.Seconds(),
		hist:           all,
	}
	if res.Failed.TotalCount() > 0 {
		fl := summarize(res.Failed)
		r.FailedLatency = &fl
	}
	if len(res.Statuses) > 0 {
		r.Statuses = map[string]int64{}
		for k, v := range res.Statuses {
			key := strconv.Itoa(k)
			if k == 0 {
				key = "no-answer"
			}
			r.Statuses[key] = v
		}
	}
	if res.Probes > 0 && r.Requests > 0 {
		r.ProbesPerRequest = float64(res.Probes) / float64(r.Requests)
		r.ReadsPerProbe = float64(res.Reads) / float64(res.Probes)
		r.SlowReadsPerProbe = float64(res.SlowReads) / float64(res.Probes)
	}
	if res.StoppedEarly != nil {
		r.StoppedEarly = res.StoppedEarly.Error()
	}
	r.FirstError = res.FirstError
	r.Late, r.Dropped = res.Late, res.Dropped
	return r
}

// ECDF returns the run's empirical CDF (milliseconds, without offset).
func (r *Run) ECDF() []ECDFPoint {
	if r.hist == nil {
		return nil
	}
	return ecdf(r.hist)
}

// Report is the output of bench probe or bench replay.
type Report struct {
	Command  string    `json:"command"` // probe or replay
	Started  time.Time `json:"started"`
	Clients  int       `json:"clients"`
	Rate     float64   `json:"rate_per_sec,omitempty"` // open loop; 0 = closed loop
	OffsetMs float64   `json:"offset_ms"`              // added to latencies in the plot only
	// probe only
	Tables  *TableInfo `json:"tables,omitempty"`
	Mix     *Mix       `json:"mix,omitempty"`
	Weight  *Weighting `json:"weight,omitempty"`
	Seed    uint64     `json:"seed,omitempty"`
	Runs    []Run      `json:"runs"`
	Notices []string   `json:"notices,omitempty"`
	Files   []string   `json:"files,omitempty"` // written under --out

	// Speed: a timed log replayed at its own pace times Speed (0: not timed).
	Speed float64 `json:"speed,omitempty"`
	// Gates: bench replay's cutover conditions (--gate), each checked on
	// every target it applies to; one failing makes the run exit 1.
	Gates []GateResult `json:"gates,omitempty"`
}

// Failed reports whether any run had failures, in its warm-up too, or
// stopped early: a warm-up request is not measured, but a target that
// fails it fails (docs/bench.md).
func (r *Report) Failed() bool {
	for _, run := range r.Runs {
		if run.Failures > 0 || run.WarmupFailures > 0 || run.StoppedEarly != "" {
			return true
		}
	}
	return false
}

// WriteTable prints the human summary: one line per configuration/target.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	probe := r.Command == "probe"
	head := "%s\trequests\tfailed\tmean\tp50\tp90\tp99\tp99.9\tmax\treq/s"
	first := "target"
	if probe {
		first = "configuration"
		head += "\treads/probe\tslow/probe"
	}
	fmt.Fprintf(tw, head+"\t\n", first)
	for _, run := range r.Runs {
		l := run.Latency
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f", run.Name, run.Requests, run.Failures,
			formatMs(l.Mean), formatMs(l.P50), formatMs(l.P90), formatMs(l.P99), formatMs(l.P999), formatMs(l.Max), run.RequestsPerSec)
		if probe {
			fmt.Fprintf(tw, "\t%.2f\t%.2f", run.ReadsPerProbe, run.SlowReadsPerProbe)
		}
		fmt.Fprint(tw, "\t\n")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	mode := "closed loop"
	switch {
	case r.Rate > 0:
		mode = fmt.Sprintf("open loop at %g req/s (latency from the intended send time)", r.Rate)
	case r.Speed > 0:
		mode = fmt.Sprintf("open loop at the log's own pace x%g (latency from the intended send time)", r.Speed)
	}
	fmt.Fprintf(w, "\n%d clients, %s; percentiles over measured requests (warm-up excluded), failed ones included.\n", r.Clients, mode)
	caches := map[string]bool{}
	for _, run := range r.Runs {
		if run.Cache != nil && !caches[run.Cache.Done] {
			caches[run.Cache.Done] = true
			fmt.Fprintf(w, "page cache before each configuration: %s\n", run.Cache.Done)
		}
	}
	for _, run := range r.Runs {
		var parts []string
		if run.Failures > 0 {
			what := statusList(run.Statuses)
			if run.Probe != nil {
				what = "" // reads, not HTTP answers ("no-answer"): the first error says what failed
			}
			if what == "" {
				what = run.FirstError
			}
			parts = append(parts, fmt.Sprintf("%d of %d measured requests FAILED (%s)", run.Failures, run.Requests, what))
			if run.FirstError != "" && what != run.FirstError {
				parts = append(parts, "first error: "+run.FirstError)
			}
		}
		if run.WarmupFailures > 0 {
			parts = append(parts, fmt.Sprintf("%d warm-up requests failed", run.WarmupFailures))
		}
		if run.StoppedEarly != "" {
			parts = append(parts, run.StoppedEarly)
		}
		if run.Late > 0 || run.Dropped > 0 {
			parts = append(parts, fmt.Sprintf("%d requests sent late (every client busy), %d never sent", run.Late, run.Dropped))
		}
		if run.Cache != nil && run.Cache.Notice != "" {
			parts = append(parts, "cache: "+run.Cache.Notice)
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "%s: %s\n", run.Name, strings.Join(parts, "; "))
		}
	}
	if err := r.WriteDisks(w); err != nil {
		return err
	}
	for _, gr := range r.Gates {
		verdict := "PASS"
		if !gr.Pass {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "gate %s %s\n", verdict, gr.Message)
	}
	for _, n := range r.Notices {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, f := range r.Files {
		fmt.Fprintf(w, "wrote %s\n", f)
	}
	return nil
}

func statusList(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// WriteFiles writes summary.json, ecdf.png and ecdf.svg into dir (created
// if needed) and records their paths in r.Files. latencies.csv and the
// failures file are written while the run goes (see Recorder).
func (r *Report) WriteFiles(dir string, offset time.Duration) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	r.OffsetMs = float64(offset) / 1e6
	// A file that cannot be written whole (a full disk) is removed, not
	// left half-written, and the others are still written. summary.json,
	// the measurement itself, goes first, so that the plots cannot take
	// the room it needs; it lists the plots it expects, and is written
	// again (smaller, in the room it had) without those the disk could not
	// hold: the report lists what is there.
	summary := filepath.Join(dir, "summary.json")
	plots := []string{filepath.Join(dir, "ecdf.png"), filepath.Join(dir, "ecdf.svg")}
	written := slices.Clone(r.Files)
	planned := append(append(slices.Clone(written), plots...), summary)
	var errs []error
	summaryErr := r.writeSummary(summary, planned)
	for _, p := range plots {
		if err := plotECDF(p, r, offset); err != nil {
			os.Remove(p)
			errs = append(errs, err)
			continue
		}
		written = append(written, p)
	}
	if summaryErr == nil {
		written = append(written, summary)
		if len(written) < len(planned) {
			summaryErr = r.writeSummary(summary, written)
		}
	}
	r.Files = written
	if summaryErr != nil {
		r.Files = slices.DeleteFunc(r.Files, func(f string) bool { return f == summary })
		errs = append(errs, fmt.Errorf("summary: %w", summaryErr))
	}
	return errors.Join(errs...)
}

// writeSummary writes r, listing files, to path as indented JSON; a
// summary that cannot be written whole is removed.
func (r *Report) writeSummary(path string, files []string) error {
	r.Files = files
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		os.Remove(path)
		return err
	}
	return nil
}
