package integrity

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tbhost/tbhost/lvm"
)

// capRecord is written before tbhost caps an LV's recovery rate for a
// --syncaction check and removed once the LV's own rate is back. A run
// killed in between (SIGKILL, the OOM killer, a reboot) cannot put the rate
// back; the record lets the next run do it, where it would otherwise read
// the cap as the LV's own rate and leave every later rebuild capped.
type capRecord struct {
	LV      string    `json:"lv"` // vg/lv
	OwnKiB  int64     `json:"own_rate_kib"`
	CapKiB  int64     `json:"cap_kib"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

// DefaultRateRecordPath is where `integrity scrub --syncaction
// --maxrecoveryrate` records the LV's own rate while it caps it.
func DefaultRateRecordPath(vg, lv string) string {
	return filepath.Join(DefaultStateDir, fmt.Sprintf("syncaction-rate-%s-%s.json", vg, lv))
}

// readCapRecord reads and validates the record at path for the LV name; a
// missing file is nil, no error.
func readCapRecord(path, name string) (*capRecord, error) {
	var r capRecord
	found, err := readJSON(path, &r)
	if err != nil || !found {
		return nil, err
	}
	switch {
	case r.LV != name:
		return nil, fmt.Errorf("rate record %s is for %q, not %s: pass another --state", path, r.LV, name)
	case r.OwnKiB < 0 || r.OwnKiB > lvm.MaxRecoveryRateLimit || r.CapKiB <= 0 || r.CapKiB > lvm.MaxRecoveryRateLimit:
		return nil, fmt.Errorf("rate record %s: own rate %d, cap %d KiB/s: not rates tbhost wrote; check lvs -o raid_max_recovery_rate %s, then remove the file", path, r.OwnKiB, r.CapKiB, name)
	}
	return &r, nil
}

// tbhostAlive says whether pid is a running tbhost (a record's writer still
// at work, not killed).
func tbhostAlive(pid int) bool {
	if pid <= 0 || pid == os.Getpid() {
		return false
	}
	cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	argv0, _, _ := bytes.Cut(cmd, []byte{0})
	return filepath.Base(string(argv0)) == "tbhost"
}

// removeCapRecord removes the record once the LV's own rate is back.
func removeCapRecord(path string) error {
	if path == "" {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("rate record %s: %w", path, err)
	}
	return nil
}
