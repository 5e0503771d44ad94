package bench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"golang.org/x/sys/unix"

	"github.com/tbhost/tbhost/internal/clock"
	"github.com/tbhost/tbhost/internal/diskstats"
	"github.com/tbhost/tbhost/internal/sysread"
	"github.com/tbhost/tbhost/monitor"
)

// Per-disk reads during a probe run (issue 20): a RAID 5 read is as slow as
// the member it lands on, so bench probe shows, per disk under the tables'
// filesystem, the physical reads of each configuration and their latency
// (the /proc/diskstats delta over the run, iostat's formulas). A fail-slow
// member stands out by its r_await against its siblings' median.

// DiskIO is one disk's activity during one configuration's run.
type DiskIO struct {
	Disk        string  `json:"disk"`
	Reads       uint64  `json:"reads"`
	ReadsPerS   float64 `json:"reads_per_s"`
	ReadBytes   float64 `json:"read_bytes"`
	RAwaitMS    float64 `json:"r_await_ms"`
	UtilPercent float64 `json:"util_percent"`
	QueueSize   float64 `json:"queue_size"`
	// AwaitRatio is its r_await over the median of the other disks' (0
	// when none of them read).
	AwaitRatio float64 `json:"await_ratio"`
	// Slow: monitor's fail-slow rule for one interval at SlowRatio (r_await
	// 3x the others' median and 1 ms above it, not explained by more I/O),
	// without check's persistence; at least 20 reads in the run.
	Slow bool `json:"slow,omitempty"`
}

// SlowRatio marks a disk slow in bench probe's per-disk table.
const SlowRatio = 3

// DiskWatch samples /proc/diskstats for the disks behind some files.
type DiskWatch struct {
	// Disks are the leaf devices (disks, partitions) under the files'
	// filesystems; Via says how each filesystem's device was resolved
	// ("dm-5 (vg--hdd-tables) -> sda sdb ...").
	Disks []string
	Via   []string
	src   diskstats.Source
}

// NewDiskWatch finds the block devices under the filesystems of paths
// (stat's st_dev -> root/sys/block/<dev>/dev -> slaves, recursively, down
// to the disks) and samples their diskstats. A file on no block device
// (tmpfs, overlay) adds a Via line saying so and no disk.
func NewDiskWatch(root string, paths []string) (*DiskWatch, error) {
	if root == "" {
		root = "/"
	}
	devs := map[uint64]bool{}
	for _, p := range paths {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			return nil, fmt.Errorf("stat %s: %w", p, err)
		}
		devs[uint64(st.Dev)] = true
	}
	var nums []uint64
	for d := range devs {
		nums = append(nums, d)
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	majmin := make([]string, len(nums))
	for i, d := range nums {
		majmin[i] = fmt.Sprintf("%d:%d", unix.Major(d), unix.Minor(d))
	}
	disks, via, err := DisksBehind(root, majmin)
	if err != nil {
		return nil, err
	}
	src, err := diskstats.NewProcSource(root, clock.Real{})
	if err != nil {
		return nil, err
	}
	return &DiskWatch{Disks: disks, Via: via, src: src}, nil
}

// DisksBehind resolves device numbers ("254:5") to the leaf devices under
// them, reading root/sys/block (bounded). It returns the sorted leaves and
// one line per device number saying how it resolved.
func DisksBehind(root string, majmin []string) (disks, via []string, err error) {
	sb, err := monitor.ReadSysBlock(root)
	if err != nil {
		return nil, nil, err
	}
	byNum, err := devNumbers(root, sb)
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	for _, mm := range majmin {
		name, ok := byNum[mm]
		if !ok {
			via = append(via, fmt.Sprintf("device %s is no block device in %s (tmpfs, overlay?): no per-disk reads", mm, filepath.Join(root, "sys", "block")))
			continue
		}
		leaves := sb.Leaves(name)
		label := name
		if d := sb.Devs[name]; d != nil && d.DMName != "" {
			label += " (" + d.DMName + ")"
		}
		via = append(via, fmt.Sprintf("%s -> %s", label, strings.Join(leaves, " ")))
		for _, l := range leaves {
			if !seen[l] {
				seen[l] = true
				disks = append(disks, l)
			}
		}
	}
	sort.Strings(disks)
	return disks, via, nil
}

