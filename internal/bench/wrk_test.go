package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tbhost/tbhost/internal/execx"
)

// clientResult is what a client (the replay, wrk, h2load) measured: rate
// (req/s), p50 and p99 (ms). printedP99 is wrk's own printed p99 (ms),
// after its correction for coordinated omission (wrkDumpScript); the other
// clients leave it zero.
type clientResult struct{ rate, p50, p99, printedP99 float64 }

// wrkDumpScript is a wrk Lua script whose done() writes the run's duration
// (us), completed requests, timeouts and every latency value (us) with its
// count. wrk 4 prints percentiles from a histogram it has "corrected" for
// coordinated omission (stats_correct in wrk's stats.c): for each latency n
// of at least twice the per-connection interval e = duration / (requests /
// connections) it adds phantom samples n-e, n-2e, ... down to above e, as if
// each connection had meant to send at a fixed rate. A closed-loop client's
// latencies (the replay's, h2load's) have no such samples, so wrk's printed
// p99 is not the same quantity: one 200 ms stall against python's server
// (e ~8 ms) becomes about 25 samples. done() sees the corrected histogram; uncorrectWrk
// takes the phantoms out again.
const wrkDumpScript = `done = function(summary, latency, requests)
  io.write(string.format("tbhost-wrk-summary %d %d %d\n", summary.duration, summary.requests, summary.errors.timeout))
  for i = 1, #latency do
    local v, c = latency(i)
    io.write(string.format("tbhost-wrk-latency %d %d\n", v, c))
  end
end
`

// runWrk runs wrk with threads threads and clients connections for d and
// returns its rate, the p50 and p99 of its per-request latencies without
// its coordinated-omission phantoms (in the replay's HDR histogram, read as
// the replay's are), and its printed p99 beside them.
func runWrk(b *testing.B, url string, threads, clients int, d time.Duration) clientResult {
	script := filepath.Join(b.TempDir(), "dump.lua")
	if err := os.WriteFile(script, []byte(wrkDumpScript), 0o644); err != nil {
		b.Fatal(err)
	}
	res, err := execx.Exec{}.Run(context.Background(), "wrk", fmt.Sprintf("-t%d", threads), fmt.Sprintf("-c%d", clients),
		fmt.Sprintf("-d%ds", int(d.Seconds())), "--latency", "-s", script, url)
	if err != nil {
		b.Fatal(err)
	}
	s := string(res.Stdout)
	if i := strings.Index(s, "tbhost-wrk-"); i >= 0 {
		s = s[:i] // wrk's own report, for the messages below; the dump is read from res.Stdout
	}
	if m := regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`).FindStringSubmatch(s); m != nil {
		b.Fatalf("wrk got %s error answers from %s:\n%s", m[1], url, s)
	}
	m := regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`).FindStringSubmatch(s)
	p := regexp.MustCompile(`\n\s+99%\s+([0-9.]+)(us|ms|s)`).FindStringSubmatch(s)
	if m == nil || p == nil {
		b.Fatalf("cannot read wrk's rate and p99:\n%s", s)
	}
	var out clientResult
	out.rate, _ = strconv.ParseFloat(m[1], 64)
	out.printedP99, _ = strconv.ParseFloat(p[1], 64)
	out.printedP99 *= map[string]float64{"us": 1e-3, "ms": 1, "s": 1e3}[p[2]]
	h, err := uncorrectWrk(res.Stdout, clients)
	if err != nil {
		b.Fatalf("wrk against %s: %v\n%s", url, err, s)
	}
	l := summarize(h)
	out.p50, out.p99 = l.P50, l.P99
	return out
}

