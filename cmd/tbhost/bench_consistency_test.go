package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/bench"
	"github.com/tbhost/tbhost/internal/realdata"
)

// Issue 18: `bench replay --json` said offset_ms 0 without --out and 30
// with it, while the default is 30 ms: it reports the offset in effect.
func TestBenchReplayJSONReportsTheOffsetInEffect(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("{}")) }))
	defer srv.Close()
	dir := t.TempDir()
	log := filepath.Join(dir, "req.log")
	os.WriteFile(log, []byte(strings.Repeat("/standard?fen=8/8/8/8/8/8/8/KRk5_w_-_-_0_1\n", 20)), 0o644)
	for _, c := range []struct {
		args []string
		want float64
	}{
		{nil, 30},
		{[]string{"--out", filepath.Join(dir, "out")}, 30},
		{[]string{"--offset", "0"}, 0},
		{[]string{"--offset", "12ms", "--out", filepath.Join(dir, "out2")}, 12},
	} {
		args := append([]string{"bench", "replay", "--log", log, "--target", srv.URL, "--clients", "2", "--warmup", "5", "--json"}, c.args...)
		code, stdout, stderr := runTB(t, nil, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", c.args, code, stderr)
		}
		var rep bench.Report
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("%v: %v\n%s", c.args, err, stdout)
		}
		if rep.OffsetMs != c.want {
			t.Errorf("%v: offset_ms %v, want %v (the offset in effect)", c.args, rep.OffsetMs, c.want)
		}
	}
}

// Issue 18: bench probe defaulted to --cache drop, which empties the whole
// host's page cache; the safe evict is the default now (drop stays).
func TestBenchProbeDefaultsToEvict(t *testing.T) {
	tables := realdata.CopyTables(t)
	code, stdout, stderr := runTB(t, nil, "bench", "probe", "--tables", tables, "--requests", "20", "--warmup", "5", "--clients", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 || rep.Runs[0].Cache == nil || rep.Runs[0].Cache.Mode != bench.CacheEvict {
		t.Fatalf("default cache mode: %+v, want evict", rep.Runs[0].Cache)
	}
	if _, err := bench.ParseCacheMode("drop"); err != nil {
		t.Errorf("--cache drop must stay available: %v", err)
	}
}
