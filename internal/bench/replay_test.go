package bench

import (
	"context"
	"encoding/csv"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestReadLogFENsAndPaths(t *testing.T) {
	log := "# comment\n8/8/8/8/8/8/8/KRk5 w - - 0 1\n\n/standard?fen=8/8/8/8/8/8/8/KQk5_w_-_-_0_1\nhttp://example.org/standard?fen=x\n"
	l, err := ReadLog(strings.NewReader(log))
	paths := l.Paths
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/standard?fen=8%2F8%2F8%2F8%2F8%2F8%2F8%2FKRk5+w+-+-+0+1", "/standard?fen=8/8/8/8/8/8/8/KQk5_w_-_-_0_1", "/standard?fen=x"}
	if strings.Join(paths, "|") != strings.Join(want, "|") {
		t.Fatalf("paths %q, want %q", paths, want)
	}
	if _, err := ReadLog(strings.NewReader("hello world\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("garbage accepted or line not named: %v", err)
	}
	if _, err := ReadLog(strings.NewReader("# only\n")); err == nil {
		t.Error("empty log accepted")
	}
}

func TestParseWarmup(t *testing.T) {
	w, err := ParseWarmup("80%")
	if err != nil || w.Of(10000) != 8000 {
		t.Fatalf("80%%: %v %d", err, w.Of(10000))
	}
	w, err = ParseWarmup("800000")
	if err != nil || w.Of(1_000_000) != 800000 {
		t.Fatalf("800000: %v %d", err, w.Of(1_000_000))
	}
	for _, bad := range []string{"100%", "-1", "x", "-5%"} {
		if _, err := ParseWarmup(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func fenLog(n int) []string {
	paths := make([]string, n)
	for i := range paths {
		paths[i] = "/standard?fen=8/8/8/8/8/8/8/KRk5_w_-_-_0_1&i=" + string(rune('a'+i%26))
	}
	return paths
}

func TestReplayReportsFailuresAndTimeouts(t *testing.T) {
	var okHits atomic.Int64
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/standard" || r.URL.Query().Get("fen") == "" {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		okHits.Add(1)
		w.Write([]byte(`{"ok":true}`))
	}))
	defer ok.Close()
	var n atomic.Int64
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%10 == 0 { // every 10th request fails
			http.Error(w, "disk on fire", http.StatusInternalServerError)
			return
		}
		w.Write([]byte(`{}`))
	}))
	defer broken.Close()
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	}))
	defer hang.Close()

	dir := t.TempDir()
	fails := NewCSVSink(filepath.Join(dir, "failures.csv"), FailureHeader())
	raw := NewCSVSink(filepath.Join(dir, "latencies.csv"), RawHeader())
	paths := fenLog(1000)
	rep, err := RunReplay(context.Background(), ReplayOptions{
		Paths: paths, Targets: []string{ok.URL, broken.URL}, Clients: 4,
		Warmup: Warmup{N: -1, Percent: 20}, Timeout: 5 * time.Second, Failures: fails, Raw: raw,
	})
	if err != nil {
		t.Fatal(err)
	}
	if okHits.Load() != 1000 {
		t.Errorf("ok target saw %d requests, want the whole log (1000)", okHits.Load())
	}
	if len(rep.Runs) != 2 {
		t.Fatalf("%d runs", len(rep.Runs))
	}
	good, bad := rep.Runs[0], rep.Runs[1]
	if good.Requests != 800 || good.Warmup != 200 || good.Failures != 0 || good.Latency.P99 <= 0 {
		t.Errorf("ok target: %+v", good)
	}
	if bad.Failures+bad.WarmupFailures != 100 || bad.Statuses["500"] != bad.Failures || bad.Failures < 70 {
		t.Errorf("broken target: failures %d + %d warm-up, statuses %v", bad.Failures, bad.WarmupFailures, bad.Statuses)
	}
	if !rep.Failed() {
		t.Error("report with 500s does not count as failed")
	}
	// failures in the warm-up only: not measured, but the run failed
	// (exit 1, docs/bench.md); it exited 0
	warmOnly := Report{Runs: []Run{{Requests: 800, Warmup: 200, WarmupFailures: 3}}}
	if !warmOnly.Failed() {
		t.Error("a report whose only failures are in the warm-up does not count as failed")
	}
	// the hanging target: every request times out, and says so
	rep2, err := RunReplay(context.Background(), ReplayOptions{
		Paths: paths[:6], Targets: []string{hang.URL}, Clients: 3, Warmup: Warmup{N: 1},
		Timeout: 100 * time.Millisecond, Failures: fails,
	})
	if err != nil {
		t.Fatal(err)
	}
	h := rep2.Runs[0]
	if h.Failures != 5 || h.Statuses["no-answer"] != 5 || h.Latency.P50 < 90 {
		t.Errorf("hanging target: %+v", h)
	}
	if err := fails.Close(); err != nil {
		t.Fatal(err)
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	recs := readCSV(t, fails.Path)
	if len(recs) != 1+100+6 {
		t.Fatalf("failures file has %d lines, want header + 106", len(recs))
	}
	var timeouts, five int
	for _, r := range recs[1:] {
		if r[3] == "500" {
			five++
		}
		if strings.Contains(r[4], "timed out") {
			timeouts++
		}
	}
	if five != 100 || timeouts != 6 {
		t.Errorf("failures file: %d 500s, %d timeouts", five, timeouts)
	}
	if n := len(readCSV(t, raw.Path)); n != 1+2000 {
		t.Errorf("latencies.csv has %d lines, want header + 2000", n)
	}

	var out strings.Builder
	if err := rep.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), fmt.Sprintf("%d of 800 measured requests FAILED", bad.Failures)) {
		t.Errorf("table hides the failures:\n%s", out.String())
	}
	if err := rep.WriteFiles(filepath.Join(dir, "out"), 30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if keep := os.Getenv("BENCH_KEEP_PLOT"); keep != "" {
		if err := rep.WriteFiles(keep, 30*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	checkPlots(t, filepath.Join(dir, "out"), "(+30ms)")
	checkPlots(t, filepath.Join(dir, "out"), fmt.Sprintf("(+30ms) [%d of 800 FAILED]", bad.Failures))
}

func TestReplayRefusesWarmupCoveringTheLog(t *testing.T) {
	_, err := RunReplay(context.Background(), ReplayOptions{Paths: fenLog(10), Targets: []string{"http://127.0.0.1:1"},
		Clients: 1, Warmup: Warmup{N: 800000}, Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "nothing left to measure") {
		t.Fatalf("err %v", err)
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// checkPlots asserts the PNG decodes, is not blank, and the SVG carries the
// legend with the offset.
func checkPlots(t *testing.T, dir, legend string) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "ecdf.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	colored := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if !(r == g && g == bl) { // a coloured curve pixel
				colored++
			}
		}
	}
	if colored < 200 {
		t.Errorf("ecdf.png has %d coloured pixels: no curves drawn", colored)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "ecdf.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(svg), legend) {
		t.Errorf("ecdf.svg lacks the legend text %q", legend)
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err != nil {
		t.Error(err)
	}
}

// Issue 16: a closed-loop replay of 12 connections runs one event loop,
// which keeps its Go processor, and one processor more for every other
// goroutine (here the in-process server's), never more (spare ones would
// spin and take CPU from a server on the same host); it sends only the
// Host header besides the request line, and GOMAXPROCS is restored after.
func TestReplayProcessorsAndHostOnly(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	if before < 2 {
		runtime.GOMAXPROCS(2)
		defer runtime.GOMAXPROCS(before)
		before = 2
	}
	var procs, requests atomic.Int64
	var extra atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		procs.Store(max(procs.Load(), int64(runtime.GOMAXPROCS(0))))
		requests.Add(1)
		for k := range r.Header {
			extra.Store(k)
		}
		w.Write([]byte("{}"))
	}))
	defer srv.Close()
	_, err := RunReplay(context.Background(), ReplayOptions{Paths: []string{"/a", "/b", "/c"}, Targets: []string{srv.URL},
		Clients: 12, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if requests.Load() != 3 {
		t.Fatalf("server saw %d requests, want 3", requests.Load())
	}
	if procs.Load() != 2 {
		t.Errorf("GOMAXPROCS %d during a 12-connection replay, want 2 (one event loop, one for the rest)", procs.Load())
	}
	if k := extra.Load(); k != nil {
		t.Errorf("replay sent header %v; want only Host", k)
	}
	if after := runtime.GOMAXPROCS(0); after != before {
		t.Errorf("GOMAXPROCS %d after the replay, was %d", after, before)
	}
	restore := replayProcs(1000) // 4 processors for 1000 connections, never more than there were
	n := runtime.GOMAXPROCS(0)
	restore()
	if n != min(before, 4) {
		t.Errorf("1000 connections: GOMAXPROCS %d, want min(%d, 4)", n, before)
	}
}