// uncorrectWrk reads wrkDumpScript's lines from wrk's output and returns
// the latencies wrk measured, without the samples its coordinated-omission
// correction added. With c the corrected counts and e the interval wrk
// used, the correction made c[m] = raw[m] + raw[m+e] + raw[m+2e] + ... for
// every m > e, so raw[m] = c[m] - c[m+e]; below that, c is raw. The result
// must count every completed request that wrk did not time out (it leaves
// those out of its histogram): anything else, or a negative count, means
// the output is not wrk 4's and is an error.
func uncorrectWrk(out []byte, connections int) (*hdrhistogram.Histogram, error) {
	var durationUs, requests, timeouts int64
	summaries := 0
	corrected := map[int64]int64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !strings.HasPrefix(f[0], "tbhost-wrk-") {
			continue
		}
		var v [3]int64
		if len(f) != map[string]int{"tbhost-wrk-summary": 4, "tbhost-wrk-latency": 3}[f[0]] {
			return nil, fmt.Errorf("line %q: not what the dump script writes", sc.Text())
		}
		for i, s := range f[1:] {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("line %q: %q is not a count", sc.Text(), s)
			}
			v[i] = n
		}
		if f[0] == "tbhost-wrk-summary" {
			durationUs, requests, timeouts = v[0], v[1], v[2]
			summaries++
			continue
		}
		if _, dup := corrected[v[0]]; dup {
			return nil, fmt.Errorf("latency %d us listed twice", v[0])
		}
		corrected[v[0]] = v[1]
	}
	if summaries != 1 {
		return nil, fmt.Errorf("%d summary lines from the dump script, want 1 (was wrk run with -s and a done() it calls?)", summaries)
	}
	if requests == 0 || len(corrected) == 0 {
		return nil, errors.New("no request finished")
	}
	if timeouts > 0 {
		return nil, fmt.Errorf("%d requests timed out; wrk leaves them out of its latencies, so its percentiles are too low", timeouts)
	}
	e := int64(-1) // no correction when fewer requests than connections
	if perConn := requests / int64(connections); perConn > 0 {
		e = durationUs / perConn
	}
	h := newHistogram()
	var total int64
	for us, c := range corrected {
		n := c
		if e >= 0 && us > e {
			n -= corrected[us+e]
		}
		if n < 0 {
			return nil, fmt.Errorf("latency %d us: %d samples, %d at %d us: not wrk 4's correction for a %d us interval", us, c, corrected[us+e], us+e, e)
		}
		if n > 0 {
			if err := h.RecordValues(max(us, 1)*int64(time.Microsecond), n); err != nil {
				return nil, fmt.Errorf("latency %d us: %w", us, err)
			}
		}
		total += n
	}
	if total != requests {
		return nil, fmt.Errorf("%d latencies without wrk's correction, for %d requests: not wrk 4's correction for a %d us interval", total, requests, e)
	}
	return h, nil
}

// wrkCorrect is wrk 4.1.0's stats_correct (stats.c), line for line, over a
// histogram indexed by microseconds: the correction uncorrectWrk undoes.
func wrkCorrect(data []int64, expected int64) {
	for n := expected * 2; n < int64(len(data)); n++ {
		count := data[n]
		m := n - expected
		for count != 0 && m > expected {
			data[m] += count
			m -= expected
		}
	}
}

// wrkDump writes data (counts by microsecond) as wrkDumpScript does.
func wrkDump(durationUs, requests, timeouts int64, data []int64) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "Requests/sec: 1\ntbhost-wrk-summary %d %d %d\n", durationUs, requests, timeouts)
	for us, c := range data {
		if c > 0 {
			fmt.Fprintf(&b, "tbhost-wrk-latency %d %d\n", us, c)
		}
	}
	return []byte(b.String())
}

func TestUncorrectWrkUndoesItsCorrection(t *testing.T) {
	// 12 connections, 1 s: mostly 150-400 us, a few stalls of 2-9 ms
	const conns, durationUs = 12, 1_000_000
	raw := make([]int64, 10_000)
	var requests int64
	for i := int64(0); i < 40_000; i++ {
		us := 150 + (i*7919)%250
		if i%997 == 0 {
			us = 2000 + (i*31)%7000
		}
		raw[us]++
		requests++
	}
	e := durationUs / (requests / conns) // 300 us
	corrected := append([]int64(nil), raw...)
	wrkCorrect(corrected, e)
	var added int64
	for us := range raw {
		added += corrected[us] - raw[us]
	}
	if added < requests/100 {
		t.Fatalf("the correction added %d samples to %d; the fixture has too few stalls to test it", added, requests)
	}
	h, err := uncorrectWrk(wrkDump(durationUs, requests, 0, corrected), conns)
	if err != nil {
		t.Fatal(err)
	}
	want := newHistogram()
	for us, c := range raw {
		if c > 0 {
			want.RecordValues(int64(us)*int64(time.Microsecond), c)
		}
	}
	if !h.Equals(want) {
		t.Errorf("uncorrected: %d samples, p99 %v ms; want the raw %d, p99 %v ms",
			h.TotalCount(), summarize(h).P99, want.TotalCount(), summarize(want).P99)
	}
	// the check that the result counts every request catches a dump read
	// with the wrong interval (here: the wrong connection count)
	if _, err := uncorrectWrk(wrkDump(durationUs, requests, 0, corrected), conns/2); err == nil {
		t.Error("uncorrected with 6 connections' interval: no error")
	}
}

