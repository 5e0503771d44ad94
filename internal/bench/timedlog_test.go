package bench

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestReadTimedLogs(t *testing.T) {
	for name, c := range map[string]struct {
		log     string
		offsets []time.Duration
		skipped int
	}{
		"nginx $msec": {"1733061558.000 /standard?fen=a\n1733061558.010 /standard?fen=b\n1733061558.5 8/8/8/8/8/8/8/KRk5 w - - 0 1\n",
			[]time.Duration{0, 10 * time.Millisecond, 500 * time.Millisecond}, 0},
		"RFC 3339": {"2026-12-01T13:59:18.123Z /a\n2026-12-01T14:59:18.124+01:00 https://h/b?x=1\n",
			[]time.Duration{0, time.Millisecond}, 0},
		"combined access log": {`127.0.0.1 - - [01/Dec/2026:13:59:18 +0000] "GET /standard?fen=a HTTP/1.1" 200 123 "-" "curl"
10.0.0.2 - bob [01/Dec/2026:13:59:18 +0000] "POST /admin HTTP/1.1" 403 0 "-" "-"
10.0.0.3 - - [01/Dec/2026:13:59:20.250 +0000] "HEAD /b HTTP/1.0" 200 0
`, []time.Duration{0, 2250 * time.Millisecond}, 1},
		// logged when the request ended: a line earlier than the one before is sent right after it
		"disordered": {"1733061558.100 /a\n1733061558.050 /b\n1733061558.200 /c\n",
			[]time.Duration{0, 0, 100 * time.Millisecond}, 0},
	} {
		l, err := ReadLog(strings.NewReader(c.log))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if fmt.Sprint(l.Offsets) != fmt.Sprint(c.offsets) || l.Skipped != c.skipped || len(l.Paths) != len(c.offsets) {
			t.Errorf("%s: offsets %v skipped %d paths %q; want %v, %d", name, l.Offsets, l.Skipped, l.Paths, c.offsets, c.skipped)
		}
	}
	if l, err := ReadLog(strings.NewReader("/a\n/b\n")); err != nil || l.Offsets != nil {
		t.Errorf("an untimed log got offsets %v (%v)", l.Offsets, err)
	}
	for _, bad := range []string{
		"1733061558.000 /a\n/b\n",   // timed, then not
		"/a\n1733061558.000 /b\n",   // not, then timed
		"2026-13-01T13:59:18Z /a\n", // no such month
		"1.2.3.4 - - [32/Dec/2026:13:59:18 +0000] \"GET /a HTTP/1.1\" 200 1\n", // no such day
		"1000000000 /a\n1733061558 /b\n",                                       // 23 years of log: a field misread as time
	} {
		if _, err := ReadLog(strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The coordinated-omission test of issue 17: requests 10 ms apart in the
// log, a target that stalls once for 1 s. Replayed at the log's pace, the
// requests scheduled during the stall wait for it, and their latency,
// measured from their intended send time, shows it: the tail holds about
// a hundred slow requests, not only the few in flight when it began (a
// closed loop with 12 clients would report at most 12).
func TestTimedReplayShowsTheStall(t *testing.T) {
	var n atomic.Int64
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 100 { // the 100th request (due at 0.99 s) stalls the server for 1 s
			mu.Lock()
			time.Sleep(time.Second)
			mu.Unlock()
		}
		mu.Lock()
		mu.Unlock()
		w.Write([]byte("{}"))
	}))
	defer srv.Close()
	var b strings.Builder
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&b, "%d.%03d /standard?fen=%d\n", 1733061558+i/100, (i%100)*10, i)
	}
	l, err := ReadLog(strings.NewReader(b.String()))
	if err != nil || len(l.Offsets) != 300 || l.Offsets[299] != 2990*time.Millisecond {
		t.Fatalf("log: %v, %d offsets", err, len(l.Offsets))
	}
	rawPath := filepath.Join(t.TempDir(), "latencies.csv")
	raw := NewCSVSink(rawPath, RawHeader())
	rep, err := RunReplay(context.Background(), ReplayOptions{Paths: l.Paths, Targets: []string{srv.URL}, Clients: 12,
		Warmup: Warmup{N: 0}, Timeout: 10 * time.Second, Raw: raw, Schedule: l.Offsets, Speed: 1})
	if err != nil {
		t.Fatal(err)
	}
	raw.Close()
	run := rep.Runs[0]
	if run.Requests != 300 || run.Dropped != 0 || run.Late == 0 {
		t.Errorf("requests %d dropped %d late %d: want 300, 0, and some late (12 clients all stuck in the stall)", run.Requests, run.Dropped, run.Late)
	}
	if run.Latency.P99 < 800 || run.Latency.Max < 900 {
		t.Errorf("p99 %.1f ms, max %.1f ms: the 1 s stall does not show in the tail", run.Latency.P99, run.Latency.Max)
	}
	f, _ := os.Open(rawPath)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) != 301 {
		t.Fatalf("latencies.csv: %d rows, %v", len(rows), err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	slow := 0
	for _, r := range rows[1:] {
		seq, _ := strconv.Atoi(r[col["seq"]])
		lat, _ := strconv.ParseFloat(r[col["latency_ms"]], 64)
		// due during the stall (0.99 s to 1.99 s): it waits until the stall ends
		if seq >= 100 && seq < 190 && lat < float64(1990-10*seq)-50 {
			t.Errorf("request %d (due at %d ms) took %.1f ms: it was scheduled during the stall", seq, 10*seq, lat)
		}
		if lat >= 100 {
			slow++
		}
	}
	if slow < 80 {
		t.Errorf("%d requests took 100 ms or more, want about 100 (all those scheduled during the stall)", slow)
	}
}
