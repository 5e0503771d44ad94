package bench

// Benchmarks of the benchmark: the harness against wrk (HTTP) and fio (disk)
// in the same run, on the same target, reported as ratios. They skip with a
// message when wrk or fio is not installed (Debian packages wrk, fio).
// Run: go test -run '^$' -bench 'VsWrk|VsFio' -benchtime 1x ./internal/bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math"
	mrand "math/rand/v2"
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
// BenchmarkReplayVsWrk, it serves {} on a loopback port until killed, so
// the server does not share the harness's process (and garbage collector).
func TestHelperTrivialServer(t *testing.T) {
	if os.Getenv(trivialServerEnv) != "1" {
		t.Skip("helper process for BenchmarkReplayVsWrk")
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

func runWrk(b *testing.B, url string, clients int, d time.Duration) (rate, p99ms float64) {
	res, err := execx.Exec{}.Run(context.Background(), "wrk", "-t2", fmt.Sprintf("-c%d", clients),
		fmt.Sprintf("-d%ds", int(d.Seconds())), "--latency", url)
	if err != nil {
		b.Fatal(err)
	}
	s := string(res.Stdout)
	wrkRate := regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkP99 := regexp.MustCompile(`\n\s+99%\s+([0-9.]+)(us|ms|s)`)
	m, l := wrkRate.FindStringSubmatch(s), wrkP99.FindStringSubmatch(s)
	if m == nil || l == nil {
		b.Fatalf("cannot read wrk's output:\n%s", s)
	}
	rate, _ = strconv.ParseFloat(m[1], 64)
	p99ms, _ = strconv.ParseFloat(l[1], 64)
	switch l[2] {
	case "us":
		p99ms /= 1000
	case "s":
		p99ms *= 1000
	}
	return rate, p99ms
}

func runHarness(b *testing.B, url string, clients int, d time.Duration) (rate, p99ms float64) {
	paths := make([]string, 300_000)
	for i := range paths {
		paths[i] = "/standard?fen=8/8/8/8/8/8/8/KRk5_w_-_-_0_1"
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	rep, err := RunReplay(ctx, ReplayOptions{Paths: paths, Targets: []string{url}, Clients: clients,
		Warmup: Warmup{N: 1000}, Timeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	r := rep.Runs[0]
	if r.Failures > 0 {
		b.Fatalf("%d failures against the trivial server: %s", r.Failures, r.FirstError)
	}
	return r.RequestsPerSec, r.Latency.P99
}

// BenchmarkReplayVsWrk: bench replay's request rate and p99 against wrk's,
// same trivial loopback server, same connections, interleaved rounds (best
// of each). Goal: at least 0.9x wrk's rate.
func BenchmarkReplayVsWrk(b *testing.B) {
	if _, err := exec.LookPath("wrk"); err != nil {
		b.Skip("wrk not installed (Debian package wrk); skipping the comparison")
	}
	url := startTrivialServer(b)
	const clients = 12
	d := 3 * time.Second
	var wr, wp, hr, hp float64
	wp, hp = math.Inf(1), math.Inf(1)
	for round := 0; round < 2; round++ {
		r, p := runWrk(b, url+"/standard?fen=8/8/8/8/8/8/8/KRk5_w_-_-_0_1", clients, d)
		wr, wp = max(wr, r), min(wp, p)
		r, p = runHarness(b, url, clients, d)
		hr, hp = max(hr, r), min(hp, p)
	}
	b.ReportMetric(hr, "harness-req/s")
	b.ReportMetric(wr, "wrk-req/s")
	b.ReportMetric(hr/wr, "rate-ratio")
	b.ReportMetric(hp, "harness-p99-ms")
	b.ReportMetric(wp, "wrk-p99-ms")
	b.Logf("bench replay %.0f req/s p99 %.3fms; wrk %.0f req/s p99 %.3fms; rate ratio %.2f (goal >= 0.9)", hr, hp, wr, wp, hr/wr)
}

// fioLat runs fio with psync 4 KiB random reads and returns its total
// latency percentiles (ms) for 50, 90, 99.
func fioLat(b *testing.B, file string, n int, cold bool) [3]float64 {
	inv := "0"
	if cold {
		inv = "1"
	}
	res, err := execx.Exec{}.Run(context.Background(), "fio", "--name=tbhost-cal", "--filename="+file, "--rw=randread",
		"--bs=4k", "--ioengine=psync", "--size=64m", fmt.Sprintf("--number_ios=%d", n), "--invalidate="+inv,
		"--lat_percentiles=1", "--clat_percentiles=0", "--percentile_list=50:90:99", "--output-format=json")
	if err != nil {
		b.Fatal(err)
	}
	var out struct {
		Jobs []struct {
			Read struct {
				Lat struct {
					Percentile map[string]float64 `json:"percentile"`
				} `json:"lat_ns"`
				IOs int64 `json:"total_ios"`
			} `json:"read"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(res.Stdout, &out); err != nil || len(out.Jobs) == 0 {
		b.Fatalf("cannot read fio's JSON: %v\n%s", err, res.Stdout)
	}
	p := out.Jobs[0].Read.Lat.Percentile
	return [3]float64{p["50.000000"] / 1e6, p["90.000000"] / 1e6, p["99.000000"] / 1e6}
}

// harnessLat times n 4 KiB random preads on file with the probe harness
// (Drive, HDR histogram, one client), the same work as fioLat.
func harnessLat(b *testing.B, file string, n int, cold bool) [3]float64 {
	f, err := os.Open(file)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if cold {
		if err := evict(file); err != nil {
			b.Fatal(err)
		}
	}
	rng := mrand.New(mrand.NewPCG(1, 2))
	buf := make([]byte, 4096)
	blocks := int64(64 << 20 / 4096)
	res, err := Drive(context.Background(), Load{Clients: 1, Requests: int64(n)}, func(context.Context, int, int64) Outcome {
		if _, err := f.ReadAt(buf, rng.Int64N(blocks)*4096); err != nil {
			return Outcome{Err: err}
		}
		return Outcome{Reads: 1}
	}, nil)
	if err != nil {
		b.Fatal(err)
	}
	s := summarize(res.OK)
	return [3]float64{s.P50, s.P90, s.P99}
}

// BenchmarkProbeVsFio: the probe harness's latency percentiles for 4 KiB
// random reads against fio's for the same number of reads on the same
// file, from the page cache (harness overhead) and after eviction (disk).
// Five interleaved rounds, best of each side per percentile (the machine
// is shared: a neighbour's burst should not decide). Goal: within 10 %.
func BenchmarkProbeVsFio(b *testing.B) {
	if _, err := exec.LookPath("fio"); err != nil {
		b.Skip("fio not installed (Debian package fio); skipping the comparison")
	}
	file := filepath.Join(b.TempDir(), "fio-calibration.bin")
	data := make([]byte, 64<<20)
	rand.Read(data)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		b.Fatal(err)
	}
	data = nil
	best := func(acc *[3]float64, v [3]float64) {
		for i := range acc {
			if acc[i] == 0 || v[i] < acc[i] {
				acc[i] = v[i]
			}
		}
	}
	for _, cold := range []bool{false, true} {
		name, n := "cached", 100000
		if cold {
			name, n = "cold", 3000
		}
		if !cold {
			harnessLat(b, file, n, false) // read everything into the cache once
		}
		var fio, h [3]float64
		for round := 0; round < 5; round++ {
			if cold {
				if err := evict(file); err != nil {
					b.Fatal(err)
				}
			}
			if round%2 == 0 {
				best(&fio, fioLat(b, file, n, cold))
				best(&h, harnessLat(b, file, n, cold))
			} else {
				best(&h, harnessLat(b, file, n, cold))
				if cold {
					evict(file)
				}
				best(&fio, fioLat(b, file, n, cold))
			}
		}
		for i, q := range []string{"p50", "p90", "p99"} {
			b.ReportMetric(h[i]/fio[i], name+"-"+q+"-ratio")
		}
		b.Logf("%s 4KiB random reads x %d: harness p50/p90/p99 %.4f/%.4f/%.4f ms; fio %.4f/%.4f/%.4f ms; ratios %.2f/%.2f/%.2f (goal 0.9-1.1)",
			name, n, h[0], h[1], h[2], fio[0], fio[1], fio[2], h[0]/fio[0], h[1]/fio[1], h[2]/fio[2])
	}
}
