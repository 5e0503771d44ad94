package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/bench"
	"github.com/tbhost/tbhost/internal/cliutil"
)

// Issue 17 item 2, the cutover gate: two bench serve targets over the
// same tables, one slowed by a known delay (bench serve --delay). The gate
// exits 1 naming the percentile and both figures when the new host is the
// slow one; with equal targets (or generous limits) it exits 0.
func TestBenchReplayGate(t *testing.T) {
	tg, tables := builtInTarget(t)
	// Latencies of a few µs would make any relative gate noise, and on a
	// loaded machine a request's tail can grow by 200 ms: every target
	// answers after a known delay much larger than that (300 ms), the slow
	// one 4x later, and the gates leave a 2x margin.
	fast := httptest.NewServer(bench.Delayed(tg, 300*time.Millisecond))
	defer fast.Close()
	fast2 := httptest.NewServer(bench.Delayed(tg, 300*time.Millisecond))
	defer fast2.Close()
	slow := httptest.NewServer(bench.Delayed(tg, 1200*time.Millisecond))
	defer slow.Close()
	log := filepath.Join(t.TempDir(), "fens.log")
	if code, _, stderr := runTB(t, nil, "bench", "fens", "--tables", tables, "--count", "40", "-o", log); code != 0 {
		t.Fatalf("fens: %d %s", code, stderr)
	}
	replay := func(args ...string) (int, bench.Report, string) {
		t.Helper()
		code, out, stderr := runTB(t, nil, append([]string{"--json", "bench", "replay", "--log", log, "--clients", "4", "--warmup", "8"}, args...)...)
		var rep bench.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("not one JSON document: %v\n%s", err, out)
		}
		return code, rep, stderr
	}

	// the new host is 900 ms slower on every request: p99 and p99.9 fail
	code, rep, stderr := replay("--target", "old="+fast.URL, "--target", "new="+slow.URL, "--gate", "p99<=2.0*old", "--gate", "p99.9<=2.0*old")
	if code != cliutil.ExitProblem || len(rep.Gates) != 2 {
		t.Fatalf("slow new host: exit %d, gates %+v, stderr %s", code, rep.Gates, stderr)
	}
	for _, g := range rep.Gates {
		if g.Pass || g.Target != "new" || g.Ref != "old" || g.ValueMs < 1200 || g.RefMs < 300 || g.RefMs >= g.ValueMs {
			t.Errorf("gate %+v: want a failure of new (>= 1200 ms) against old (>= 300 ms)", g)
		}
	}
	if !strings.Contains(stderr, "p99 new") || !strings.Contains(stderr, "vs old") {
		t.Errorf("the error does not name the percentile and both figures: %s", stderr)
	}
	// equal targets (two servers, the same tables and delay) pass the same
	// gates; an absolute gate is checked on both targets
	code, rep, stderr = replay("--target", "old="+fast.URL, "--target", "new="+fast2.URL, "--gate", "p99<=2.0*old", "--gate", "p99.9<=2.0*old", "--gate", "p50<=5s")
	if code != 0 || len(rep.Gates) != 4 {
		t.Errorf("equal targets: exit %d, gates %+v, %s", code, rep.Gates, stderr)
	}
	for _, g := range rep.Gates {
		if !g.Pass {
			t.Errorf("equal targets: %s", g.Message)
		}
	}
	// the human table has a line per gate checked
	code, text, _ := runTB(t, nil, "bench", "replay", "--log", log, "--clients", "4", "--warmup", "8",
		"--target", "old="+fast.URL, "--target", "new="+fast2.URL, "--gate", "p50<=1ms")
	if code != cliutil.ExitProblem || !strings.Contains(text, "gate FAIL p50<=1ms FAILS: p50 new") || !strings.Contains(text, "gate FAIL p50<=1ms FAILS: p50 old") {
		t.Errorf("exit %d, table without the gate lines:\n%s", code, text)
	}

	// a gate naming no target, or comparing with one target only: usage errors, nothing sent
	for _, args := range [][]string{
		{"--target", "old=" + fast.URL, "--target", "new=" + slow.URL, "--gate", "p99<=1.0*olld"},
		{"--target", "old=" + fast.URL, "--gate", "p99<=1.0*old"},
		{"--target", "old=" + fast.URL, "--target", "old=" + slow.URL},
		{"--target", fast.URL, "--gate", "p98<=1ms"},
	} {
		if code, _, stderr := runTB(t, nil, append([]string{"bench", "replay", "--log", log}, args...)...); code != cliutil.ExitUsage {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, stderr)
		}
	}
	os.Remove("bench-failures.csv")
}
