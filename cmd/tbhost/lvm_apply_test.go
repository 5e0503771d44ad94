package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/blockdev/fixture"
	"github.com/tbhost/tbhost/lvm/lvmfake"
)

// The lab guest as a --root tree, with a fake lvm2 behind the runner: the
// whole plan -> apply -> apply again -> status cycle through the CLI.
func TestLVMPlanApplyStatusCycle(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "lab")
	if err := fixture.LabGuest().Write(tree); err != nil {
		t.Fatal(err)
	}
	fake := lvmfake.New()
	for i := 1; i <= 6; i++ {
		fake.Disk("/dev/sd"+string(rune('a'+i-1)), fixture.LabHDDSize, "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD"+string(rune('0'+i)))
	}
	fake.Disk("/dev/nvme0n1", fixture.LabNVMeSize, "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME1")
	fake.Disk("/dev/nvme1n1", fixture.LabNVMeSize, "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME2")
	plan := filepath.Join(t.TempDir(), "plan.yaml")
	if code, _, stderr := runTB(t, fake, "--root", tree, "lvm", "plan", "-o", plan); code != 0 {
		t.Fatalf("plan: %d %s", code, stderr)
	}
	// dry run: nothing written
	code, out, stderr := runTB(t, fake, "--root", tree, "lvm", "apply", "--dry-run", plan)
	if code != 0 || !strings.Contains(out, "would-run lvm lvcreate") || len(lvmfake.Writes(fake.Calls)) != 0 {
		t.Fatalf("dry-run: %d %s %s %v", code, out, stderr, lvmfake.Writes(fake.Calls))
	}
	// no terminal, no --yes: refused, exit 1, nothing written
	code, _, stderr = runTB(t, fake, "--root", tree, "lvm", "apply", plan)
	if code != 1 || !strings.Contains(stderr, "--yes") || len(lvmfake.Writes(fake.Calls)) != 0 {
		t.Fatalf("unconfirmed: %d %s", code, stderr)
	}
	code, out, stderr = runTB(t, fake, "--root", tree, "lvm", "apply", "--yes", plan)
	if code != 0 || !strings.Contains(out, "verified: the arrays are what the plan says") {
		t.Fatalf("apply: %d\n%s\n%s", code, out, stderr)
	}
	n := len(lvmfake.Writes(fake.Calls))
	code, out, _ = runTB(t, fake, "--root", tree, "lvm", "apply", "--yes", plan)
	if code != 0 || len(lvmfake.Writes(fake.Calls)) != n || !strings.Contains(out, "0 commands run, 12 already done") {
		t.Fatalf("second apply: %d %s", code, out)
	}
	code, out, stderr = runTB(t, fake, "--root", tree, "lvm", "status", "--plan", plan, "--json")
	var st struct {
		OK     bool `json:"ok"`
		Arrays []struct {
			State       string `json:"state"`
			DataStripes int    `json:"data_stripes"`
		} `json:"arrays"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || !st.OK || st.Arrays[0].DataStripes != 5 || st.Arrays[0].State != "syncing" {
		t.Fatalf("status: %d %s %s", code, out, stderr)
	}
	// status of an LV that does not exist: exit 1
	if code, _, _ := runTB(t, fake, "--root", tree, "lvm", "status", "vg-hdd/nope"); code != 1 {
		t.Errorf("missing LV: exit %d", code)
	}
}
