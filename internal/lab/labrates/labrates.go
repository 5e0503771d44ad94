// Package labrates is the VM lab's measured rates and the comparison with
// internal/timeline's forecast (issue 15): the lab measures its raw disks
// (dd inside the guest), the initial RAID sync with dm-integrity, an
// uncapped integrity scrub pass and a prefix extract; the timeline, fed
// only the raw disk rate, predicts the other three, and each prediction
// must be within a factor of the measurement. The results file
// (lab-results.json) records both.
package labrates

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tbhost/tbhost/internal/timeline"
)

// Factor is how far a prediction may be from the measurement (either way).
const Factor = 2.0

// Measured is what one lab boot measured, in bytes and seconds.
type Measured struct {
	// When and where (kernel, qemu TCG on how many host cores).
	Date   string `json:"date"`
	Kernel string `json:"kernel,omitempty"`
	Host   string `json:"host,omitempty"`
	// The array: HDDs members, DataStripes, each image ImageBytes.
	HDDs        int   `json:"hdds"`
	DataStripes int   `json:"data_stripes"`
	ImageBytes  int64 `json:"image_bytes"`
	// RawRead and RawWrite: dd of RawBytes with O_DIRECT on one HDD
	// before pvcreate (write first, then read the same range back).
	RawBytes        int64   `json:"raw_bytes"`
	RawReadSeconds  float64 `json:"raw_read_seconds"`
	RawWriteSeconds float64 `json:"raw_write_seconds"`
	// RawParallel: O_DIRECT reads of every HDD at once (informational: the
	// emulated disks' total when all stream, as in the sync and the scrub).
	RawParallelBytes   int64   `json:"raw_parallel_bytes"`
	RawParallelSeconds float64 `json:"raw_parallel_seconds"`
	// LVCreateSeconds: lvcreate --type raid5 --raidintegrity y itself;
	// SyncSeconds: from the start of lvcreate to sync_percent 100.00 (the
	// RAID sync and the dm-integrity initialisation run together; lvs
	// reports both as sync_percent).
	LVCreateSeconds float64 `json:"lvcreate_seconds"`
	SyncSeconds     float64 `json:"sync_seconds"`
	// ScrubBytes in ScrubSeconds: a whole integrity scrub pass, --rate 0.
	ScrubBytes   int64   `json:"scrub_bytes"`
	ScrubSeconds float64 `json:"scrub_seconds"`
	// ExtractBytes (read from the tables) in ExtractSeconds: tbhost prefix
	// extract from ext4 on the array, caches dropped before.
	ExtractBytes   int64   `json:"extract_bytes"`
	ExtractSeconds float64 `json:"extract_seconds"`
	ExtractFiles   int     `json:"extract_files"`
	// SyncCPUBusy, ScrubCPUBusy, ExtractCPUBusy: the fraction of the
	// guest's CPU time neither idle nor waiting for I/O during each step,
	// from /proc/stat before and after it. 0: not measured.
	// VCPUs is the guest's CPU count (the cpuN lines of /proc/stat).
	VCPUs          int     `json:"vcpus"`
	SyncCPUBusy    float64 `json:"sync_cpu_busy"`
	ScrubCPUBusy   float64 `json:"scrub_cpu_busy"`
	ExtractCPUBusy float64 `json:"extract_cpu_busy"`
}

// CPUBoundAt is the guest CPU busy fraction from which a step counts as
// bound by the CPU (checksums, parity, emulated instructions under TCG)
// rather than by the disks: at least one whole vCPU busy on average (a
// single kernel thread, md's raid5 thread or an integrity worker, can then
// be what limits the step), at most 90 %. The timeline models disk-bound
// steps only, so such a step is recorded but not held to Factor.
func CPUBoundAt(vcpus int) float64 {
	if vcpus < 2 {
		return 0.9
	}
	return 1 / float64(vcpus)
}

// MinPrefixPerFile is the prefix bytes per file from which an extract is
// bound by bandwidth, as the timeline models it (the reference host: 385
// GiB over 3,022 files, 131 MiB a file); below it, opening, checking and
// renaming each file dominate and the extract is not compared.
const MinPrefixPerFile = 1 << 20

