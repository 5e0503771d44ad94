package monitor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tbhost/tbhost/internal/sysread"
)

// The member an integrity scrub reads is slow for everybody else's reads
// because of the scrub's own load, and reads more than its siblings: it is
// left out of skew and latency judgement (issue 20). A running scrub says
// what it reads in its state file (docs/integrity.md): reading_disks
// (["/dev/sdd"], the PVs as lvs names them) and updated; a killed scrub
// cannot clear them, so they count only while updated is recent.

// ScrubStateDir is where `tbhost integrity scrub` keeps its state files by
// default (scrub-<vg>-<lv>.json).
const ScrubStateDir = "/var/lib/tbhost"

// scrubFreshness: a state file older than this describes no running scrub
// (a scrub checkpoints at least every 5 s while it reads; integrity's
// ActivityFreshness).
const scrubFreshness = 2 * time.Minute

// maxScrubState bounds the read of a state file.
const maxScrubState = 4 << 20

// scrubState is the part of the scrub's state file monitor reads.
type scrubState struct {
	ReadingDisks []string  `json:"reading_disks"`
	Updated      time.Time `json:"updated"`
}

// ScrubStatePath is the default state file of the scrub of vg/lv under root.
func ScrubStatePath(root, array string) string {
	vg, lv, _ := strings.Cut(array, "/")
	return filepath.Join(root, ScrubStateDir, fmt.Sprintf("scrub-%s-%s.json", vg, lv))
}

// ScrubReading returns the disks (kernel names, as /proc/diskstats names
// them) that running scrubs read at now: from the default state file of
// every LVM array and from the extra files given (--scrub-state). A missing
// file is no scrub; a file that cannot be read or parsed, or names
// something that is not a disk, skips nothing and yields a note (judging a
// member is safer than hiding it).
func ScrubReading(root string, arrays []Array, extra []string, now time.Time) (disks, notes []string) {
	var paths []string
	for _, a := range arrays {
		if a.Kind == "lvm" && strings.Contains(a.Name, "/") {
			paths = append(paths, ScrubStatePath(root, a.Name))
		}
	}
	paths = append(paths, extra...)
	seen := map[string]bool{}
	for _, p := range paths {
		ds, err := readScrubState(p, now)
		if err != nil {
			notes = append(notes, fmt.Sprintf("scrub state %s ignored: %v", p, err))
			continue
		}
		for _, d := range ds {
			if !seen[d] {
				seen[d] = true
				disks = append(disks, d)
			}
		}
	}
	sort.Strings(disks)
	return disks, notes
}

// readScrubState returns the disks a fresh state file says are being read.
func readScrubState(path string, now time.Time) ([]string, error) {
	b, err := sysread.File(path, maxScrubState)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseScrubState(b, now)
}

// parseScrubState returns the disks a state file's bytes say are being
// read, when its updated time is fresh at now.
func parseScrubState(b []byte, now time.Time) ([]string, error) {
	var st scrubState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("not a scrub state (JSON): %w", err)
	}
	age := now.Sub(st.Updated)
	if len(st.ReadingDisks) == 0 || age < -scrubFreshness || age > scrubFreshness {
		return nil, nil
	}
	var out []string
	for _, d := range st.ReadingDisks {
		name := strings.TrimPrefix(d, "/dev/")
		if !validDiskName(name) {
			return nil, fmt.Errorf("reading_disks names %q, not a disk like /dev/sdd", d)
		}
		out = append(out, name)
	}
	return out, nil
}

// validDiskName: a kernel block device name (sdd, nvme0n1, sda1), no path.
func validDiskName(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// withScrubSkip returns th with the disks running scrubs read added to
// Skip, and notes naming them (or the state files ignored).
func (e Env) withScrubSkip(arrays []Array, extra []string, th Thresholds) (Thresholds, []string) {
	root := e.Root
	if root == "" {
		root = "/"
	}
	disks, notes := ScrubReading(root, arrays, extra, RealClock{}.Now())
	if len(disks) > 0 {
		th.Skip = append(append([]string(nil), th.Skip...), disks...)
		notes = append(notes, fmt.Sprintf("an integrity scrub reads %s: left out of skew and latency judgement while it runs", strings.Join(disks, ", ")))
	}
	return th, notes
}
