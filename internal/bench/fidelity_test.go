package bench

// Fidelity of the probe harness against fio (issue 16): the same file, the
// same pattern (4 KiB random reads, POSIX_FADV_RANDOM / MADV_RANDOM as fio's
// default fadvise_hint gives), the same concurrency (12 clients: 12 fio
// threads), warm and cold, pread (fio psync) and mmap (fio mmap). The ratio
// of each percentile is taken over 5 alternating pairs and the median
// printed. Run: go test -run '^$' -bench 'RatioProbe' -benchtime 1x ./internal/bench

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tbhost/tbhost/internal/execx"
)

const (
	fidelityClients = 12
	fidelityFile    = 256 << 20 // 65536 pages: a cold run of a few thousand reads stays cold
)

// pcts are the percentiles compared, q: p50, p99, p99.9 (ms); and p99.8
// and p99.95 around the p99.9, printed to show how steep the tail is there
// (for both tools it rises ~10x between them, so a p99.9 ratio swings with
// a few hundredths of a percent more or fewer slow reads).
type pcts struct {
	q           [3]float64
	p998, p9995 float64
	// the harness only: mean latency and the clients' wait for a CPU per
	// read (Result.CPU), in ms
	mean, cpuWait float64
}

var pctNames = [3]string{"p50", "p99", "p99.9"}