// CPUBusy is the busy fraction between two "cpu ..." lines of /proc/stat
// (user nice system idle iowait irq softirq steal [guest guest_nice]):
// 1 - (idle + iowait) / total of the differences.
func CPUBusy(before, after string) (float64, error) {
	parse := func(l string) ([]uint64, error) {
		f := strings.Fields(l)
		if len(f) < 6 || f[0] != "cpu" {
			return nil, fmt.Errorf("/proc/stat line %q: want \"cpu user nice system idle iowait ...\"", l)
		}
		v := make([]uint64, 0, len(f)-1)
		for _, x := range f[1:] {
			n, err := strconv.ParseUint(x, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("/proc/stat line %q: %w", l, err)
			}
			v = append(v, n)
		}
		return v, nil
	}
	a, err := parse(before)
	if err != nil {
		return 0, err
	}
	b, err := parse(after)
	if err != nil {
		return 0, err
	}
	if len(a) != len(b) {
		return 0, fmt.Errorf("/proc/stat lines with %d and %d fields", len(a), len(b))
	}
	var total, idle uint64
	for i := range a {
		if b[i] < a[i] {
			return 0, fmt.Errorf("/proc/stat went backwards (field %d)", i+1)
		}
		if i >= 8 { // guest, guest_nice are counted in user, nice already
			continue
		}
		d := b[i] - a[i]
		if total+d < total {
			return 0, fmt.Errorf("/proc/stat: tick counts overflow")
		}
		total += d
		if i == 3 || i == 4 {
			idle += d
		}
	}
	if total == 0 {
		return 0, fmt.Errorf("/proc/stat: no CPU time passed")
	}
	return float64(total-idle) / float64(total), nil
}

// Rate is bytes per second of bytes in secs (0 when secs is not positive).
func Rate(bytes int64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(bytes) / secs
}

// Comparison is one prediction next to its measurement.
type Comparison struct {
	Name             string  `json:"name"`
	What             string  `json:"what"`
	MeasuredSeconds  float64 `json:"measured_seconds"`
	PredictedSeconds float64 `json:"predicted_seconds"`
	// Ratio is predicted / measured: above 1 the model is pessimistic.
	Ratio float64 `json:"ratio"`
	// CPUBusy during the step; at CPUBoundAt or above the step was bound by
	// the CPU and the disk model does not apply (Applies false).
	CPUBusy float64 `json:"cpu_busy"`
	Applies bool    `json:"applies"`
	// Within: Ratio within Factor (set for every step, held where Applies).
	Within bool   `json:"within"`
	Note   string `json:"note,omitempty"`
}

// Results is the content of lab-results.json.
type Results struct {
	Measured Measured `json:"measured"`
	// HDDRate is the one input of the model: RawBytes / RawReadSeconds.
	HDDRate     int64        `json:"hdd_rate"`
	Factor      float64      `json:"factor"`
	Comparisons []Comparison `json:"comparisons"`
	// Checked is how many comparisons applied (disk-bound steps); OK: each
	// of those is within Factor.
	Checked int  `json:"checked"`
	OK      bool `json:"ok"`
}

