package monitor

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Exporter samples in the background and serves the latest state as
// Prometheus metrics: per-member read counters labelled by array, image and
// disk, the skew ratio per member, and array health.
type Exporter struct {
	Env           Env
	Names         []string
	Interval      time.Duration // between samples (the skew ratio is over one interval)
	TopologyEvery time.Duration // re-discover arrays (LVM calls) this often
	Thresholds    Thresholds
	// ScrubStates: as CheckOptions.ScrubStates (re-read every Step).
	ScrubStates []string
	Log         *slog.Logger
	// Clock paces the sampling (nil: the wall clock). A replayed snapshot is
	// served at this pace too, and its last sample stays served after the end.
	Clock Clock

	mu          sync.Mutex
	src         Source
	clock       Clock
	topo        Topology
	topoAt      time.Time
	prev, last  Sample
	samples     int
	report      Report
	errors      float64
	lastErr     string
	descs       exporterDescs
	initialised bool
}

type exporterDescs struct {
	reads, bytes, readTime, ioTime, skew, missing            *prometheus.Desc
	readAwait, awaitRatio, slow                              *prometheus.Desc
	status, degraded, syncing, syncProgress, images          *prometheus.Desc
	mismatches, memberMismatches, problems, lastSample, errs *prometheus.Desc
	arrays                                                   *prometheus.Desc
}

func newDescs() exporterDescs {
	m := []string{"array", "image", "disk", "id"}
	return exporterDescs{
		reads:            prometheus.NewDesc("tbhost_array_member_reads_total", "Reads completed by the member disk (from /proc/diskstats).", m, nil),
		bytes:            prometheus.NewDesc("tbhost_array_member_read_bytes_total", "Bytes read by the member disk (sectors read x 512).", m, nil),
		readTime:         prometheus.NewDesc("tbhost_array_member_read_time_seconds_total", "Time spent on reads by the member disk (read ticks).", m, nil),
		ioTime:           prometheus.NewDesc("tbhost_array_member_io_time_seconds_total", "Time the member disk was busy (io ticks; rate() is %util/100).", m, nil),
		skew:             prometheus.NewDesc("tbhost_array_member_skew_ratio", "Member reads/s over the members' mean in the last interval (1 = balanced, 0 = idle); only when the array read enough to judge.", m, nil),
		readAwait:        prometheus.NewDesc("tbhost_array_member_read_await_seconds", "Mean time per read of the member disk in the last interval (iostat r_await); only when it read.", m, nil),
		awaitRatio:       prometheus.NewDesc("tbhost_array_member_read_await_ratio", "The member's r_await over its siblings' median in the last interval (1 = like its siblings); only when it read at least --slow-min-iops reads/s.", m, nil),
		slow:             prometheus.NewDesc("tbhost_array_member_slow", "The member's fail-slow verdict on the last interval: 0 not slow, 1 WARNING, 2 CRITICAL (r_await over --slow-factor / --slow-critical-factor times its siblings').", m, nil),
		missing:          prometheus.NewDesc("tbhost_array_member_missing", "1 for an image of the array whose disk is missing.", []string{"array", "image"}, nil),
		status:           prometheus.NewDesc("tbhost_array_status", "Verdict on the last interval: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.", []string{"array"}, nil),
		degraded:         prometheus.NewDesc("tbhost_array_degraded", "1 when the array runs without a member (missing PV, partial LV, md degraded).", []string{"array"}, nil),
		syncing:          prometheus.NewDesc("tbhost_array_syncing", "1 while a resync/recovery runs.", []string{"array"}, nil),
		syncProgress:     prometheus.NewDesc("tbhost_array_sync_progress_ratio", "Progress of the running sync or check, 0..1.", []string{"array", "action"}, nil),
		images:           prometheus.NewDesc("tbhost_array_images", "Images (legs) of the array, parity included.", []string{"array"}, nil),
		mismatches:       prometheus.NewDesc("tbhost_array_integrity_mismatches", "dm-integrity checksum mismatches of the array (LVM integritymismatches).", []string{"array"}, nil),
		memberMismatches: prometheus.NewDesc("tbhost_array_member_integrity_mismatches", "dm-integrity checksum mismatches of the member's image(s).", m, nil),
		problems:         prometheus.NewDesc("tbhost_array_problems", "Findings on the array by severity (health, topology, skew of the last interval).", []string{"array", "severity"}, nil),
		lastSample:       prometheus.NewDesc("tbhost_monitor_last_sample_timestamp_seconds", "When the exporter last read /proc/diskstats (Unix time).", nil, nil),
		errs:             prometheus.NewDesc("tbhost_monitor_errors_total", "Failed samples or topology refreshes.", nil, nil),
		arrays:           prometheus.NewDesc("tbhost_monitor_arrays", "Arrays the exporter watches (0: none found, and the log says so).", nil, nil),
	}
}

