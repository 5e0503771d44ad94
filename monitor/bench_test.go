package monitor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs/blockdevice"
	"github.com/tbhost/tbhost/internal/diskstats"
	"github.com/tbhost/tbhost/internal/execx"
)

// synthHost writes a host with `arrays` LVM raid5+integrity arrays of
// `per` disks each under root: sys/block (dm names, slaves, stat files),
// /dev/disk/by-id, and proc/diskstats.0 (earlier) and proc/diskstats
// (5 s later, every member having read ~500 reads/s). 64 disks / 8 arrays
// gives 64 disk lines and 264 dm lines, like a real host.
func synthHost(tb testing.TB, root string, arrays, per int) {
	tb.Helper()
	mk := func(p, content string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	link := func(target, p string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			tb.Fatal(err)
		}
	}
	var before, after strings.Builder
	stat := func(name string, major, minor int, reads uint64) {
		line := func(r uint64) string {
			return fmt.Sprintf("%d %d %d %d %d %d %d %d %d %d %d 0 0 0 0 0 0", r, r/4, r*128, r*4, 100, 10, 800, 300, 0, r*3, r*4)
		}
		fmt.Fprintf(&before, "%4d %7d %s %s\n", major, minor, name, line(reads))
		fmt.Fprintf(&after, "%4d %7d %s %s\n", major, minor, name, line(reads+2500))
		mk(filepath.Join(root, "sys/block", name, "stat"), line(reads+2500)+"\n")
	}
	dm := 0
	for a := 0; a < arrays; a++ {
		vg := fmt.Sprintf("vg-hdd%d", a)
		var top []string
		for i := 0; i < per; i++ {
			d := a*per + i
			disk := "sd" + string(rune('a'+d/26)) + string(rune('a'+d%26))
			stat(disk, 8+d/16, (d%16)*16, uint64(100000+d*37))
			link("../../"+disk, filepath.Join(root, "dev/disk/by-id", fmt.Sprintf("ata-HGST_HUH721212ALE600_%08d", d)))
			names := []string{"rmeta_%d", "rimage_%d_imeta", "rimage_%d_iorig", "rimage_%d"}
			for j, n := range names {
				k := fmt.Sprintf("dm-%d", dm+j)
				mk(filepath.Join(root, "sys/block", k, "dm/name"), DMName(vg, "tables_"+fmt.Sprintf(n, i))+"\n")
				if j < 3 {
					link("../../"+disk, filepath.Join(root, "sys/block", k, "slaves", disk))
				} else {
					link("../../dm-x", filepath.Join(root, "sys/block", k, "slaves", fmt.Sprintf("dm-%d", dm+1)))
					link("../../dm-x", filepath.Join(root, "sys/block", k, "slaves", fmt.Sprintf("dm-%d", dm+2)))
				}
				stat(k, 254, dm+j, uint64(50000+dm))
			}
			top = append(top, fmt.Sprintf("dm-%d", dm), fmt.Sprintf("dm-%d", dm+3))
			dm += 4
		}
		k := fmt.Sprintf("dm-%d", dm)
		mk(filepath.Join(root, "sys/block", k, "dm/name"), DMName(vg, "tables")+"\n")
		for _, s := range top {
			link("../../"+s, filepath.Join(root, "sys/block", k, "slaves", s))
		}
		stat(k, 254, dm, 777)
		dm++
	}
	mk(filepath.Join(root, "proc/diskstats.0"), before.String())
	mk(filepath.Join(root, "proc/diskstats"), after.String())
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time                                   { return c.t }
func (c fixedClock) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

type benchHost struct {
	root   string
	fs     blockdevice.FS
	src    *ProcSource
	prev   Sample
	arrays []Array
}

func newBenchHost(tb testing.TB) benchHost {
	root := tb.TempDir()
	synthHost(tb, root, 8, 8)
	topo, err := Discover(context.Background(), DiscoverOptions{Root: root})
	if err != nil {
		tb.Fatal(err)
	}
	t0 := time.Unix(1000, 0)
	src, err := NewProcSource(root, fixedClock{t0.Add(5 * time.Second)})
	if err != nil {
		tb.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "proc/diskstats.0"))
	if err != nil {
		tb.Fatal(err)
	}
	prev, err := diskstats.Parse(b)
	if err != nil {
		tb.Fatal(err)
	}
	prev.Time = t0
	fs, err := blockdevice.NewFS(filepath.Join(root, "proc"), filepath.Join(root, "sys"))
	if err != nil {
		tb.Fatal(err)
	}
	return benchHost{root: root, fs: fs, src: src, prev: prev, arrays: topo.Arrays}
}

