package integrity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/execx"
)

// Performance claims, each measured against its baseline in the same run
// (the machine is shared and noisy): run with
//   go test -run '^$' -bench . -benchtime 3x ./integrity/

func benchFile(b *testing.B, dir string, size int64) string {
	b.Helper()
	p := filepath.Join(dir, "image")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 4<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	for w := int64(0); w < size; w += int64(len(buf)) {
		f.Write(buf)
	}
	f.Close()
	return p
}

// BenchmarkScrubVsDD: unthrottled scrub read of one image against
// `dd iflag=direct bs=4M` over the same file, alternating, in the same run.
// Metric x_dd is scrub throughput / dd throughput (target >= 0.95).
func BenchmarkScrubVsDD(b *testing.B) {
	const size = 512 << 20
	p := benchFile(b, b.TempDir(), size)
	dd := func() time.Duration {
		t0 := time.Now()
		if _, err := (execx.Exec{}).Run(context.Background(), "dd", "if="+p, "of=/dev/null", "iflag=direct", "bs=4M"); err != nil {
			b.Skipf("dd: %v", err)
		}
		return time.Since(t0)
	}
	scrub := func() time.Duration {
		t0 := time.Now()
		res, err := Scrub(context.Background(), ScrubOptions{Targets: []ScrubTarget{{Name: "img", Path: p}}, Direct: true})
		if err != nil || res.Bytes != size || !res.Images[0].Direct {
			b.Fatalf("%v %+v", err, res)
		}
		return time.Since(t0)
	}
	// One untimed read first: below the guest's O_DIRECT the host may cache
	// the image, and whoever reads first would pay for it. Then alternate.
	dd()
	b.ResetTimer()
	var scrubT, ddT time.Duration
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			scrubT += scrub()
			ddT += dd()
		} else {
			ddT += dd()
			scrubT += scrub()
		}
	}
	mbs := func(d time.Duration) float64 { return float64(size) * float64(b.N) / d.Seconds() / (1 << 20) }
	b.ReportMetric(mbs(scrubT), "scrub_MiB/s")
	b.ReportMetric(mbs(ddT), "dd_MiB/s")
	b.ReportMetric(mbs(scrubT)/mbs(ddT), "x_dd")
}

// BenchmarkScrubThrottled: achieved rate over --rate (target 1 +- 0.05).
func BenchmarkScrubThrottled(b *testing.B) {
	const size, rate = 256 << 20, 128 << 20
	p := benchFile(b, b.TempDir(), size)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := Scrub(context.Background(), ScrubOptions{Targets: []ScrubTarget{{Name: "img", Path: p}}, Direct: true, Rate: rate}); err != nil {
			b.Fatal(err)
		}
		total += time.Since(t0)
	}
	achieved := float64(size) * float64(b.N) / total.Seconds()
	b.ReportMetric(achieved/(1<<20), "MiB/s")
	b.ReportMetric(achieved/rate, "x_rate")
}

// BenchmarkVerifyVsSha256sum: hashing throughput of verify-tables against
// GNU sha256sum over the same files, single-threaded (jobs 1 vs one
// sha256sum) and parallel (jobs 2 vs two sha256sum processes on halves).
func BenchmarkVerifyVsSha256sum(b *testing.B) {
	dir := b.TempDir()
	const n, size = 8, 32 << 20
	var names []string
	var list strings.Builder
	buf := make([]byte, size)
	for i := 0; i < n; i++ {
		for j := range buf {
			buf[j] = byte(i + j*3)
		}
		name := fmt.Sprintf("K%dvK.rtbw", i)
		os.WriteFile(filepath.Join(dir, name), buf, 0o644)
		s := sha256.Sum256(buf)
		fmt.Fprintf(&list, "%s  %s\n", hex.EncodeToString(s[:]), name)
		names = append(names, filepath.Join(dir, name))
	}
	lp := filepath.Join(b.TempDir(), "sha256")
	os.WriteFile(lp, []byte(list.String()), 0o644)
	cl, err := ReadChecksumList(lp, "")
	if err != nil {
		b.Fatal(err)
	}
	sha := func(files []string) error {
		_, err := (execx.Exec{}).Run(context.Background(), append([]string{"sha256sum"}, files...)...)
		return err
	}
	for _, jobs := range []int{1, 2} {
		b.Run(fmt.Sprintf("jobs=%d", jobs), func(b *testing.B) {
			var ours, theirs time.Duration
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				rep, err := Verify(context.Background(), VerifyOptions{Dirs: []string{dir}, Checksums: &cl, Jobs: jobs})
				ours += time.Since(t0)
				if err != nil || rep.OK != n {
					b.Fatalf("%v ok %d", err, rep.OK)
				}
				t0 = time.Now()
				var wg sync.WaitGroup
				var shaErr error
				per := (n + jobs - 1) / jobs
				for k := 0; k < n; k += per {
					wg.Add(1)
					go func(part []string) {
						defer wg.Done()
						if err := sha(part); err != nil {
							shaErr = err
						}
					}(names[k:min(k+per, n)])
				}
				wg.Wait()
				theirs += time.Since(t0)
				if shaErr != nil {
					b.Skipf("sha256sum: %v", shaErr)
				}
			}
			mbs := func(d time.Duration) float64 { return float64(n*size) * float64(b.N) / d.Seconds() / (1 << 20) }
			b.ReportMetric(mbs(ours), "verify_MiB/s")
			b.ReportMetric(mbs(theirs), "sha256sum_MiB/s")
			b.ReportMetric(mbs(ours)/mbs(theirs), "x_sha256sum")
		})
	}
}
