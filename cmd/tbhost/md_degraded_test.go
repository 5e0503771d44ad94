package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/monitor/monitortest"
)

// Audit: monitor check said OK for a raid5 md array with raid_disks 3, two
// members and no md/degraded. Now CRITICAL (one device missing) with an
// UNKNOWN finding naming the absent file; integrity status, which judges
// LVM arrays only, never says OK on such a tree (no lvm/: could not run).
func TestMonitorCheckMDMissingMemberWithoutDegradedFile(t *testing.T) {
	root := filepath.Join(t.TempDir(), "md")
	if err := monitortest.WriteMD(root, []string{"sda1:in_sync", "sdb1:in_sync"},
		map[string]string{"level": "raid5", "raid_disks": "3", "array_state": "clean", "sync_action": "idle", "mismatch_cnt": "0"}); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runTB(t, nil, "--root", root, "monitor", "check")
	if code != 2 || !strings.HasPrefix(out, "CRITICAL: md0: degraded: 1 of 3 devices missing") || !strings.Contains(out, filepath.Join(root, "sys/block/md0/md/degraded")+" is missing") {
		t.Errorf("monitor check: exit %d, want 2, the missing device and the absent md/degraded named\n%s%s", code, out, stderr)
	}
	if code, out, stderr := runTB(t, nil, "--root", root, "integrity", "status"); code == 0 {
		t.Errorf("integrity status: exit 0\n%s%s", out, stderr)
	}
}