// fioRandRead runs fio: clients threads, each n/clients 4 KiB random reads
// of file with engine (psync or mmap); cold invalidates the file's cache.
// extra are more fio options (--clocksource=clock_gettime).
func fioRandRead(tb testing.TB, file, engine string, n int, cold bool, extra ...string) pcts {
	inv := "0"
	if cold {
		inv = "1"
	}
	args := append([]string{"--name=tbhost-fidelity", "--filename=" + file,
		"--rw=randread", "--bs=4k", "--ioengine=" + engine, "--thread", fmt.Sprintf("--numjobs=%d", fidelityClients),
		"--group_reporting", fmt.Sprintf("--size=%d", fidelityFile), fmt.Sprintf("--number_ios=%d", n/fidelityClients),
		"--invalidate=" + inv, "--norandommap", "--lat_percentiles=1", "--clat_percentiles=0",
		"--percentile_list=50:99:99.8:99.9:99.95", "--output-format=json"}, extra...)
	res, err := execx.Exec{}.Run(context.Background(), append([]string{"fio"}, args...)...)
	if err != nil {
		tb.Fatal(err)
	}
	var out struct {
		Jobs []struct {
			Read struct {
				Lat struct {
					Percentile map[string]float64 `json:"percentile"`
				} `json:"lat_ns"`
			} `json:"read"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(res.Stdout, &out); err != nil || len(out.Jobs) == 0 {
		tb.Fatalf("cannot read fio's JSON: %v\n%s", err, res.Stdout)
	}
	p := out.Jobs[0].Read.Lat.Percentile
	return pcts{q: [3]float64{p["50.000000"] / 1e6, p["99.000000"] / 1e6, p["99.900000"] / 1e6},
		p998: p["99.800000"] / 1e6, p9995: p["99.950000"] / 1e6}
}

// harnessRandRead is the same work through the probe harness: Drive with
// the probe's load settings (a processor per client), the probe's file
// readers (openFile), one 4 KiB read per request.
func harnessRandRead(tb testing.TB, file string, how IO, n int, cold bool) pcts {
	if cold {
		if err := evict(file); err != nil {
			tb.Fatal(err)
		}
	}
	// One reader per client, as each fio thread has its own descriptor or
	// mapping (fio's mmap engine maps the file per job).
	rs := make([]io.ReaderAt, fidelityClients)
	bufs := make([][]byte, fidelityClients)
	for i := range rs {
		r, cl, err := openFile(file, how, AdviseRandom, true) // as bench probe reads: one client per thread, one probe at a time
		if err != nil {
			tb.Fatal(err)
		}
		defer cl.Close()
		rs[i] = r
		bufs[i] = make([]byte, 4096)
	}
	// Every read's offset is drawn before the run, as fio draws an I/O's
	// offset before it starts that I/O's clock: the random number
	// generator is the test's, not the harness's.
	offsets := randomOffsets(n, fidelityFile/4096)
	// Each client makes n/clients reads and stops, as each fio job makes
	// its --number_ios: fio's jobs end at different times (job runtimes
	// 332-401 ms in one cold run), so the end of its run has fewer reads
	// in flight. With one shared count all twelve clients stayed busy to
	// the end, and the harness's cold mmap p99 was 1.17-1.40x fio's
	// against 1.00-1.13x split evenly in three series of 12 rounds (pread
	// 1.07-1.21 either way).
	res, err := Drive(context.Background(), probeLoad(Load{Clients: fidelityClients, Requests: int64(n), SplitEvenly: true}), func(_ context.Context, c int, seq int64) Outcome {
		if _, err := rs[c].ReadAt(bufs[c], offsets[seq]); err != nil {
			return Outcome{Err: err}
		}
		return Outcome{Reads: 1}
	}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if res.Failures > 0 {
		tb.Fatalf("%d reads failed: %s", res.Failures, res.FirstError)
	}
	s := summarize(res.OK)
	p := pcts{q: [3]float64{s.P50, s.P99, s.P999},
		p998: nsToMs(float64(res.OK.ValueAtQuantile(99.8))), p9995: nsToMs(float64(res.OK.ValueAtQuantile(99.95))), mean: s.Mean}
	if res.CPUMeasured {
		p.cpuWait = nsToMs(float64(res.CPU.Wait) / float64(n))
	}
	return p
}

// randomOffsets are n offsets of 4 KiB pages drawn uniformly from pages,
// the same for every run of a given n.
func randomOffsets(n, pages int) []int64 {
	rng := mrand.New(mrand.NewPCG(uint64(n), uint64(pages)))
	offsets := make([]int64, n)
	for i := range offsets {
		offsets[i] = rng.Int64N(int64(pages)) * 4096
	}
	return offsets
}

// medianRatios runs 5 alternating pairs (harness first, then fio first)
// and returns the median of each percentile's ratio, every pair's ratios
// and the last pair.
func medianRatios(pairs int, a, b func() pcts) (ratio [3]float64, all [3][]float64, lastA, lastB pcts) {
	var rs [3][]float64
	for i := 0; i < pairs; i++ {
		var x, y pcts
		if i%2 == 0 {
			x, y = a(), b()
		} else {
			y, x = b(), a()
		}
		for k := range rs {
			rs[k] = append(rs[k], x.q[k]/y.q[k])
		}
		lastA, lastB = x, y
	}
	for k := range rs {
		ratio[k] = median(rs[k])
	}
	return ratio, rs, lastA, lastB
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// fidelityFixture is the compared file, for a comparison with fio: it
// skips when fio is not installed.
func fidelityFixture(tb testing.TB) string {
	if _, err := exec.LookPath("fio"); err != nil {
		tb.Skip("fio not installed (Debian package fio; make deps installs it); skipping the comparison")
	}
	return randomFile(tb)
}

// randomFile writes fidelityFile bytes of random data to a temporary file.
func randomFile(tb testing.TB) string {
	file := filepath.Join(tb.TempDir(), "fidelity.bin")
	f, err := os.Create(file)
	if err != nil {
		tb.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for i := 0; i < fidelityFile/len(buf); i++ {
		rand.Read(buf)
		if _, err := f.Write(buf); err != nil {
			tb.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return file
}

// cacheWholeFile drops file from the page cache, reads it whole and checks
// with mincore that every page is resident, so that every warm run, pread
// or mmap, starts from the same cache: the whole file, as a sequential
// read leaves it. Warm runs used to start after one random pass of the
// run's own reads. After a cold run had evicted the file that left 1.9 %
// of its pages out (TestCacheWholeFileAfterEviction) and the rest in pages
// that a mapping faults in one at a time: with mmap-warm run after
// pread-cold (make bench's order) the harness's mmap p99.9 was 1.2-2.6x
// fio's in every run, with a p99 of 6-7 us for both tools. From this fill:
// 0.95-1.05, and a p99 of ~1 us for both.
//
// Whatever empties the whole page cache between the read and the check
// (in `go test ./...`, prefix's cold-read test writes drop_caches while
// this package runs: 512 pages gone in one CI run) is answered by reading
// the file again, up to three times in all.
func cacheWholeFile(tb testing.TB, file string) {
	if err := evict(file); err != nil {
		tb.Fatal(err)
	}
	var out, pages int
	for try := 0; try < 3; try++ {
		if err := readWhole(file); err != nil {
			tb.Fatal(err)
		}
		var err error
		if out, pages, err = pagesNotCached(file); err != nil {
			tb.Fatal(err)
		}
		if out == 0 {
			return
		}
	}
	tb.Fatalf("%s: %d of %d pages not in the page cache after reading it whole three times; a warm run would read them from the disk", file, out, pages)
}

func readWhole(file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.Copy(io.Discard, f); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}

// pagesNotCached counts file's pages that are not in the page cache
// (mincore over a read-only mapping) and returns it with the page count.
func pagesNotCached(file string) (out, pages int, err error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	if fi.Size() == 0 {
		return 0, 0, nil // nothing to map (mmap refuses a length of 0)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: mmap: %w", file, err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return 0, 0, fmt.Errorf("%s: mincore: %w", file, e)
	}
	for _, v := range vec {
		if v&1 == 0 {
			out++
		}
	}
	return out, len(vec), nil
}

// A warm fidelity run starts with the whole file cached, even after a cold
// run evicted it; one random pass of the run's size (the old fill) does
// not get there.
func TestCacheWholeFileAfterEviction(t *testing.T) {
	file := randomFile(t) // no fio needed
	if err := evict(file); err != nil {
		t.Fatal(err)
	}
	harnessRandRead(t, file, IOPread, 240000, false) // the old fill
	out, pages, err := pagesNotCached(file)
	if err != nil {
		t.Fatal(err)
	}
	if out == 0 {
		t.Skipf("%s: evicting did not drop any of its %d pages (a file system without POSIX_FADV_DONTNEED?)", file, pages)
	}
	t.Logf("after one random pass of 240,000 reads: %d of %d pages not cached (%.1f %%)", out, pages, 100*float64(out)/float64(pages))
	cacheWholeFile(t, file)
	if out, _, err = pagesNotCached(file); err != nil || out != 0 {
		t.Fatalf("after cacheWholeFile: %d pages not cached (%v)", out, err)
	}
}

// BenchmarkRatioProbeVsFio prints, for pread and mmap, warm and cold, the
// median over 5 alternating pairs of harness/fio at p50, p99, p99.9.
// Goal: each within 0.9-1.1. A baseline line prints the same median for 5
// pairs of fio runs against each other, the noise floor of that goal.
func BenchmarkRatioProbeVsFio(b *testing.B) {
	file := fidelityFixture(b)
	floor, floorErr := buildCLoop(b)
	for _, how := range []IO{IOPread, IOMmap} {
		engine := map[IO]string{IOPread: "psync", IOMmap: "mmap"}[how]
		for _, cold := range []bool{false, true} {
			// 10x the reads (2.4 M warm, 96,000 cold in a 1 GiB file)
			// did not steady the p99.9: one run's pairs still spread
			// 0.19-1.32 warm, 0.45-1.81 cold (docs/performance.md)
			name, n := "warm", 240000
			if cold {
				name, n = "cold", 24000
			}
			b.Run(string(how)+"-"+name, func(b *testing.B) {
				if !cold {
					cacheWholeFile(b, file)
				}
				ratio, all, h, f := medianRatios(5, func() pcts { return harnessRandRead(b, file, how, n, cold) },
					func() pcts { return fioRandRead(b, file, engine, n, cold) })
				for k, q := range pctNames {
					b.ReportMetric(ratio[k], q+"-ratio")
				}
				b.Logf("RATIO probe/fio %s %s (%d clients, %d 4KiB random reads): p50 %.2f p99 %.2f p99.9 %.2f (median of 5 pairs; last pair harness %s, fio %s; goal 0.9-1.1)",
					how, name, fidelityClients, n, ratio[0], ratio[1], ratio[2], fmtPcts(h), fmtPcts(f))
				b.Logf("pairs probe/fio %s %s: p50 %s, p99 %s, p99.9 %s", how, name, fmtRatios(all[0]), fmtRatios(all[1]), fmtRatios(all[2]))
				b.Logf("tail probe/fio %s %s, last pair, harness/fio: p99.8 %s/%s, p99.9 %s/%s, p99.95 %s/%s (information: how steep the tail is at the p99.9)",
					how, name, formatMs(h.p998), formatMs(f.p998), formatMs(h.q[2]), formatMs(f.q[2]), formatMs(h.p9995), formatMs(f.p9995))
				if h.cpuWait > 0 {
					b.Logf("cpu probe/fio %s %s, last pair: the harness's clients waited for a CPU %s per read against a mean latency of %s (information: their threads' run-queue wait, in a read or between two; fio's threads queue for the same CPUs)",
						how, name, formatMs(h.cpuWait), formatMs(h.mean))
				}
				// the same measure with fio on both sides: how far the
				// median of 5 pairs strays from 1.0 when nothing differs
				fio := func() pcts { return fioRandRead(b, file, engine, n, cold) }
				aa, aaAll, _, _ := medianRatios(5, fio, fio)
				b.Logf("baseline fio/fio %s %s: p50 %.2f p99 %.2f p99.9 %.2f (median of 5 pairs of fio runs, the same measure with nothing different; pairs p50 %s, p99 %s, p99.9 %s; information: the noise floor of the goal above)",
					how, name, aa[0], aa[1], aa[2], fmtRatios(aaAll[0]), fmtRatios(aaAll[1]), fmtRatios(aaAll[2]))
				// the floor: the same reads from plain pthreads (cloop.c)
				if floor == nil {
					b.Logf("floor probe/C-loop %s %s: skipped: %v", how, name, floorErr)
				} else {
					cl := func() pcts { return floor.randRead(b, file, how, n, cold) }
					hc, hcAll, _, lastC := medianRatios(5, func() pcts { return harnessRandRead(b, file, how, n, cold) }, cl)
					fc, fcAll, _, _ := medianRatios(5, fio, cl)
					b.Logf("floor probe/C-loop %s %s: p50 %.2f p99 %.2f p99.9 %.2f; fio/C-loop p50 %.2f p99 %.2f p99.9 %.2f (median of 5 pairs each; pairs p99 probe %s, fio %s; last C loop %s; information: what each adds over the same reads from 12 pthreads with no runtime, testdata/cloop/cloop.c)",
						how, name, hc[0], hc[1], hc[2], fc[0], fc[1], fc[2], fmtRatios(hcAll[1]), fmtRatios(fcAll[1]), fmtPcts(lastC))
				}
				if !cold {
					// A warm read takes 0.5-2 us, and the stopwatch is part
					// of it: fio times with the CPU's TSC, the harness with
					// clock_gettime (time.Now, time.Since). fio with the
					// harness's clock shows how much of the p50 that is.
					fioClock := func() pcts { return fioRandRead(b, file, engine, n, cold, "--clocksource=clock_gettime") }
					cr, crAll, _, fc := medianRatios(5, func() pcts { return harnessRandRead(b, file, how, n, cold) }, fioClock)
					b.Logf("clock probe/fio %s %s: harness / fio timing with clock_gettime, the harness's clock: p50 %.2f p99 %.2f (median of 5 pairs; pairs p50 %s; last fio %s; information: what the stopwatch is of a read under a microsecond)",
						how, name, cr[0], cr[1], fmtRatios(crAll[0]), fmtPcts(fc))
				}
			})
		}
	}
}

func fmtRatios(v []float64) string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strings.Join(out, " ")
}

func fmtPcts(p pcts) string {
	return strconv.FormatFloat(p.q[0]*1000, 'f', 1, 64) + "/" + strconv.FormatFloat(p.q[1]*1000, 'f', 1, 64) + "/" +
		strconv.FormatFloat(p.q[2]*1000, 'f', 1, 64) + " us"
}
