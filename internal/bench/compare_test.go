package bench

// Benchmarks of the benchmark: the harness against wrk (HTTP) and fio (disk)
// in the same run, on the same target, reported as ratios. They skip with a
// message when wrk or fio is not installed (Debian packages wrk, fio).
// Run: go test -run '^$' -bench 'Ratio' -benchtime 1x ./internal/bench
// (fidelity_test.go has the fio side)

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/execx"
)

const trivialServerEnv = "TBHOST_BENCH_TRIVIAL_SERVER"

// TestHelperTrivialServer is not a test: run as a child process by
// BenchmarkRatioReplayVsWrk, it serves {} on a loopback port until killed, so
// the server does not share the harness's process (and garbage collector).
func TestHelperTrivialServer(t *testing.T) {
	if os.Getenv(trivialServerEnv) != "1" {
		t.Skip("helper process for BenchmarkRatioReplayVsWrk")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(ln.Addr().String())
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("{}\n"))
	}))
}

func startTrivialServer(b *testing.B) string {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperTrivialServer$", "-test.v=false")
	cmd.Env = append(os.Environ(), trivialServerEnv+"=1", "GOMAXPROCS=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cancel(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("trivial server did not start: %v", err)
	}
	return "http://" + strings.TrimSpace(line)
}

// wrkResult is what wrk measured: rate (req/s), p50 and p99 (ms).
type wrkResult struct{ rate, p50, p99 float64 }

func runWrk(b *testing.B, url string, clients int, d time.Duration) wrkResult {
	res, err := execx.Exec{}.Run(context.Background(), "wrk", "-t2", fmt.Sprintf("-c%d", clients),
		fmt.Sprintf("-d%ds", int(d.Seconds())), "--latency", url)
	if err != nil {
		b.Fatal(err)
	}
	s := string(res.Stdout)
	if m := regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`).FindStringSubmatch(s); m != nil {
		b.Fatalf("wrk got %s error answers from %s:\n%s", m[1], url, s)
	}
	m := regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`).FindStringSubmatch(s)
	if m == nil {
		b.Fatalf("cannot read wrk's output:\n%s", s)
	}
	var out wrkResult
	out.rate, _ = strconv.ParseFloat(m[1], 64)
	for _, q := range []struct {
		re  string
		dst *float64
	}{{`\n\s+50%\s+([0-9.]+)(us|ms|s)`, &out.p50}, {`\n\s+99%\s+([0-9.]+)(us|ms|s)`, &out.p99}} {
		l := regexp.MustCompile(q.re).FindStringSubmatch(s)
		if l == nil {
			b.Fatalf("cannot read wrk's latency distribution:\n%s", s)
		}
		v, _ := strconv.ParseFloat(l[1], 64)
		switch l[2] {
		case "us":
			v /= 1000
		case "s":
			v *= 1000
		}
		*q.dst = v
	}
	return out
}

func runHarness(b *testing.B, url, path string, clients int, d time.Duration) wrkResult {
	paths := make([]string, 600_000)
	for i := range paths {
		paths[i] = path
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	rep, err := RunReplay(ctx, ReplayOptions{Paths: paths, Targets: []string{url}, Clients: clients,
		Warmup: Warmup{N: 200}, Timeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	r := rep.Runs[0]
	if r.Failures > 0 {
		b.Fatalf("%d failures against %s: %s", r.Failures, url, r.FirstError)
	}
	return wrkResult{r.RequestsPerSec, r.Latency.P50, r.Latency.P99}
}

// startPythonServer runs `python3 -m http.server` (it answers HTTP/1.0 and
// closes every connection) serving a small file at /standard.
func startPythonServer(b *testing.B) string {
	py, err := exec.LookPath("python3")
	if err != nil {
		b.Skip("python3 not installed; skipping the connection-per-request comparison")
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "standard"), []byte("{\"wdl\":0}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, py, "-m", "http.server", "--bind", "127.0.0.1", "--directory", dir, strconv.Itoa(port))
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cancel(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatalf("python3 -m http.server did not start on %s", addr)
	return ""
}

// BenchmarkRatioReplayVsWrk: bench replay against wrk, same server, same
// 12 connections, 5 alternating pairs of 3 s runs; prints the median ratio
// of rate (goal >= 1.0), p50 and p99 (goal: agree) for a keep-alive server
// (trivial Go server in a child process) and for `python3 -m http.server`,
// which closes every connection.
func BenchmarkRatioReplayVsWrk(b *testing.B) {
	if _, err := exec.LookPath("wrk"); err != nil {
		b.Skip("wrk not installed (Debian package wrk; make deps installs it); skipping the comparison")
	}
	const clients = 12
	const path = "/standard?fen=8/8/8/8/8/8/8/KRk5_w_-_-_0_1"
	for _, srv := range []struct {
		name  string
		start func(*testing.B) string
	}{{"keep-alive", startTrivialServer}, {"python-http.server", startPythonServer}} {
		b.Run(srv.name, func(b *testing.B) {
			url := srv.start(b)
			d := 3 * time.Second
			var rate, p50, p99 []float64
			var h, w wrkResult
			for pair := 0; pair < 5; pair++ {
				if pair%2 == 0 {
					h, w = runHarness(b, url, path, clients, d), runWrk(b, url+path, clients, d)
				} else {
					w, h = runWrk(b, url+path, clients, d), runHarness(b, url, path, clients, d)
				}
				rate, p50, p99 = append(rate, h.rate/w.rate), append(p50, h.p50/w.p50), append(p99, h.p99/w.p99)
			}
			rr, r50, r99 := median(rate), median(p50), median(p99)
			b.ReportMetric(rr, "rate-ratio")
			b.ReportMetric(r50, "p50-ratio")
			b.ReportMetric(r99, "p99-ratio")
			b.Logf("RATIO replay/wrk %s (%d connections): rate %.2f p50 %.2f p99 %.2f (median of 5 pairs; last pair replay %.0f req/s p50 %.3fms p99 %.3fms, wrk %.0f req/s p50 %.3fms p99 %.3fms; goal rate >= 1.0)",
				srv.name, clients, rr, r50, r99, h.rate, h.p50, h.p99, w.rate, w.p50, w.p99)
		})
	}
}
