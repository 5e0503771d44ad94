package monitor

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tbhost/tbhost/lvm"
)

// CheckJSON is `tbhost monitor check --json`, exactly the shape.
type CheckJSON struct {
	Status string      `json:"status"`
	Arrays []ArrayJSON `json:"arrays"`
}

// ArrayJSON is one array in CheckJSON.
type ArrayJSON struct {
	Name     string       `json:"name"`
	Members  []MemberJSON `json:"members"`
	Problems []string     `json:"problems"`
}

// MemberJSON is one member in CheckJSON.
type MemberJSON struct {
	Disk          string  `json:"disk"`
	ID            string  `json:"id"`
	ReadsPerS     float64 `json:"reads_per_s"`
	ReadBytesPerS float64 `json:"read_bytes_per_s"`
	Share         float64 `json:"share"`
	// RAwaitMS, UtilPercent, QueueSize: iostat's r_await, %util and aqu-sz
	// over the window; AwaitRatio: r_await over the siblings' median (0
	// when no sibling read).
	RAwaitMS    float64 `json:"r_await_ms"`
	UtilPercent float64 `json:"util_percent"`
	QueueSize   float64 `json:"queue_size"`
	AwaitRatio  float64 `json:"await_ratio"`
	Flag        string  `json:"flag"`
	// Skipped: left out of skew and latency judgement (--skip).
	Skipped bool `json:"skipped,omitempty"`
}

// JSON returns the report in the check --json shape. Problems carry their
// severity as a prefix ("CRITICAL: ...").
func (r Report) JSON() CheckJSON {
	out := CheckJSON{Status: r.Status.String(), Arrays: []ArrayJSON{}}
	for _, a := range r.Arrays {
		aj := ArrayJSON{Name: a.Name, Members: []MemberJSON{}, Problems: []string{}}
		for _, m := range a.Members {
			aj.Members = append(aj.Members, MemberJSON{
				Disk: m.Label(), ID: m.ID, ReadsPerS: round(m.Rates.ReadsPerS, 2),
				ReadBytesPerS: round(m.Rates.ReadBytesPerS, 0), Share: round(m.Share, 4), Flag: m.Flag,
				RAwaitMS: round(m.Rates.RAwaitMS, 2), UtilPercent: round(m.Rates.UtilPercent, 2),
				QueueSize: round(m.Rates.QueueSize, 2), AwaitRatio: round(m.AwaitRatio, 2), Skipped: m.Skipped,
			})
		}
		for _, p := range a.Problems {
			aj.Problems = append(aj.Problems, p.Severity.String()+": "+p.Text)
		}
		if a.Note != "" && !noteIsProblem(a.Problems) {
			aj.Problems = append(aj.Problems, "OK: "+a.Note)
		}
		for _, n := range a.Notes {
			aj.Problems = append(aj.Problems, "OK: "+n)
		}
		out.Arrays = append(out.Arrays, aj)
	}
	return out
}

// noteIsProblem reports whether the array's note (why skew was not judged)
// is already one of its problems: --no-traffic unknown, or no rates.
func noteIsProblem(ps []Problem) bool {
	for _, p := range ps {
		if p.Code == lvm.CodeNoTraffic || p.Code == lvm.CodeNoSamples {
			return true
		}
	}
	return false
}

