package prefix

// Extract against cp, verify against sha256sum (issue 16): the same bytes,
// warm and cold (page cache dropped before every run: root only), the
// median over 5 alternating pairs of the wall-time ratio. Printed as RATIO
// lines by `make bench`; docs/performance.md has the latest figures.
//   go test -run '^$' -bench 'Ratio' -benchtime 1x ./prefix/
//
// The rivals: `cp` of the finished prefix files into an empty directory,
// then `sync FILE...` (fsync of each copy: extract makes every prefix
// durable before its rename, durability is part of its job; the goal), and
// for information then `sync -f DIR` (one syncfs, as extract's group
// commit does: the fastest way to make cp's copies durable); `sha256sum`
// of the prefix files (of the store for verify, of the store and a second
// copy for verify --full, which reads the tables' prefix ranges too).

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/tbhost/tbhost/prefix/prefixtest"
)

// ratioSets are the fixtures: many small prefixes (the cold-read fixture),
// and a few large ones (tens of MB, where the SHA-256 must keep up).
func ratioSets() []struct {
	name  string
	specs []prefixtest.Spec
} {
	return []struct {
		name  string
		specs []prefixtest.Spec
	}{{"200-small", coldSpecs(200)}, {"4-large", largeSpecs()}}
}

// ratioFixture writes the tables, extracts them once into ref (the rival's
// source: the same bytes as finished prefix files) and returns the sources.
func ratioFixture(b *testing.B, specs []prefixtest.Spec) (tables, ref string, srcs []Source, refFiles []string, prefixBytes int64) {
	tables, srcs = writeTables(b, specs)
	ref = b.TempDir()
	rep, err := Extract(context.Background(), ParseAll(context.Background(), srcs, 4), ExtractOptions{Store: ref, Jobs: 4})
	if err != nil || len(rep.Failed) > 0 {
		b.Fatal(err, rep.Failed)
	}
	refFiles, _ = filepath.Glob(filepath.Join(ref, "*"+PrefixSuffix))
	sort.Strings(refFiles)
	return tables, ref, srcs, refFiles, rep.BytesWritten
}

// coldStart empties the page cache (after sync) and reads this process's
// executable back; false when that needs privileges we lack.
func coldStart() bool {
	if err := exec.Command("sync").Run(); err != nil {
		return false
	}
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0); err != nil {
		return false
	}
	os.ReadFile("/proc/self/exe")
	return true
}

// warmUp reads files into the page cache through one reused buffer: a
// whole-file read per table would leave hundreds of MB of garbage whose
// collection and scavenging (madvise) then ran inside the timed extract, in
// this process, while cp ran in its own.
func warmUp(files ...string) {
	buf := make([]byte, 1<<20)
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, buf)
		f.Close()
	}
}

// timeRun times f after preparing the cache: cold drops it, warm reads
// files into it first.
func timeRun(b *testing.B, cold bool, warm []string, f func()) time.Duration {
	if cold {
		if !coldStart() {
			b.Skip("cold runs need root to write /proc/sys/vm/drop_caches")
		}
	} else {
		warmUp(warm...)
	}
	t := time.Now()
	f()
	return time.Since(t)
}

// medianRatio runs pairs alternating pairs of ours and theirs (ours first
// in even pairs) and returns the median of ours/theirs and the last times.
func medianRatio(pairs int, ours, theirs func() time.Duration) (float64, time.Duration, time.Duration) {
	var rs []float64
	var o, t time.Duration
	for i := 0; i < pairs; i++ {
		if i%2 == 0 {
			o, t = ours(), theirs()
		} else {
			t, o = theirs(), ours()
		}
		rs = append(rs, o.Seconds()/t.Seconds())
	}
	sort.Float64s(rs)
	return rs[len(rs)/2], o, t
}

func run(b *testing.B, name string, args ...string) {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		b.Fatalf("%s: %v\n%s", name, err, out)
	}
}