// Compare predicts sync, scrub and extract from the measured raw HDD read
// rate with timeline.FromHDDRate and timeline.Forecast (the scrub uncapped,
// as the lab ran it: bound by the disks) and compares each with m.
func Compare(m Measured) (Results, error) {
	if err := m.check(); err != nil {
		return Results{}, err
	}
	hdd := int64(Rate(m.RawBytes, m.RawReadSeconds))
	r := timeline.FromHDDRate(hdd, m.DataStripes)
	r.Scrub = math.MaxInt64 / 4 // --rate 0: no cap
	r.ScrubBudget = time.Hour
	tl, err := timeline.Forecast(timeline.Host{HDDs: m.HDDs, DataStripes: m.DataStripes, ImageBytes: m.ImageBytes,
		Integrity: true, PrefixBytes: m.ExtractBytes}, r)
	if err != nil {
		return Results{}, fmt.Errorf("lab results: %w", err)
	}
	step := map[string]timeline.Step{}
	for _, s := range tl.Steps {
		step[s.Name] = s
	}
	res := Results{Measured: m, HDDRate: hdd, Factor: Factor, OK: true}
	add := func(name, what string, measured, predicted, busy float64) {
		c := Comparison{Name: name, What: what, MeasuredSeconds: measured, PredictedSeconds: predicted, Ratio: predicted / measured, CPUBusy: busy}
		c.Within = c.Ratio <= Factor && c.Ratio >= 1/Factor
		c.Applies = busy < CPUBoundAt(m.VCPUs)
		perFile := m.ExtractBytes / int64(max(m.ExtractFiles, 1))
		switch {
		case c.Applies && name == "prefix-extract" && perFile < MinPrefixPerFile:
			c.Applies = false
			c.Note = fmt.Sprintf("%d bytes of prefix per file: bound by per-file work, not by the bandwidth the timeline models (from %d a file); not held to %gx", perFile, MinPrefixPerFile, Factor)
		case c.Applies:
			res.Checked++
			res.OK = res.OK && c.Within
		default:
			c.Note = fmt.Sprintf("bound by the CPU (guest CPUs %.0f %% busy, %.1f of %d vCPUs): the timeline models disk-bound steps; not held to %gx", 100*busy, busy*float64(max(m.VCPUs, 1)), m.VCPUs, Factor)
		}
		res.Comparisons = append(res.Comparisons, c)
	}
	// the sync and the integrity initialisation run together: the longer one
	add("initial-sync", "lvcreate to sync 100 %: RAID sync alongside dm-integrity initialisation",
		m.SyncSeconds, math.Max(step["initial-sync"].Seconds, step["integrity-init"].Seconds), m.SyncCPUBusy)
	// the bytes the scrub really read (the images' integrity devices), at the forecast's rate
	add("scrub-pass", "one integrity scrub pass, uncapped", m.ScrubSeconds, float64(m.ScrubBytes)/float64(step["scrub-pass"].Rate), m.ScrubCPUBusy)
	add("prefix-extract", "prefix extract from the array", m.ExtractSeconds, step["prefix-extract"].Seconds, m.ExtractCPUBusy)
	return res, nil
}

func (m Measured) check() error {
	var errs []error
	if m.ExtractFiles < 1 {
		errs = append(errs, fmt.Errorf("extract_files %d: the extract wrote at least one prefix", m.ExtractFiles))
	}
	if m.VCPUs < 1 || m.VCPUs > 1024 {
		errs = append(errs, fmt.Errorf("vcpus %d: the guest's CPU count, 1 to 1024", m.VCPUs))
	}
	if m.HDDs < 3 || m.DataStripes != m.HDDs-1 {
		errs = append(errs, fmt.Errorf("%d HDDs with %d data stripes: a raid5 has at least 3, one of them parity", m.HDDs, m.DataStripes))
	}
	for _, x := range []struct {
		name string
		v    float64
	}{{"image_bytes", float64(m.ImageBytes)}, {"raw_bytes", float64(m.RawBytes)}, {"raw_read_seconds", m.RawReadSeconds},
		{"sync_seconds", m.SyncSeconds}, {"scrub_bytes", float64(m.ScrubBytes)}, {"scrub_seconds", m.ScrubSeconds},
		{"extract_bytes", float64(m.ExtractBytes)}, {"extract_seconds", m.ExtractSeconds}} {
		if !(x.v > 0) || math.IsInf(x.v, 0) {
			errs = append(errs, fmt.Errorf("%s %v: a measurement above 0 is needed", x.name, x.v))
		}
	}
	for _, x := range []float64{m.SyncCPUBusy, m.ScrubCPUBusy, m.ExtractCPUBusy} {
		if !(x >= 0 && x <= 1) {
			errs = append(errs, fmt.Errorf("CPU busy fraction %v: between 0 and 1", x))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("lab results: %w", err)
	}
	return nil
}

// Parse reads lab-results.json (or just its measured object) and
// recomputes the comparison: the file's own predictions are not trusted.
func Parse(b []byte) (Results, error) {
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return Results{}, fmt.Errorf("lab results: %w", err)
	}
	return Compare(r.Measured)
}
