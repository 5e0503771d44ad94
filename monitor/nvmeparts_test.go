package monitor

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The reference host's vg-nvme sits on partition 4 of each NVMe disk
// (tbhost lvm plan --example: nvme0n1p4, nvme1n1p4). Each member is the
// partition: its /proc/diskstats line is read, its ID is its disk's, and
// --skip takes the partition's by-id name, the one lvm plan gives the PV
// (.../nvme-..._S4GENX0N123401-part4). That name used to match no member
// ("--skip ... names no member of the arrays checked"), so the member was
// judged anyway.
func TestNVMePartitionMembers(t *testing.T) {
	root := derived(t, "nvmeparts")
	topo, err := Discover(context.Background(), DiscoverOptions{Root: root, LVM: FileReport{Dir: root + "/lvm"}, Names: []string{"vg-nvme/prefix"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range topo.Arrays[0].Members {
		got = append(got, m.Disk+"="+m.ID)
	}
	if strings.Join(got, " ") != "nvme0n1p4=nvme-QEMU_NVMe_Ctrl_NVME1 nvme1n1p4=nvme-QEMU_NVMe_Ctrl_NVME2" {
		t.Fatalf("members %v, want the partitions, named by their disks' ids", got)
	}
	r := checkTree(t, root, "vg-nvme/prefix")
	for _, m := range r.Arrays[0].Members {
		if m.Rates.ReadsPerS != 2000 || m.Flag != "ok" {
			t.Errorf("%s: %.1f reads/s, flag %s; want the partition's 2000 reads/s, ok", m.Disk, m.Rates.ReadsPerS, m.Flag)
		}
	}
	for _, skip := range []string{"/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME1-part4", "nvme-QEMU_NVMe_Ctrl_NVME1-part4", "/dev/nvme0n1p4", "nvme-QEMU_NVMe_Ctrl_NVME1"} {
		th := DefaultThresholds()
		th.Skip = []string{skip}
		r, err := Check(context.Background(), Env{Root: root}, CheckOptions{Names: []string{"vg-nvme/prefix"}, For: 10 * time.Second, Interval: 5 * time.Second, Thresholds: th})
		if err != nil {
			t.Fatal(err)
		}
		ms := r.Arrays[0].Members
		if !ms[0].Skipped || ms[1].Skipped {
			t.Errorf("--skip %s: skipped %v %v, want nvme0n1p4 only", skip, ms[0].Skipped, ms[1].Skipped)
		}
		if n := strings.Join(r.Notes, "; "); strings.Contains(n, "names no member") {
			t.Errorf("--skip %s: %s", skip, n)
		}
	}
	// another partition of the same disk is not this member
	th := DefaultThresholds()
	th.Skip = []string{"nvme-QEMU_NVMe_Ctrl_NVME1-part3"}
	r, err = Check(context.Background(), Env{Root: root}, CheckOptions{Names: []string{"vg-nvme/prefix"}, For: 10 * time.Second, Interval: 5 * time.Second, Thresholds: th})
	if err != nil {
		t.Fatal(err)
	}
	if r.Arrays[0].Members[0].Skipped {
		t.Error("--skip of partition 3 skipped the member on partition 4")
	}
}