func round(v float64, digits int) float64 {
	s := strconv.FormatFloat(v, 'f', digits, 64)
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// StatusLine is the Nagios first line: "CRITICAL: ...".
func (r Report) StatusLine() string {
	return r.Status.String() + ": " + r.Summary
}

// Perfdata is the Nagios plugin performance data of the report (what goes
// after " | " on the status line): per member, its reads/s, its share of
// the array's reads, its r_await (ms) and %util over the window,
//
//	'vg-hdd/tables sda reads'=123.4;;;0 'vg-hdd/tables sda share'=16.67%;;;0;100
//	'vg-hdd/tables sda r_await'=8.2ms;;;0 'vg-hdd/tables sda util'=41.5%;;;0;100
//
// A value is "U" (undetermined) when there are no rates (a missing member,
// fewer than two samples) and a share is "U" when the array read nothing.
// "" when there are no arrays.
func (r Report) Perfdata() string {
	var out []string
	for _, a := range r.Arrays {
		for _, m := range a.Members {
			label := perfLabel(a.Name + " " + m.Label())
			reads, share, await, util := "U", "U", "U", "U"
			if a.Intervals > 0 && m.Flag != FlagMissing {
				reads = strconv.FormatFloat(round(m.Rates.ReadsPerS, 2), 'f', -1, 64)
				util = strconv.FormatFloat(round(m.Rates.UtilPercent, 2), 'f', -1, 64) + "%"
				if a.ReadsPerS > 0 { // no share of nothing
					share = strconv.FormatFloat(round(100*m.Share, 2), 'f', -1, 64) + "%"
				}
				if m.Rates.ReadsPerS > 0 { // no latency without reads
					await = strconv.FormatFloat(round(m.Rates.RAwaitMS, 2), 'f', -1, 64) + "ms"
				}
			}
			out = append(out, label(" reads")+"="+reads+";;;0", label(" share")+"="+share+";;;0;100",
				label(" r_await")+"="+await+";;;0", label(" util")+"="+util+";;;0;100")
		}
	}
	return strings.Join(out, " ")
}

// perfLabel returns a function quoting name+suffix as a perfdata label: in
// single quotes (names hold spaces), without the characters the syntax
// reserves (' and =).
func perfLabel(name string) func(suffix string) string {
	clean := strings.NewReplacer("'", "_", "=", "_", "|", "_").Replace(name)
	return func(suffix string) string { return "'" + clean + suffix + "'" }
}

// WriteText prints the summary line with its perfdata (Nagios: "STATUS:
// summary | perfdata"), then the details: every array's problems and a
// table of its members.
func (r Report) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	// the first "|" starts perfdata for Nagios: none may appear before it
	line := strings.ReplaceAll(r.StatusLine(), "|", "/")
	if pd := r.Perfdata(); pd != "" {
		line += " | " + pd
	}
	fmt.Fprintln(ew, line)
	for _, n := range r.Notes {
		fmt.Fprintf(ew, "note: %s\n", n)
	}
	for _, a := range r.Arrays {
		fmt.Fprintln(ew)
		writeArrayTable(ew, a, false)
		for _, p := range a.Problems {
			fmt.Fprintf(ew, "  %s: %s\n", p.Severity, p.Text)
		}
		if a.Note != "" && !noteIsProblem(a.Problems) {
			fmt.Fprintf(ew, "  note: %s\n", a.Note)
		}
		for _, n := range a.Notes {
			fmt.Fprintf(ew, "  note: %s\n", n)
		}
	}
	return ew.err
}

// writeArrayTable prints an array's header line and member table (bars when bars is true).
func writeArrayTable(w io.Writer, a ArrayResult, bars bool) {
	level := a.Level
	if level == "" {
		level = a.Kind
	}
	fmt.Fprintf(w, "%s  %s  %d disks  %.1f reads/s  %s  %s\n", a.Name, level, len(a.Members), a.ReadsPerS, mbps(sumBytes(a)), a.Status)
	idw, dw := 2, 8
	for _, m := range a.Members {
		idw = max(idw, len(m.ID))
		dw = max(dw, len(m.Label()))
	}
	imw := 5
	for _, m := range a.Members {
		imw = max(imw, len(m.ImageLabel()))
	}
	fmt.Fprintf(w, "  %-*s %-*s %-*s %9s %9s %8s %6s %6s %6s %6s  %s\n", dw, "DISK", idw, "ID", imw, "IMAGE", "r/s", "MB/s", "r_await", "x_sib", "%util", "aqu", "share", "FLAG")
	maxShare := 0.0
	for _, m := range a.Members {
		maxShare = max(maxShare, m.Share)
	}
	for _, m := range a.Members {
		img := m.ImageLabel()
		if img == "" {
			img = "(none)"
		}
		id := m.ID
		if id == "" {
			id = "-"
		}
		ratio := "-"
		if m.AwaitRatio > 0 {
			ratio = fmt.Sprintf("%.1f", m.AwaitRatio)
		}
		flag := m.Flag
		if m.Skipped {
			flag += " (skipped)"
		}
		line := fmt.Sprintf("  %-*s %-*s %-*s %9.1f %9.2f %8.1f %6s %6.1f %6.2f %5.1f%%  %s",
			dw, m.Label(), idw, id, imw, img, m.Rates.ReadsPerS, m.Rates.ReadBytesPerS/1e6, m.Rates.RAwaitMS, ratio,
			m.Rates.UtilPercent, m.Rates.QueueSize, 100*m.Share, flag)
		if bars {
			line += "  " + bar(m.Share, maxShare, 20)
		}
		fmt.Fprintln(w, line)
	}
}

