package integrity

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tbhost/tbhost/internal/atomicfile"
	"github.com/tbhost/tbhost/internal/filelock"
	"github.com/tbhost/tbhost/internal/sysread"
)

// lockScrubState takes an exclusive flock on path+".lock" for the run, so
// two scrubs of one array (a cron run overlapping the last one, or one
// started by hand) never read the same images at once and overwrite each
// other's checkpoints. The kernel drops the lock with its process (kill -9
// too): there is never a stale lock to clear. "" (no state) locks nothing.
func lockScrubState(path string) (func(), error) {
	return lockState(path, func(lock string) error {
		holder := ""
		var st ScrubState
		if found, _ := readJSON(path, &st); found && st.PID > 0 {
			holder = fmt.Sprintf(" (pid %d, by the state file)", st.PID)
		}
		return fmt.Errorf("%w: it holds %s%s; wait for it to finish (it stops at its --budget or --until), or stop it: its checkpoint is kept", ErrScrubBusy, lock, holder)
	})
}

// lockVerifyState is lockScrubState for verify-tables' resume state: two
// runs on one --state would hash the same files twice, and the first to
// finish would remove the other's state.
func lockVerifyState(path string) (func(), error) {
	return lockState(path, func(lock string) error {
		return fmt.Errorf("%w: it holds %s; wait for it to finish, or give this run another --state", ErrVerifyBusy, lock)
	})
}

// lockState takes an exclusive flock on path+".lock", or returns held's
// error naming the lock when another run holds it; "" locks nothing.
func lockState(path string, held func(lock string) error) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("state %s: %w (pass a writable --state FILE, or run as root for the default)", path, err)
	}
	lock := path + ".lock"
	l, err := filelock.Exclusive(lock, 0o644)
	switch {
	case errors.Is(err, filelock.ErrHeld):
		return nil, held(lock)
	case err != nil:
		return nil, fmt.Errorf("state %s: lock: %w (pass a writable --state FILE, or run as root for the default)", path, err)
	}
	return l.Unlock, nil
}

// removeStateTemps deletes the temporary files writeJSONAtomic leaves
// next to path when its run is killed between the create and the rename
// (kill -9 at a checkpoint). Only under path's lock: a run that holds it
// is the only writer of path, so none of them is being written. What
// cannot be removed stays: it is litter, not a fault.
func removeStateTemps(path string) {
	if path == "" {
		return
	}
	atomicfile.RemoveTemps(path, atomicfile.Options{})
}

// writeJSONAtomic writes v to path so that a reader (or a run killed midway)
// sees either the old file or the new one, never a torn one: a temporary
// file (.<name>.tmp<digits>) in the same directory, fsync, rename, fsync of
// the directory.
func writeJSONAtomic(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("state %s: encode: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("state %s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, append(data, '\n'), atomicfile.Options{}); err != nil {
		return fmt.Errorf("state %s: %w", path, err)
	}
	return nil
}

// readJSON reads path into v; a missing file reports found=false, no error.
func readJSON(path string, v any) (found bool, err error) {
	data, err := sysread.File(path, sysread.ReportLimit)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("state %s: %w (pass a usable --state FILE)", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("state %s: not a tbhost state file (%v); move it away or pass another --state", path, err)
	}
	return true, nil
}

// ScrubActivity is what a running scrub reads right now, from its state
// file: the monitor uses it to leave the members the scrub is reading out
// of its latency comparison (their r_await is the scrub's own load).
type ScrubActivity struct {
	// Running: the file names images being read and was updated within
	// ActivityFreshness.
	Running bool      `json:"running"`
	Images  []string  `json:"images,omitempty"` // tables_rimage_2
	Disks   []string  `json:"disks,omitempty"`  // /dev/sdc, as lvs names the PVs
	PID     int       `json:"pid,omitempty"`
	Updated time.Time `json:"updated"`
}

// ActivityFreshness is how old a state file may be and still describe a
// running scrub: a scrub checkpoints at least every 5 s while its backoff
// samples (and after every chunk otherwise), so an older file is a run
// that was killed (kill -9 cannot clear reading_disks).
const ActivityFreshness = 2 * time.Minute

// ReadScrubActivity reads the scrub state file at path (by default
// DefaultStatePath(vg, lv)) and says which disks a scrub reads at now. A
// missing file is no scrub, not an error; a file that is not a scrub state
// is an error naming it.
func ReadScrubActivity(path string, now time.Time) (ScrubActivity, error) {
	var st ScrubState
	found, err := readJSON(path, &st)
	if err != nil || !found {
		return ScrubActivity{}, err
	}
	a := ScrubActivity{Images: validNames(st.ReadingImages, ""), Disks: validNames(st.ReadingDisks, "/dev/"), PID: max(st.PID, 0), Updated: st.Updated}
	age := now.Sub(st.Updated)
	a.Running = len(a.Disks) > 0 && age >= -ActivityFreshness && age <= ActivityFreshness
	if !a.Running {
		a.Images, a.Disks = nil, nil
	}
	return a, nil
}

// validNames keeps the entries that look like what a scrub writes: prefix
// then a device or LV name (letters, digits and "+_.:-", at most 128
// bytes), at most maxScrubImages of them, so a reader can match them
// against its own names without surprises.
func validNames(in []string, prefix string) []string {
	var out []string
	for _, s := range in {
		name, ok := strings.CutPrefix(s, prefix)
		if !ok || !plainName(name) {
			continue
		}
		if len(out) == maxScrubImages {
			break
		}
		out = append(out, s)
	}
	return out
}

func plainName(s string) bool {
	if s == "" || len(s) > 128 || s == "." || s == ".." {
		return false
	}
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.ContainsRune("+_.:-", c):
		default:
			return false
		}
	}
	return true
}
