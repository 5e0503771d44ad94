package prefix

// Benchmarks with their baselines measured in the same run, interleaved, so
// the ratios hold on a shared, noisy machine. Run:
//   go test -run '^$' -bench . -benchtime 20x ./prefix/
// The page cache is warm (these measure CPU and syscall overhead, not the
// disks); docs/prefix.md has the latest table.

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/tbhost/tbhost/prefix/prefixtest"
	"golang.org/x/sys/unix"
)

// benchTables returns the real tables, or writes the synthetic set.
func benchTables(b *testing.B) (string, string) {
	files, _ := filepath.Glob("../../shared/syzygy/tables/*.rtb[wz]")
	if len(files) > 0 {
		return filepath.Dir(files[0]), "real"
	}
	dir := b.TempDir()
	for _, s := range goodSpecs() {
		if _, _, err := prefixtest.WriteTable(dir, s); err != nil {
			b.Fatal(err)
		}
	}
	return dir, "synthetic"
}

// BenchmarkStatsHeaders: parse every table header (what `prefix stats` does)
// against a baseline that opens each file and reads its first 4 KiB.
func BenchmarkStatsHeaders(b *testing.B) {
	for _, cold := range []bool{false, true} {
		name := "warm"
		if cold {
			name = "cold"
		}
		b.Run(name, func(b *testing.B) { benchStats(b, cold) })
	}
}

// evict drops files from the page cache (posix_fadvise DONTNEED on clean
// pages; no privileges needed), so the next read goes to the disk.
func evict(b *testing.B, paths ...string) {
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

func benchStats(b *testing.B, cold bool) {
	dir, kind := benchTables(b)
	srcs, err := FindTables([]string{dir})
	if err != nil {
		b.Fatal(err)
	}
	var tParse, tBase time.Duration
	var read, reads, header, files int64
	buf := make([]byte, 4096)
	for i := 0; i < b.N; i++ {
		for _, s := range srcs {
			if cold {
				b.StopTimer()
				evict(b, s.Path)
				b.StartTimer()
			}
			t0 := time.Now()
			f, err := os.Open(s.Path)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.ReadAt(buf, 0); err != nil && err != io.EOF {
				b.Fatal(err)
			}
			f.Close()
			if cold {
				b.StopTimer()
				evict(b, s.Path)
				b.StartTimer()
			}
			t1 := time.Now()
			f, err = os.Open(s.Path)
			if err != nil {
				b.Fatal(err)
			}
			st, _ := f.Stat()
			cr := &countingReader{r: f}
			l, err := Parse(s.Name, &callCounter{r: cr, n: &reads}, st.Size())
			f.Close()
			tParse += time.Since(t1)
			tBase += t1.Sub(t0)
			if err != nil {
				b.Fatal(err)
			}
			read += cr.read
			header += l.Header.Size
			files++
		}
	}
	b.ReportMetric(float64(read)/float64(files), "bytes-read/file")
	b.ReportMetric(float64(header)/float64(files), "header-bytes/file")
	b.ReportMetric(float64(reads)/float64(files), "preads/file")
	b.ReportMetric(float64(files)/tParse.Seconds(), "files/s")
	b.ReportMetric(3022/(float64(files)/tParse.Seconds()), "s/3022-files")
	b.ReportMetric(tParse.Seconds()/tBase.Seconds(), "x-vs-open+read4k")
	b.Logf("%s tables: header parse reads %d bytes per file (header+pairs: %d)", kind, read/files, header/files)
}

type callCounter struct {
	r io.ReaderAt
	n *int64
}

func (c *callCounter) ReadAt(p []byte, off int64) (int, error) {
	*c.n++
	return c.r.ReadAt(p, off)
}

// plainCopy is the baseline: for each table, copy its prefix bytes into the
// store and fsync, one file after another, through a user-space buffer like
// `dd bs=1M count=... conv=fsync` (kernel: also let the kernel copy with
// copy_file_range, which no checking tool can use).
func plainCopy(b *testing.B, ps []Parsed, store string, kernel bool) int64 {
	var n int64
	buf := make([]byte, 1<<20)
	for _, p := range ps {
		src, err := os.Open(p.Path)
		if err != nil {
			b.Fatal(err)
		}
		dst, err := os.Create(filepath.Join(store, p.Name+PrefixSuffix))
		if err != nil {
			b.Fatal(err)
		}
		var m int64
		if kernel {
			m, err = io.CopyBuffer(dst, io.NewSectionReader(src, 0, p.Layout.Prefix), buf)
		} else {
			m, err = io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{io.NewSectionReader(src, 0, p.Layout.Prefix)}, buf)
		}
		if err != nil {
			b.Fatal(err)
		}
		n += m
		if err := dst.Sync(); err != nil {
			b.Fatal(err)
		}
		dst.Close()
		src.Close()
	}
	return n
}