// devNumbers maps "major:minor" to the kernel name of every device and
// partition under root/sys/block.
func devNumbers(root string, sb *monitor.SysBlock) (map[string]string, error) {
	out := map[string]string{}
	for name, d := range sb.Devs {
		p := filepath.Join(root, "sys", "block", name, "dev")
		if d.Parent != "" {
			p = filepath.Join(root, "sys", "block", d.Parent, name, "dev")
		}
		v, err := sysread.OptionalAttr(p)
		if err != nil {
			return nil, err
		}
		if v != "" {
			out[v] = name
		}
	}
	return out, nil
}

// Sample reads the disks' counters now.
func (w *DiskWatch) Sample(ctx context.Context) (diskstats.Sample, error) {
	if w == nil || len(w.Disks) == 0 {
		return diskstats.Sample{}, nil
	}
	return w.src.Sample(ctx)
}

// Since is each disk's activity between two samples; nil when the watch
// has no disks or a disk vanished or was reset meanwhile.
func (w *DiskWatch) Since(a, b diskstats.Sample) []DiskIO {
	if w == nil || len(w.Disks) == 0 || a.Devices == nil || b.Devices == nil {
		return nil
	}
	secs := b.Time.Sub(a.Time).Seconds()
	out := make([]DiskIO, 0, len(w.Disks))
	rates := make([]diskstats.Rates, 0, len(w.Disks))
	for _, d := range w.Disks {
		x, ok1 := a.Devices[d]
		y, ok2 := b.Devices[d]
		if !ok1 || !ok2 {
			return nil
		}
		r, ok := diskstats.Compute(x, y, secs)
		if !ok {
			return nil
		}
		out = append(out, DiskIO{Disk: d, Reads: r.Reads, ReadsPerS: r.ReadsPerS, ReadBytes: r.ReadBytesPerS * secs,
			RAwaitMS: r.RAwaitMS, UtilPercent: r.UtilPercent, QueueSize: r.QueueSize})
		rates = append(rates, r)
	}
	markSlow(out, rates)
	return out
}

// markSlow sets each disk's AwaitRatio against the others that read, and
// Slow by monitor's fail-slow rule at SlowRatio (r_await SlowRatio times
// the others' median and 1 ms above it, not explained by more I/O than
// theirs), for a disk with at least slowMinReads reads in the run.
func markSlow(ds []DiskIO, rates []diskstats.Rates) {
	for i := range ds {
		if ds[i].Reads == 0 {
			continue
		}
		var others []diskstats.Rates
		for j := range ds {
			if j != i && ds[j].Reads > 0 {
				others = append(others, rates[j])
			}
		}
		c := monitor.CompareLatency(rates[i], others)
		ds[i].AwaitRatio = c.AwaitRatio
		ds[i].Slow = ds[i].Reads >= slowMinReads && c.SlowAt(SlowRatio)
	}
}

// slowMinReads: fewer reads in a run cannot tell a slow disk from chance.
const slowMinReads = 20

// WriteDisks prints, per run that has them, the per-disk table.
func (r *Report) WriteDisks(w io.Writer) error {
	for _, run := range r.Runs {
		if len(run.Disks) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nper-disk reads during %s:\n", run.Name)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "disk\treads\tr/s\tMB\tr_await ms\tx others\t%util\taqu\t\t\n")
		for _, d := range run.Disks {
			mark := ""
			if d.Slow {
				mark = fmt.Sprintf("<- slow: %.0fx the other disks' median r_await", d.AwaitRatio)
			}
			ratio := "-"
			if d.AwaitRatio > 0 {
				ratio = fmt.Sprintf("%.1f", d.AwaitRatio)
			}
			fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%s\t%.1f\t%.2f\t%s\t\n", d.Disk, d.Reads, d.ReadsPerS, d.ReadBytes/1e6,
				d.RAwaitMS, ratio, d.UtilPercent, d.QueueSize, mark)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// Paths are the table files of the set.
func (s *TableSet) Paths() []string {
	out := make([]string, len(s.tables))
	for i, t := range s.tables {
		out[i] = t.Path
	}
	return out
}