func sumBytes(a ArrayResult) float64 {
	s := 0.0
	for _, m := range a.Members {
		s += m.Rates.ReadBytesPerS
	}
	return s
}

func mbps(b float64) string { return fmt.Sprintf("%.1f MB/s", b/1e6) }

func bar(v, maxV float64, width int) string {
	if maxV <= 0 {
		return ""
	}
	n := int(v/maxV*float64(width) + 0.5)
	return strings.Repeat("#", n) + strings.Repeat(".", width-n)
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// Registry returns the report as Prometheus metrics (for --textfile): the
// same content as --json, named tbhost_monitor_check_*.
func (r Report) Registry(now float64) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	status := prometheus.NewGauge(prometheus.GaugeOpts{Name: "tbhost_monitor_check_status",
		Help: "Overall result of tbhost monitor check: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN."})
	last := prometheus.NewGauge(prometheus.GaugeOpts{Name: "tbhost_monitor_check_timestamp_seconds",
		Help: "When tbhost monitor check wrote this file (Unix time)."})
	arrayStatus := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tbhost_monitor_check_array_status",
		Help: "Result per array: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN."}, []string{"array"})
	problems := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tbhost_monitor_check_array_problems",
		Help: "Number of findings per array and severity."}, []string{"array", "severity"})
	reads := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tbhost_monitor_check_member_reads_per_second",
		Help: "Reads completed per second by the member disk over the check window."}, []string{"array", "image", "disk", "id"})
	rbytes := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tbhost_monitor_check_member_read_bytes_per_second",
		Help: "Bytes read per second by the member disk over the check window."}, []string{"array", "image", "disk", "id"})
	share := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tbhost_monitor_check_member_read_share",
		Help: "The member's share of the array's reads over the check window (0..1)."}, []string{"array", "image", "disk", "id"})
	flag := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tbhost_monitor_check_member_flag",
		Help: "1 for the member's flag: ok, under, over, idle or missing."}, []string{"array", "image", "disk", "id", "flag"})
	await := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tbhost_monitor_check_member_read_await_seconds",
		Help: "Mean time per read of the member disk over the check window (iostat r_await); only when it read."}, []string{"array", "image", "disk", "id"})
	ratio := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tbhost_monitor_check_member_read_await_ratio",
		Help: "The member's r_await over its siblings' median over the check window (1 = like its siblings)."}, []string{"array", "image", "disk", "id"})
	reg.MustRegister(status, last, arrayStatus, problems, reads, rbytes, share, flag, await, ratio)
	status.Set(float64(r.Status))
	last.Set(now)
	for _, a := range r.Arrays {
		arrayStatus.WithLabelValues(a.Name).Set(float64(a.Status))
		counts := map[Severity]int{}
		for _, p := range a.Problems {
			counts[p.Severity]++
		}
		for _, s := range []Severity{Warning, Critical, Unknown} {
			problems.WithLabelValues(a.Name, strings.ToLower(s.String())).Set(float64(counts[s]))
		}
		for _, m := range a.Members {
			l := []string{a.Name, m.ImageLabel(), m.Label(), m.ID}
			reads.WithLabelValues(l...).Set(m.Rates.ReadsPerS)
			rbytes.WithLabelValues(l...).Set(m.Rates.ReadBytesPerS)
			share.WithLabelValues(l...).Set(m.Share)
			flag.WithLabelValues(append(l, m.Flag)...).Set(1)
			if m.Flag != FlagMissing && m.Rates.ReadsPerS > 0 {
				await.WithLabelValues(l...).Set(m.Rates.RAwaitMS / 1000)
			}
			if m.AwaitRatio > 0 {
				ratio.WithLabelValues(l...).Set(m.AwaitRatio)
			}
		}
	}
	return reg
}
