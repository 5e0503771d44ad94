//go:build lab

package lab

import (
	"strings"
	"testing"
)

func TestLabSmoke(t *testing.T) {
	hdd, _ := Disks(HDD, 2, 64, "512e")
	nvme, _ := Disks(NVMe, 1, 64, "4kn")
	res := boot(t, Config{Name: "smoke", Disks: append(hdd, nvme...), Script: []byte(`. /lab/lib.sh
ls -l /dev/disk/by-id | lab_out byid.txt
for d in sda sdb nvme0n1; do echo "$d $(cat /sys/block/$d/queue/logical_block_size) $(cat /sys/block/$d/queue/physical_block_size) $(cat /sys/block/$d/queue/rotational)"; done | lab_out blocks.txt
echo "$(lab_disks hdd)|$(lab_disks nvme)" | lab_out disks.txt
/usr/bin/tbhost --version | lab_out version.txt
exit 7
`)})
	if res.ExitCode != 7 {
		t.Errorf("exit = %d, want 7", res.ExitCode)
	}
	t.Logf("by-id:\n%s\nblocks:\n%s\ndisks: %s", res.Outputs["byid.txt"], res.Outputs["blocks.txt"], res.Outputs["disks.txt"])
	if !strings.Contains(string(res.Outputs["byid.txt"]), "scsi-0QEMU_QEMU_HARDDISK_HDD1") {
		t.Errorf("no by-id link for HDD1")
	}
}
