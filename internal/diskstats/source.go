package diskstats

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tbhost/tbhost/internal/clock"
	"github.com/tbhost/tbhost/internal/sysread"
)

// Source produces samples: ProcSource reads /proc/diskstats, ReplaySource
// and SliceSource replay recorded ones. io.EOF means no more samples.
type Source interface {
	Sample(ctx context.Context) (Sample, error)
}

// ReadFile reads and parses one diskstats file, bounded to
// sysread.DiskstatsLimit bytes; a device, FIFO or directory in its place is
// refused. Errors name the file. The sample has no time.
func ReadFile(path string) (Sample, error) {
	b, err := sysread.File(path, sysread.DiskstatsLimit)
	if err != nil {
		return Sample{}, fmt.Errorf("read diskstats: %w", err)
	}
	s, err := Parse(b)
	if err != nil {
		return Sample{}, fmt.Errorf("%s: %w (fix the --root tree or the saved sample)", path, err)
	}
	return s, nil
}

// ProcSource reads ROOT/proc/diskstats each time it is sampled, stamped by
// its clock.
type ProcSource struct {
	path  string
	clock clock.Clock
}

// NewProcSource samples root/proc/diskstats ("/" for this host); root/proc
// must be a directory.
func NewProcSource(root string, c clock.Clock) (*ProcSource, error) {
	if root == "" {
		root = "/"
	}
	proc := filepath.Join(root, "proc")
	fi, err := os.Stat(proc)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w (is --root right?)", proc, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("open %s: not a directory (is --root right?)", proc)
	}
	if c == nil {
		c = clock.Real{}
	}
	return &ProcSource{path: filepath.Join(proc, "diskstats"), clock: c}, nil
}

// Path is the file it reads.
func (p *ProcSource) Path() string { return p.path }

// Sample implements Source.
func (p *ProcSource) Sample(ctx context.Context) (Sample, error) {
	if err := ctx.Err(); err != nil {
		return Sample{}, err
	}
	s, err := ReadFile(p.path)
	if err != nil {
		return Sample{}, err
	}
	s.Time = p.clock.Now()
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

// maxReplay bounds the diskstats.N files of one snapshot.
const maxReplay = 100000

// NewReplaySource finds root/proc/diskstats.N files (or, failing those,
// root/proc/diskstats as a single sample); ok is false when there is none.
func NewReplaySource(root string, start time.Time, interval time.Duration) (*ReplaySource, bool) {
	var files []string
	for i := 0; i < maxReplay; i++ {
		f := filepath.Join(root, "proc", "diskstats."+strconv.Itoa(i))
		if _, err := os.Lstat(f); err != nil {
			break
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		// a snapshot with one reading: replay it alone (no rates, but no
		// pointless waiting on a file that never changes)
		f := filepath.Join(root, "proc", "diskstats")
		if _, err := os.Lstat(f); err != nil {
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
	s, err := ReadFile(r.Files[r.next])
	if err != nil {
		return Sample{}, fmt.Errorf("replay: %w", err)
	}
	s.Time = r.Start.Add(time.Duration(r.next) * r.Interval)
	r.next++
	return s, nil
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
func Collect(ctx context.Context, src Source, c clock.Clock, interval time.Duration, n int) ([]Sample, error) {
	var out []Sample
	for i := 0; i <= n; i++ {
		if i > 0 {
			if err := c.Sleep(ctx, interval); err != nil {
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