// sample is what tbhost does per sample: read and parse diskstats, then
// judge every array.
func (h benchHost) sample(tb testing.TB) Report {
	s, err := h.src.Sample(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return Evaluate(h.arrays, []Sample{h.prev, s}, DefaultThresholds())
}

// floor is reading and parsing /proc/diskstats alone (prometheus/procfs).
func (h benchHost) floor(tb testing.TB) {
	if _, err := h.fs.ProcDiskstats(); err != nil {
		tb.Fatal(err)
	}
}

func TestSynthHost64Disks(t *testing.T) {
	h := newBenchHost(t)
	if len(h.arrays) != 8 {
		t.Fatalf("%d arrays", len(h.arrays))
	}
	for _, a := range h.arrays {
		if len(a.Members) != 8 || a.Members[0].ID == "" {
			t.Fatalf("%s: %+v", a.Name, a.Members)
		}
	}
	r := h.sample(t)
	if r.Status != OK || r.Arrays[0].Judged != 1 || len(h.prev.Devices) != 64+8*33 {
		t.Fatalf("%s judged %d devices %d: %s", r.Status, r.Arrays[0].Judged, len(h.prev.Devices), r.Summary)
	}
}

// BenchmarkSample: CPU time and allocations per sample for 64 disks /
// 8 arrays, against reading and parsing /proc/diskstats alone (the floor),
// measured in the same run; reports the ratio.
func BenchmarkSample(b *testing.B) {
	h := newBenchHost(b)
	allocsFloor := testing.AllocsPerRun(20, func() { h.floor(b) })
	allocsSample := testing.AllocsPerRun(20, func() { h.sample(b) })
	raw, err := os.ReadFile(filepath.Join(h.root, "proc/diskstats"))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var tFloor, tSample, tOwn time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		h.floor(b)
		t1 := time.Now()
		h.sample(b)
		t2 := time.Now()
		if _, err := diskstats.Parse(raw); err != nil {
			b.Fatal(err)
		}
		tFloor += t1.Sub(t0)
		tSample += t2.Sub(t1)
		tOwn += time.Since(t2)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tSample.Nanoseconds())/n, "ns/sample")
	b.ReportMetric(float64(tFloor.Nanoseconds())/n, "ns/floor")
	b.ReportMetric(float64(tSample)/float64(tFloor), "sample/floor")
	b.ReportMetric(allocsSample, "allocs/sample")
	b.ReportMetric(allocsFloor, "allocs/floor")
	// the replay parser (no Sscanf), for scale: procfs's parsing dominates the floor
	b.ReportMetric(float64(tOwn.Nanoseconds())/n, "ns/replay-parse")
}

// BenchmarkVsIostat compares tbhost's CPU time per sample with `iostat -x 1`
// reading the same 64 disks + 264 dm devices. sysstat 12's iostat reads
// /sys/block/*/stat, so the synthetic sys/block is bind-mounted over it in a
// private mount namespace (needs root, unshare and iostat; skips otherwise).
// iostat's cost per interval = (CPU of 11 reports - CPU of 1 report) / 10.
func BenchmarkVsIostat(b *testing.B) {
	for _, p := range []string{"iostat", "unshare", "bash"} {
		if _, err := exec.LookPath(p); err != nil {
			b.Skipf("%s not installed (iostat: Debian package sysstat): skipping the iostat comparison", p)
		}
	}
	if os.Geteuid() != 0 {
		b.Skip("not root: cannot bind-mount a synthetic /sys/block for iostat; skipping the iostat comparison")
	}
	root := b.TempDir()
	synthHost(b, root, 8, 8)
	iostatCPU := func(reports int) time.Duration {
		script := fmt.Sprintf(`mount --bind %s/sys/block /sys/block && bash -c 'iostat -x -d 1 %d >/dev/null; times'`, root, reports)
		res, err := execx.Exec{}.Run(context.Background(), "unshare", "-m", "sh", "-c", script)
		if err != nil {
			b.Skipf("cannot run iostat in a private mount namespace (%v): skipping the iostat comparison", err)
		}
		return childCPU(b, string(res.Stdout))
	}
	// the outer benchmark runs once: iostat is measured once (about 12 s)
	one, eleven := iostatCPU(1), iostatCPU(11)
	perIostat := (eleven - one) / 10
	h := newBenchHost(b)
	b.Run("64disks-8arrays", func(b *testing.B) {
		var ru0, ru1 syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		for i := 0; i < b.N; i++ {
			h.sample(b)
		}
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) / time.Duration(b.N)
		b.ReportMetric(float64(cpu.Microseconds()), "tbhost-cpu-us/sample")
		b.ReportMetric(float64(perIostat.Microseconds()), "iostat-cpu-us/interval")
		if cpu > 0 {
			b.ReportMetric(float64(perIostat)/float64(cpu), "iostat/tbhost")
		}
	})
}

var timesLine = regexp.MustCompile(`(\d+)m([\d.]+)s\s+(\d+)m([\d.]+)s`)

// childCPU reads the children's user+sys time from bash's `times` (its second line).
func childCPU(tb testing.TB, out string) time.Duration {
	m := timesLine.FindAllStringSubmatch(out, -1)
	if len(m) < 2 {
		tb.Fatalf("no times output in %q", out)
	}
	c := m[1]
	sec := func(min, s string) float64 {
		mm, _ := strconv.ParseFloat(min, 64)
		ss, _ := strconv.ParseFloat(s, 64)
		return mm*60 + ss
	}
	return time.Duration((sec(c[1], c[2]) + sec(c[3], c[4])) * float64(time.Second))
}
