package monitor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/procfs/blockdevice"
	"github.com/tbhost/tbhost/internal/clock"
)

// Sample is one reading of /proc/diskstats.
type Sample struct {
	Time    time.Time
	Devices map[string]blockdevice.IOStats // by kernel name
}

// Source produces samples. ProcSource reads /proc/diskstats; tests and
// snapshots replay recorded ones. io.EOF means no more samples.
type Source interface {
	Sample(ctx context.Context) (Sample, error)
}

// Clock tells the time and waits; tests inject one that never sleeps.
type Clock = clock.Clock

// RealClock is the wall clock.
type RealClock = clock.Real

// ProcSource reads ROOT/proc/diskstats with prometheus/procfs.
type ProcSource struct {
	fs    blockdevice.FS
	clock Clock
}

// NewProcSource reads diskstats under root ("/" for this host).
func NewProcSource(root string, clock Clock) (*ProcSource, error) {
	fs, err := blockdevice.NewFS(filepath.Join(root, "proc"), filepath.Join(root, "sys"))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", filepath.Join(root, "proc"), err)
	}
	return &ProcSource{fs: fs, clock: clock}, nil
}

// Sample implements Source.
func (p *ProcSource) Sample(ctx context.Context) (Sample, error) {
	if err := ctx.Err(); err != nil {
		return Sample{}, err
	}
	stats, err := p.fs.ProcDiskstats()
	if err != nil {
		return Sample{}, fmt.Errorf("read /proc/diskstats: %w", err)
	}
	s := Sample{Time: p.clock.Now(), Devices: make(map[string]blockdevice.IOStats, len(stats))}
	for i := range stats {
		s.Devices[stats[i].DeviceName] = stats[i].IOStats
	}
	return s, nil
}

// ReplaySource returns ROOT/proc/diskstats.0, .1, ... in turn (a snapshot
// of a host taken some interval apart), stamped Start, Start+Interval, ...
type ReplaySource struct {
	Files    []string
	Start    time.Time
	Interval time.Duration
	next     int
}

// NewReplaySource finds root/proc/diskstats.N files (or, failing those,
// root/proc/diskstats as a single sample); ok is false when there is none.
func NewReplaySource(root string, start time.Time, interval time.Duration) (*ReplaySource, bool) {
	var files []string
	for i := 0; ; i++ {
		f := filepath.Join(root, "proc", "diskstats."+strconv.Itoa(i))
		if _, err := os.Stat(f); err != nil {
			break
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		// a snapshot with one reading: replay it alone (no rates, but no
		// pointless waiting on a file that never changes)
		f := filepath.Join(root, "proc", "diskstats")
		if _, err := os.Stat(f); err != nil {
			return nil, false
		}
		files = []string{f}
	}
	return &ReplaySource{Files: files, Start: start, Interval: interval}, true
}

// Sample implements Source.
func (r *ReplaySource) Sample(ctx context.Context) (Sample, error) {
	if err := ctx.Err(); err != nil {
		return Sample{}, err
	}
	if r.next >= len(r.Files) {
		return Sample{}, io.EOF
	}
	f := r.Files[r.next]
	b, err := os.ReadFile(f)
	if err != nil {
		return Sample{}, fmt.Errorf("replay %s: %w", f, err)
	}
	s, err := ParseDiskstats(b)
	if err != nil {
		return Sample{}, fmt.Errorf("replay %s: %w", f, err)
	}
	s.Time = r.Start.Add(time.Duration(r.next) * r.Interval)
	r.next++
	return s, nil
}

// ParseDiskstats parses the text of a saved /proc/diskstats. Live sampling
// uses procfs (ProcSource); procfs only reads the file named "diskstats",
// so replayed samples (diskstats.0, .1, ...) are parsed here, into the same
// blockdevice.IOStats (a test checks both agree field by field).
func ParseDiskstats(b []byte) (Sample, error) {
	s := Sample{Devices: map[string]blockdevice.IOStats{}}
	for len(b) > 0 {
		var line []byte
		if i := indexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		f := fieldsOf(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 14 {
			return s, fmt.Errorf("diskstats line %q: %d fields, want at least 14", line, len(f))
		}
		var v [17]uint64
		for i := 3; i < len(f) && i-3 < len(v); i++ {
			n, err := strconv.ParseUint(string(f[i]), 10, 64)
			if err != nil {
				return s, fmt.Errorf("diskstats line %q: field %d: %w", line, i+1, err)
			}
			v[i-3] = n
		}
		s.Devices[string(f[2])] = blockdevice.IOStats{
			ReadIOs: v[0], ReadMerges: v[1], ReadSectors: v[2], ReadTicks: v[3],
			WriteIOs: v[4], WriteMerges: v[5], WriteSectors: v[6], WriteTicks: v[7],
			IOsInProgress: v[8], IOsTotalTicks: v[9], WeightedIOTicks: v[10],
			DiscardIOs: v[11], DiscardMerges: v[12], DiscardSectors: v[13], DiscardTicks: v[14],
			FlushRequestsCompleted: v[15], TimeSpentFlushing: v[16],
		}
	}
	return s, nil
}

func indexByte(b []byte, c byte) int {
	for i := range b {
		if b[i] == c {
			return i
		}
	}
	return -1
}

func fieldsOf(line []byte) [][]byte {
	var out [][]byte
	start := -1
	for i, c := range line {
		if c == ' ' || c == '\t' {
			if start >= 0 {
				out = append(out, line[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, line[start:])
	}
	return out
}

// SliceSource replays samples given in memory (tests, benchmarks).
type SliceSource struct {
	Samples []Sample
	next    int
}

// Sample implements Source.
func (s *SliceSource) Sample(ctx context.Context) (Sample, error) {
	if err := ctx.Err(); err != nil {
		return Sample{}, err
	}
	if s.next >= len(s.Samples) {
		return Sample{}, io.EOF
	}
	s.next++
	return s.Samples[s.next-1], nil
}

// Collect takes n+1 samples, interval apart (n intervals), and stops early
// at the end of a replay (io.EOF) or when ctx is done (returning what it has).
func Collect(ctx context.Context, src Source, clock Clock, interval time.Duration, n int) ([]Sample, error) {
	var out []Sample
	for i := 0; i <= n; i++ {
		if i > 0 {
			if err := clock.Sleep(ctx, interval); err != nil {
				return out, err
			}
		}
		s, err := src.Sample(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, err
		}
		out = append(out, s)
	}
	return out, nil
}