func (e *Exporter) init() error {
	if e.initialised {
		return nil
	}
	src, _, _, err := e.Env.Source(e.Interval)
	if err != nil {
		return err
	}
	e.clock = e.Clock
	if e.clock == nil {
		e.clock = RealClock{}
	}
	e.src, e.descs, e.initialised = src, newDescs(), true
	if e.Log == nil {
		e.Log = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Step takes one sample (refreshing the topology when due) and judges the
// last interval. Run calls it every Interval; tests call it directly.
func (e *Exporter) Step(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.init(); err != nil {
		e.errors++
		return err
	}
	now := e.clock.Now()
	if e.topoAt.IsZero() || now.Sub(e.topoAt) >= e.TopologyEvery {
		topo, err := e.Env.Discover(ctx, e.Names)
		if err != nil {
			e.errors++
			e.lastErr = err.Error()
			if e.topoAt.IsZero() {
				return err
			}
			e.Log.Warn("topology refresh failed; keeping the previous one", "err", err)
		} else {
			for _, n := range topo.Notes {
				e.Log.Info(n)
			}
			if len(topo.Arrays) == 0 && (e.topoAt.IsZero() || len(e.topo.Arrays) > 0) {
				e.Log.Warn("no RAID arrays found (no LVM RAID LV, no md device): exporting tbhost_monitor_arrays 0 and no array metrics", "names", e.Names)
			}
			e.topo, e.topoAt = topo, now
		}
	}
	s, err := e.src.Sample(ctx)
	if err != nil {
		e.errors++
		e.lastErr = err.Error()
		return err
	}
	e.prev, e.last = e.last, s
	e.samples++
	if e.samples >= 2 {
		th, _ := e.Env.withScrubSkip(e.topo.Arrays, e.ScrubStates, e.Thresholds)
		e.report = Evaluate(e.topo.Arrays, []Sample{e.prev, e.last}, th)
	}
	return nil
}

// Run samples every Interval until ctx is done (after a first Step, it
// waits one interval before the next sample). At the end of a replayed
// snapshot it keeps serving the last state.
func (e *Exporter) Run(ctx context.Context) error {
	clock := e.Clock
	if clock == nil {
		clock = RealClock{}
	}
	for first := true; ; first = false {
		e.mu.Lock()
		started := e.samples > 0
		e.mu.Unlock()
		if started || !first {
			if err := clock.Sleep(ctx, e.Interval); err != nil {
				return nil
			}
		}
		err := e.Step(ctx)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, io.EOF):
			e.Log.Info("end of the replayed samples: serving the last state")
			<-ctx.Done()
			return nil
		default:
			e.Log.Warn("sample failed", "err", err)
		}
	}
}

// Describe implements prometheus.Collector.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	d := newDescs()
	for _, x := range []*prometheus.Desc{d.reads, d.bytes, d.readTime, d.ioTime, d.skew, d.readAwait, d.awaitRatio, d.slow, d.missing, d.status,
		d.degraded, d.syncing, d.syncProgress, d.images, d.mismatches, d.memberMismatches, d.problems, d.lastSample, d.errs} {
		ch <- x
	}
	ch <- d.arrays
}