func freshDir(b *testing.B, dir string) string {
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkRatioExtractVsCp prints extract/cp wall time (goal <= 1.0).
func BenchmarkRatioExtractVsCp(b *testing.B) {
	for _, set := range ratioSets() {
		for _, cold := range []bool{false, true} {
			mode := map[bool]string{false: "warm", true: "cold"}[cold]
			b.Run(set.name+"-"+mode, func(b *testing.B) {
				tables, _, srcs, refFiles, bytes := ratioFixture(b, set.specs)
				tablePaths := make([]string, len(srcs))
				for i, s := range srcs {
					tablePaths[i] = s.Path
				}
				work := b.TempDir()
				store, dst := filepath.Join(work, "store"), filepath.Join(work, "cp")
				ours := func() time.Duration {
					freshDir(b, store)
					return timeRun(b, cold, tablePaths, func() {
						ps := ParseAll(context.Background(), srcs, 4)
						rep, err := Extract(context.Background(), ps, ExtractOptions{Store: store, Jobs: 4})
						if err != nil || rep.Written != len(srcs) {
							b.Fatal(err, rep.Failed)
						}
					})
				}
				theirs := func() time.Duration {
					freshDir(b, dst)
					return timeRun(b, cold, refFiles, func() {
						run(b, "cp", append(refFiles, dst)...)
						copies, _ := filepath.Glob(filepath.Join(dst, "*"))
						run(b, "sync", copies...)
					})
				}
				ratio, o, t := medianRatio(5, ours, theirs)
				b.ReportMetric(ratio, "extract/cp")
				b.Logf("RATIO extract/cp %s %s: %.2f (median of 5 pairs; last pair %v vs %v for %d prefixes, %.1f MB; goal <= 1.0)",
					set.name, mode, ratio, o.Round(time.Millisecond), t.Round(time.Millisecond), len(srcs), float64(bytes)/1e6)
				// For information: cp made durable as extract's group
				// commit does, one syncfs of the copies' file system
				// (sync -f) instead of an fsync a file.
				syncfs := func() time.Duration {
					freshDir(b, dst)
					return timeRun(b, cold, refFiles, func() {
						run(b, "cp", append(refFiles, dst)...)
						run(b, "sync", "-f", dst)
					})
				}
				ratio, o, t = medianRatio(5, ours, syncfs)
				b.ReportMetric(ratio, "extract/cp-syncfs")
				b.Logf("RATIO extract/cp-then-syncfs %s %s: %.2f (median of 5 pairs; last pair %v vs %v; information: the durable cp with extract's one syncfs a batch)",
					set.name, mode, ratio, o.Round(time.Millisecond), t.Round(time.Millisecond))
				// For information: cp without the fsyncs (not durable, the
				// writeback is left to the kernel after the clock stops).
				nosync := func() time.Duration {
					freshDir(b, dst)
					return timeRun(b, cold, refFiles, func() { run(b, "cp", append(refFiles, dst)...) })
				}
				ratio, o, t = medianRatio(5, ours, nosync)
				b.ReportMetric(ratio, "extract/cp-nosync")
				b.Logf("RATIO extract/cp-without-fsync %s %s: %.2f (median of 5 pairs; last pair %v vs %v; information: that cp is not durable)",
					set.name, mode, ratio, o.Round(time.Millisecond), t.Round(time.Millisecond))
				_ = tables
			})
		}
	}
}

// BenchmarkRatioVerifyVsSha256sum prints verify/sha256sum wall time, fast
// path and --full (goal <= 1.0).
func BenchmarkRatioVerifyVsSha256sum(b *testing.B) {
	for _, set := range ratioSets() {
		for _, full := range []bool{false, true} {
			for _, cold := range []bool{false, true} {
				mode := map[bool]string{false: "warm", true: "cold"}[cold]
				kind := map[bool]string{false: "verify", true: "verify-full"}[full]
				b.Run(fmt.Sprintf("%s-%s-%s", set.name, kind, mode), func(b *testing.B) {
					_, ref, srcs, refFiles, bytes := ratioFixture(b, set.specs)
					// the second copy sha256sum reads for --full
					second := b.TempDir()
					run(b, "cp", append(refFiles, second)...)
					secondFiles, _ := filepath.Glob(filepath.Join(second, "*"))
					rival := refFiles
					warm := refFiles
					if full {
						rival = append(append([]string(nil), refFiles...), secondFiles...)
						for _, s := range srcs {
							warm = append(warm, s.Path)
						}
					}
					ours := func() time.Duration {
						return timeRun(b, cold, warm, func() {
							rep, err := Verify(context.Background(), srcs, VerifyOptions{Store: ref, Full: full, Jobs: 4})
							if err != nil || len(rep.Findings) > 0 {
								b.Fatal(err, rep.Findings)
							}
						})
					}
					theirs := func() time.Duration {
						return timeRun(b, cold, rival, func() {
							if out, err := exec.Command("sha256sum", rival...).Output(); err != nil || len(out) == 0 {
								b.Fatal(err)
							}
						})
					}
					ratio, o, t := medianRatio(5, ours, theirs)
					b.ReportMetric(ratio, kind+"/sha256sum")
					b.Logf("RATIO %s/sha256sum %s %s: %.2f (median of 5 pairs; last pair %v vs %v for %d prefixes, %.1f MB; goal <= 1.0)",
						kind, set.name, mode, ratio, o.Round(time.Millisecond), t.Round(time.Millisecond), len(srcs), float64(bytes)/1e6)
				})
			}
		}
	}
}
