package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFenMaterial(t *testing.T) {
	for fen, want := range map[string]string{
		"8/8/8/8/8/8/8/KRk5 w - - 0 1":     "KRvK",
		"4k3/8/8/8/8/8/4P3/4K2R w K - 0 1": "KRPvK",
		"r3k3/1p6/8/8/8/8/8/4K3 b - - 0 1": "KvKRP",
		"8/8/8/8/8/8/8/KQkq5":              "KQvKQ",
	} {
		got, err := fenMaterial(fen)
		if err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", fen, got, err, want)
		}
	}
	for _, bad := range []string{"", "8/8/8 w", "8/8/8/8/8/8/8/KRk4x w", "8/8/8/8/8/8/8/KR6 w"} {
		if _, err := fenMaterial(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func newRealTarget(t *testing.T, store bool, mix Mix) (*Target, string) {
	t.Helper()
	tables, storeDir := copyTables(t)
	set, err := LoadTables(context.Background(), []string{tables})
	if err != nil {
		t.Fatal(err)
	}
	c := ProbeConfig{IO: IOPread, Advise: AdviseNormal, Parallel: 1}
	if store {
		c.Store = storeDir
	}
	tg, err := NewTarget(set, c, mix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	srv := httptest.NewServer(tg) // listens on 127.0.0.1 only
	t.Cleanup(srv.Close)
	return tg, srv.URL
}

func TestBuiltInTargetAnswers(t *testing.T) {
	_, url := newRealTarget(t, true, DefaultMix())
	get := func(q string) (int, map[string]any) {
		resp, err := http.Get(url + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	code, m := get("/standard?fen=8/8/8/8/8/8/8/KRk5_w_-_-_0_1")
	if code != 200 || m["material"] != "KRvK" || m["probes"].(float64) != 93 || m["slow_reads"].(float64) != 93 {
		t.Errorf("KRvK: %d %v (want 93 probes, one slow read each through the store)", code, m)
	}
	if code, m = get("/standard?fen=8/8/8/8/8/8/8/krK5_b_-_-_0_1"); code != 200 || m["material"] != "KRvK" {
		t.Errorf("colour-swapped KRvK: %d %v", code, m)
	}
	if code, _ = get("/standard?fen=8/8/8/8/8/8/8/KQQQk3_w_-_-_0_1"); code != 404 {
		t.Errorf("unknown material: %d, want 404", code)
	}
	if code, _ = get("/standard?fen=garbage"); code != 400 {
		t.Errorf("bad FEN: %d, want 400", code)
	}
}

// The acceptance run: a generated 10,000-line FEN log replayed against the
// built-in target on 127.0.0.1, warm-up excluded, percentiles, ECDF, and a
// failures file that names the requests the target refused.
func TestReplayTenThousandFENsAgainstBuiltInTarget(t *testing.T) {
	// a light mix keeps the 10,000 requests within seconds on 2 cores: this
	// test is about the replay, not the cost of a probe
	tg, url := newRealTarget(t, false, Mix{WDL: 1, DTZ: 2})
	var log bytes.Buffer
	if err := WriteFENs(&log, tg.Materials(), 10000, 1); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(log.String(), "\n"); n != 10000 {
		t.Fatalf("%d lines", n)
	}
	// three lines the target cannot serve (material not in the set)
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	for _, i := range []int{9000, 9500, 9999} {
		lines[i] = "8/8/8/8/8/8/8/KQQQk3 w - - 0 1"
	}
	rl, err := ReadLog(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	paths := rl.Paths
	dir := t.TempDir()
	fails := NewCSVSink(filepath.Join(dir, "failures.csv"), FailureHeader())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := RunReplay(ctx, ReplayOptions{Paths: paths, Targets: []string{url}, Clients: 4,
		Warmup: Warmup{N: -1, Percent: 80}, Timeout: 10 * time.Second, Failures: fails})
	if err != nil {
		t.Fatal(err)
	}
	if err := fails.Close(); err != nil {
		t.Fatal(err)
	}
	r := rep.Runs[0]
	if r.StoppedEarly != "" {
		t.Fatal(r.StoppedEarly)
	}
	if r.Requests != 2000 || r.Warmup != 8000 {
		t.Errorf("measured %d after %d warm-up, want 2000 after 8000", r.Requests, r.Warmup)
	}
	if r.Failures != 3 || r.Statuses["404"] != 3 || r.Statuses["200"] != 1997 {
		t.Errorf("failures %d statuses %v, want the 3 unknown materials as 404", r.Failures, r.Statuses)
	}
	l := r.Latency
	if !(l.P50 > 0 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
		t.Errorf("percentiles out of order: %+v", l)
	}
	recs := readCSV(t, fails.Path)
	if len(recs) != 4 || recs[1][3] != "404" || !strings.Contains(recs[1][2], "KQQQk3") {
		t.Errorf("failures file: %v", recs)
	}
	if err := rep.WriteFiles(filepath.Join(dir, "out"), 30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	checkPlots(t, filepath.Join(dir, "out"), "(+30ms)")
	var sum Report
	b, _ := os.ReadFile(filepath.Join(dir, "out", "summary.json"))
	if err := json.Unmarshal(b, &sum); err != nil || sum.Runs[0].Requests != 2000 || sum.OffsetMs != 30 {
		t.Errorf("summary.json: %v %+v", err, sum.Runs)
	}
}