// bigSet writes a few synthetic tables with multi-MB prefixes.
func bigSet(b *testing.B) string {
	dir := b.TempDir()
	for _, n := range []string{"KRNvKB.rtbw", "KQNvKR.rtbw", "KQBvKN.rtbw", "KRBvKQ.rtbw"} {
		if _, _, err := prefixtest.WriteTable(dir, prefixtest.Spec{Name: n, Subs: []prefixtest.Sub{{IdxBits: 5, BlockSizeLog: 9}, {IdxBits: 6, BlockSizeLog: 9}}}); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// manySet writes many small synthetic tables.
func manySet(b *testing.B) string {
	dir := b.TempDir()
	pieces := []string{"Q", "R", "B", "N"}
	for _, x := range pieces {
		for _, y := range pieces {
			for _, n := range []string{"K" + x + "vK" + y, "K" + x + y + "vK"} {
				for _, ext := range []string{".rtbw", ".rtbz"} {
					if _, err := os.Stat(filepath.Join(dir, n+ext)); err == nil {
						continue
					}
					if _, _, err := prefixtest.WriteTable(dir, prefixtest.Spec{Name: n + ext}); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
	}
	return dir
}

// BenchmarkExtract: extract (checked, hashed, temp+fsync+rename+dir fsync,
// manifest) with 1 and 4 jobs against a plain sequential copy of the same
// byte ranges with fsync.
func BenchmarkExtract(b *testing.B) {
	sets := []struct {
		name string
		dir  func(*testing.B) string
	}{
		{"tables", func(b *testing.B) string { d, _ := benchTables(b); return d }},
		{"many-small", manySet},
		{"few-large", bigSet},
		{"many-small-cold", manySet},
		{"few-large-cold", bigSet},
	}
	for _, set := range sets {
		cold := strings.HasSuffix(set.name, "-cold")
		b.Run(set.name, func(b *testing.B) {
			dir := set.dir(b)
			srcs, err := FindTables([]string{dir})
			if err != nil {
				b.Fatal(err)
			}
			ps := ParseAll(context.Background(), srcs, 2)
			paths := make([]string, len(srcs))
			for i, s := range srcs {
				paths[i] = s.Path
			}
			// cold: every contender reads the tables from the disk, not the page cache
			timed := func(d *time.Duration, f func()) {
				if cold {
					evict(b, paths...)
				}
				t := time.Now()
				f()
				*d += time.Since(t)
			}
			var tCopy, tKernel, tJ1, tJ4 time.Duration
			var read, written, total int64
			root := b.TempDir()
			for i := 0; i < b.N; i++ {
				stores := make([]string, 4)
				for k := range stores {
					stores[k] = filepath.Join(root, fmt.Sprintf("%d-%d", i, k))
					os.Mkdir(stores[k], 0o755)
				}
				// rotate the order so no contender always runs first
				runs := []func(){
					func() { timed(&tCopy, func() { total += plainCopy(b, ps, stores[0], false) }) },
					func() { timed(&tKernel, func() { plainCopy(b, ps, stores[3], true) }) },
					func() {
						var rep *ExtractReport
						var err error
						timed(&tJ1, func() { rep, err = Extract(context.Background(), ps, ExtractOptions{Store: stores[1], Jobs: 1}) })
						if err != nil || len(rep.Failed) > 0 {
							b.Fatal(err, rep.Failed)
						}
						read += rep.BytesRead
						written += rep.BytesWritten
					},
					func() {
						var err error
						timed(&tJ4, func() { _, err = Extract(context.Background(), ps, ExtractOptions{Store: stores[2], Jobs: 4}) })
						if err != nil {
							b.Fatal(err)
						}
					},
				}
				for k := range runs {
					runs[(i+k)%len(runs)]()
				}
				for _, s := range stores {
					os.RemoveAll(s)
				}
			}
			b.ReportMetric(float64(len(ps)), "files")
			b.ReportMetric(float64(total)/float64(b.N)/float64(len(ps)), "prefix-bytes/file")
			b.ReportMetric(float64(total)/tCopy.Seconds()/1e6, "copy-MB/s")
			b.ReportMetric(float64(written)/tJ1.Seconds()/1e6, "j1-MB/s")
			b.ReportMetric(tJ1.Seconds()/tCopy.Seconds(), "j1/copy-time")
			b.ReportMetric(tJ4.Seconds()/tCopy.Seconds(), "j4/copy-time")
			b.ReportMetric(tKernel.Seconds()/tCopy.Seconds(), "kernelcopy/copy-time")
			b.ReportMetric(float64(read)/float64(written), "read/written")
		})
	}
}

// BenchmarkReaderAt: latency of Reader.ReadAt against a direct pread on the
// same file, for the reads a probe makes (32-byte block-length runs from the
// prefix, block+4 reads from the data) and for reads straddling the boundary.
func BenchmarkReaderAt(b *testing.B) {
	tables := b.TempDir()
	path, tb, err := prefixtest.WriteTable(tables, prefixtest.Spec{Name: "KRNvKB.rtbw", Subs: []prefixtest.Sub{{IdxBits: 7, BlockSizeLog: 9}, {IdxBits: 7, BlockSizeLog: 9}}})
	if err != nil {
		b.Fatal(err)
	}
	store := b.TempDir()
	srcs, _ := FindTables([]string{tables})
	if _, err := Extract(context.Background(), ParseAll(context.Background(), srcs, 1), ExtractOptions{Store: store}); err != nil {
		b.Fatal(err)
	}
	r, err := Open(path, store)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	table, _ := os.Open(path)
	defer table.Close()
	pf, _ := os.Open(PrefixPath(store, "KRNvKB.rtbw"))
	defer pf.Close()
	l := r.Layout()
	size := int64(len(tb.Bytes))
	shapes := []struct {
		name   string
		n      int
		off    func(*rand.Rand) int64
		direct io.ReaderAt
	}{
		{"block-lengths-32B", 32, func(g *rand.Rand) int64 { return l.BlockLengths.Offset + g.Int63n(l.BlockLengths.Size-32) }, pf},
		{"sparse-entry-6B", 6, func(g *rand.Rand) int64 { return l.SparseIndex.Offset + g.Int63n(l.SparseIndex.Size-6) }, pf},
		{"data-block+4", 512 + 4, func(g *rand.Rand) int64 { return l.Prefix + g.Int63n(size-16-l.Prefix-520) }, table},
		{"straddle-64B", 64, func(g *rand.Rand) int64 { return l.Prefix - 1 - g.Int63n(63) }, table},
	}
	for _, s := range shapes {
		b.Run(s.name, func(b *testing.B) {
			hr := hdrhistogram.New(1, 10_000_000, 3)
			hd := hdrhistogram.New(1, 10_000_000, 3)
			g := rand.New(rand.NewSource(1))
			p := make([]byte, s.n)
			const readsPerOp = 256 // enough samples for a p99 even at small -benchtime
			for i := 0; i < b.N*readsPerOp; i++ {
				off := s.off(g)
				first, second, h1, h2 := io.ReaderAt(r), s.direct, hr, hd
				if i%2 == 1 { // alternate, so neither side always finds the cache warmed by the other
					first, second, h1, h2 = s.direct, r, hd, hr
				}
				t0 := time.Now()
				if _, err := first.ReadAt(p, off); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if _, err := second.ReadAt(p, off); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				h1.RecordValue(t1.Sub(t0).Nanoseconds())
				h2.RecordValue(t2.Sub(t1).Nanoseconds())
			}
			b.Logf("reader p90 %d p95 %d p99 %d p999 %d max %d; direct p90 %d p95 %d p99 %d p999 %d max %d", hr.ValueAtQuantile(90), hr.ValueAtQuantile(95), hr.ValueAtQuantile(99), hr.ValueAtQuantile(99.9), hr.Max(), hd.ValueAtQuantile(90), hd.ValueAtQuantile(95), hd.ValueAtQuantile(99), hd.ValueAtQuantile(99.9), hd.Max())
			b.ReportMetric(float64(hr.ValueAtQuantile(50)), "reader-p50-ns")
			b.ReportMetric(float64(hr.ValueAtQuantile(99)), "reader-p99-ns")
			b.ReportMetric(float64(hd.ValueAtQuantile(50)), "direct-p50-ns")
			b.ReportMetric(float64(hd.ValueAtQuantile(99)), "direct-p99-ns")
			b.ReportMetric(float64(hr.ValueAtQuantile(50))/float64(max(hd.ValueAtQuantile(50), 1)), "p50-ratio")
			b.ReportMetric(float64(hr.ValueAtQuantile(99))/float64(max(hd.ValueAtQuantile(99), 1)), "p99-ratio")
		})
	}
}