// Collect implements prometheus.Collector: the state of the last Step.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.descs
	if !e.initialised {
		d = newDescs()
	}
	ch <- prometheus.MustNewConstMetric(d.errs, prometheus.CounterValue, e.errors)
	if !e.topoAt.IsZero() {
		ch <- prometheus.MustNewConstMetric(d.arrays, prometheus.GaugeValue, float64(len(e.topo.Arrays)))
	}
	if e.samples == 0 {
		return
	}
	ch <- prometheus.MustNewConstMetric(d.lastSample, prometheus.GaugeValue, float64(e.last.Time.UnixNano())/1e9)
	judged := map[string]ArrayResult{}
	for _, a := range e.report.Arrays {
		judged[a.Name] = a
	}
	for _, a := range e.topo.Arrays {
		degraded := 0.0
		for _, m := range a.Members {
			if m.Missing {
				degraded = 1
				ch <- prometheus.MustNewConstMetric(d.missing, prometheus.GaugeValue, 1, a.Name, m.ImageLabel())
				continue
			}
			st, ok := e.last.Devices[m.Disk]
			if !ok {
				degraded = 1
				continue
			}
			l := []string{a.Name, m.ImageLabel(), m.Disk, m.ID}
			ch <- prometheus.MustNewConstMetric(d.reads, prometheus.CounterValue, float64(st.ReadIOs), l...)
			ch <- prometheus.MustNewConstMetric(d.bytes, prometheus.CounterValue, float64(st.ReadSectors)*512, l...)
			ch <- prometheus.MustNewConstMetric(d.readTime, prometheus.CounterValue, float64(st.ReadTicks)/1000, l...)
			ch <- prometheus.MustNewConstMetric(d.ioTime, prometheus.CounterValue, float64(st.IOsTotalTicks)/1000, l...)
			if m.IntegrityMismatches >= 0 {
				ch <- prometheus.MustNewConstMetric(d.memberMismatches, prometheus.GaugeValue, float64(m.IntegrityMismatches), l...)
			}
		}
		if a.Degraded {
			degraded = 1
		}
		ch <- prometheus.MustNewConstMetric(d.degraded, prometheus.GaugeValue, degraded, a.Name)
		ch <- prometheus.MustNewConstMetric(d.images, prometheus.GaugeValue, float64(a.Images), a.Name)
		ch <- prometheus.MustNewConstMetric(d.syncing, prometheus.GaugeValue, b2f(a.Syncing), a.Name)
		if a.SyncProgress >= 0 && a.SyncAction != "" {
			ch <- prometheus.MustNewConstMetric(d.syncProgress, prometheus.GaugeValue, a.SyncProgress, a.Name, a.SyncAction)
		}
		if a.IntegrityMismatches >= 0 {
			ch <- prometheus.MustNewConstMetric(d.mismatches, prometheus.GaugeValue, float64(a.IntegrityMismatches), a.Name)
		}
		ar, ok := judged[a.Name]
		if !ok {
			continue
		}
		ch <- prometheus.MustNewConstMetric(d.status, prometheus.GaugeValue, float64(ar.Status), a.Name)
		counts := map[Severity]int{}
		for _, p := range ar.Problems {
			counts[p.Severity]++
		}
		for _, s := range []Severity{Warning, Critical, Unknown} {
			ch <- prometheus.MustNewConstMetric(d.problems, prometheus.GaugeValue, float64(counts[s]), a.Name, strings.ToLower(s.String()))
		}
		for _, m := range ar.Members {
			if m.Flag == FlagMissing || ar.Intervals == 0 {
				continue
			}
			l := []string{a.Name, m.ImageLabel(), m.Disk, m.ID}
			if m.Rates.ReadsPerS > 0 {
				ch <- prometheus.MustNewConstMetric(d.readAwait, prometheus.GaugeValue, m.Rates.RAwaitMS/1000, l...)
			}
			if m.AwaitRatio > 0 && m.Rates.ReadsPerS >= e.Thresholds.SlowMinIOPS && !m.Skipped {
				ch <- prometheus.MustNewConstMetric(d.awaitRatio, prometheus.GaugeValue, m.AwaitRatio, l...)
			}
			verdict := 0.0
			if m.Slow {
				verdict = float64(m.SlowSeverity)
			}
			ch <- prometheus.MustNewConstMetric(d.slow, prometheus.GaugeValue, verdict, l...)
		}
		if ar.Judged == 0 {
			continue
		}
		mean := ar.ReadsPerS / float64(countPresent(ar))
		for _, m := range ar.Members {
			if m.Flag == FlagMissing || mean <= 0 {
				continue
			}
			ch <- prometheus.MustNewConstMetric(d.skew, prometheus.GaugeValue, m.Rates.ReadsPerS/mean, a.Name, m.ImageLabel(), m.Disk, m.ID)
		}
	}
}

func countPresent(ar ArrayResult) int {
	n := 0
	for _, m := range ar.Members {
		if m.Flag != FlagMissing {
			n++
		}
	}
	return max(n, 1)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