// The recorded output of wrk 4.1.0 (Debian package) with wrkDumpScript, 12
// connections for 2 s against python3 -m http.server: the dump is the
// histogram wrk printed its percentiles from (its 99% line, 301.72 ms),
// and without the phantoms p50 and p99 are 3.819 and 7.472 ms (the 1492nd
// and 2954th of 2984, the histogram's rank rule; computed
// from the same file by an independent script).
func TestUncorrectWrkRecordedRun(t *testing.T) {
	out, err := os.ReadFile("testdata/wrk-4.1.0-python-http.server.out")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte("99%  301.72ms")) {
		t.Fatal("fixture: wrk's printed 99% line is not 301.72ms")
	}
	printed := newHistogram()
	for _, m := range regexp.MustCompile(`tbhost-wrk-latency (\d+) (\d+)`).FindAllSubmatch(out, -1) {
		us, _ := strconv.ParseInt(string(m[1]), 10, 64)
		c, _ := strconv.ParseInt(string(m[2]), 10, 64)
		printed.RecordValues(us*int64(time.Microsecond), c)
	}
	h, err := uncorrectWrk(out, 12)
	if err != nil {
		t.Fatal(err)
	}
	if h.TotalCount() != 2984 {
		t.Errorf("%d latencies, want the run's 2984 requests", h.TotalCount())
	}
	l := summarize(h)
	for _, c := range []struct {
		name      string
		got, want float64 // ms
	}{
		{"dump's p99 (wrk's printed)", summarize(printed).P99, 301.72},
		{"p50", l.P50, 3.819},
		{"p99", l.P99, 7.472},
	} {
		if !within(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestUncorrectWrkRefusesOtherOutput(t *testing.T) {
	ok := "tbhost-wrk-summary 1000000 24 0\ntbhost-wrk-latency 200 24\n"
	if _, err := uncorrectWrk([]byte(ok), 12); err != nil {
		t.Fatalf("a valid dump: %v", err)
	}
	for name, out := range map[string]string{
		"no dump (wrk run without the script)":  "Requests/sec: 1000\n",
		"two summaries":                         ok + "tbhost-wrk-summary 1000000 24 0\n",
		"a timeout (left out of the latencies)": "tbhost-wrk-summary 1000000 24 1\ntbhost-wrk-latency 200 24\n",
		"fewer latencies than requests":         "tbhost-wrk-summary 1000000 25 0\ntbhost-wrk-latency 200 24\n",
		// e = 1e6/(24/12) = 500 000 us: 600 000 us holds the phantom of
		// 1 100 000, so it cannot have fewer samples
		"a phantom without its source": "tbhost-wrk-summary 1000000 24 0\ntbhost-wrk-latency 200 22\ntbhost-wrk-latency 600000 1\ntbhost-wrk-latency 1100000 2\n",
		"a value listed twice":         ok + "tbhost-wrk-latency 200 1\n",
		"a negative count":             "tbhost-wrk-summary 1000000 24 0\ntbhost-wrk-latency 200 -24\n",
		"a cut line":                   "tbhost-wrk-summary 1000000 24\ntbhost-wrk-latency 200 24\n",
		"no request":                   "tbhost-wrk-summary 1000000 0 0\n",
	} {
		if _, err := uncorrectWrk([]byte(out), 12); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
