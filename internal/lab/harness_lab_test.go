//go:build lab

package lab

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/execx"
)

// TestHarness boots once with small disks of each block-size format and
// checks what the harness promises the other suites: disk shapes, by-id
// links, tbhost in the guest, and the host-side fault helpers (an ext4
// signature written from the host is seen by blkid; bytes corrupted on an
// image are what the guest reads).
func TestHarness(t *testing.T) {
	shared.prepare(t)
	work := t.TempDir()
	disks := []Disk{
		{Name: "hdd1", Kind: HDD, SizeMiB: 64, LogicalBlockSize: 512, PhysicalBlockSize: 512},
		{Name: "hdd2", Kind: HDD, SizeMiB: 64, LogicalBlockSize: 512, PhysicalBlockSize: 4096},
		{Name: "nvme1", Kind: NVMe, SizeMiB: 64, LogicalBlockSize: 4096, PhysicalBlockSize: 4096, Serial: "NVME-A1"},
	}
	// host-side faults before the boot
	for i := range disks {
		p := filepath.Join(work, disks[i].Name+".img")
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, disks[i].SizeMiB<<20); err != nil {
			t.Fatal(err)
		}
		disks[i].Image = p
	}
	if err := CorruptImage(disks[0].Image, 1<<20, 512); err != nil {
		t.Fatal(err)
	}
	c, _ := NewCache(os.Getenv("TBHOST_LAB_CACHE"), execx.Exec{}, nil)
	if err := c.WriteExt4(context.Background(), disks[1].Image); err != nil {
		t.Fatal(err)
	}
	before, _ := ImageChecksum(disks[2].Image)

	steps := []Step{
		{Name: "shape", Script: `for s in HDD1 HDD2 NVME-A1; do
  d=$(lab_dev $s) || exit 1; n=${d#/dev/}
  echo "$s $n $(cat /sys/block/$n/queue/logical_block_size) $(cat /sys/block/$n/queue/physical_block_size) $(cat /sys/block/$n/queue/rotational) $(cat /sys/block/$n/size)"
done | lab_out shape.txt
ls /dev/disk/by-id | lab_out byid.txt
echo "$(lab_disks hdd)" | lab_out hdds.txt`},
		{Name: "tbhost", Script: `/usr/bin/tbhost --version | lab_out version.txt`},
		{Name: "signature", Script: `blkid -o export $(lab_dev HDD2) | lab_out blkid.txt; wipefs -n $(lab_dev HDD2) | lab_out wipefs.txt`},
		// lab_throttle: reads of HDD2 capped at 1 MiB/s by qemu while the
		// guest runs, then the cap lifted; an unknown disk is refused
		{Name: "throttle", Script: `d=$(lab_dev HDD2)
rd() { a=$(cut -d' ' -f1 /proc/uptime); dd if=$d of=/dev/null bs=1M count=4 skip=$1 iflag=direct 2>/dev/null; b=$(cut -d' ' -f1 /proc/uptime); echo "$a $b" | awk '{printf "%d\n", ($2 - $1) * 100}'; }
lab_throttle 1048576 hdd2; echo $? > $LAB_OUT/cap.rc
rd 8 > $LAB_OUT/capped.cs
lab_throttle 0 hdd2; echo $? > $LAB_OUT/lift.rc
rd 16 > $LAB_OUT/free.cs
lab_throttle 1048576 nosuchdisk 2> $LAB_OUT/bad.err; echo $? > $LAB_OUT/bad.rc
cat $LAB_OUT/*.cs $LAB_OUT/bad.err`},
		{Name: "corrupt", Script: `dd if=$(lab_dev HDD1) bs=512 skip=2048 count=1 2>/dev/null | od -An -v -tx1 | tr -s ' \n' ' ' | lab_out sector.txt
dd if=$(lab_dev HDD1) bs=512 skip=2049 count=1 2>/dev/null | od -An -v -tx1 | tr -s ' \n' ' ' | lab_out next.txt`},
	}
	l := &Lab{Base: shared.base}
	t.Cleanup(func() {
		if pids := LiveQemus(work); len(pids) > 0 {
			t.Errorf("qemu alive after the test: %v", pids)
		}
	})
	res, boot, err := l.RunBatch(t.Context(), Config{Name: "harness", WorkDir: work, Disks: disks, Tbhost: shared.tbhost, MemMiB: 512, Timeout: 15 * time.Minute}, steps)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("boot took %v", boot.Duration.Round(time.Second))
	for _, s := range steps {
		if res[s.Name].ExitCode != 0 {
			t.Errorf("step %s exit %d:\n%s", s.Name, res[s.Name].ExitCode, res[s.Name].Log)
		}
	}
	shape := string(res["shape"].Outputs["shape.txt"])
	for _, want := range []string{"HDD1 sd", " 512 512 1 131072", "HDD2 sd", " 512 4096 1 131072", "NVME-A1 nvme", " 4096 4096 0 131072"} {
		if !strings.Contains(shape, want) {
			t.Errorf("shape lacks %q:\n%s", want, shape)
		}
	}
	byid := string(res["shape"].Outputs["byid.txt"])
	for _, want := range []string{"scsi-0QEMU_QEMU_HARDDISK_HDD1", "scsi-0QEMU_QEMU_HARDDISK_HDD2", "wwn-0x5000c50", "nvme-QEMU_NVMe_Ctrl_NVME-A1", "nvme-nvme."} {
		if !strings.Contains(byid, want) {
			t.Errorf("by-id lacks %q:\n%s", want, byid)
		}
	}
	if v := string(res["tbhost"].Outputs["version.txt"]); !strings.Contains(v, "tbhost") {
		t.Errorf("tbhost --version in the guest: %q", v)
	}
	if b := string(res["signature"].Outputs["blkid.txt"]); !strings.Contains(b, "TYPE=ext4") || !strings.Contains(b, "LABEL=lab-ext4") {
		t.Errorf("blkid does not see the host-written ext4: %q", b)
	}
	if w := string(res["signature"].Outputs["wipefs.txt"]); !strings.Contains(w, "ext4") {
		t.Errorf("wipefs -n: %q", w)
	}
	if s := strings.TrimSpace(string(res["corrupt"].Outputs["sector.txt"])); s != strings.TrimSpace(strings.Repeat("ff ", 512)) {
		t.Errorf("the corrupted sector reads %q..., want all ff", s[:min(len(s), 60)])
	}
	if s := strings.TrimSpace(string(res["corrupt"].Outputs["next.txt"])); s != strings.TrimSpace(strings.Repeat("00 ", 512)) {
		t.Errorf("the sector after the corruption changed: %q...", s[:min(len(s), 60)])
	}
	th := res["throttle"]
	to := func(n string) string { return strings.TrimSpace(string(th.Outputs[n])) }
	t.Logf("throttle: 4 MiB read in %s cs capped at 1 MiB/s, %s cs after the lift; host: %v", to("capped.cs"), to("free.cs"), boot.HostRequests)
	if to("cap.rc") != "0" || to("lift.rc") != "0" {
		t.Errorf("lab_throttle: exit %s (cap), %s (lift):\n%s", to("cap.rc"), to("lift.rc"), th.Log)
	}
	capped, _ := strconv.Atoi(to("capped.cs"))
	free, err := strconv.Atoi(to("free.cs"))
	if capped < 250 || err != nil || free >= capped/2 {
		t.Errorf("4 MiB O_DIRECT read: %s cs with reads capped at 1 MiB/s (want >= 2.5 s), %s cs without (want well under)", to("capped.cs"), to("free.cs"))
	}
	if to("bad.rc") != "1" || !strings.Contains(to("bad.err"), `no disk "nosuchdisk"`) {
		t.Errorf("throttle of an unknown disk: exit %s, %s", to("bad.rc"), to("bad.err"))
	}
	if after, _ := ImageChecksum(disks[2].Image); after != before {
		t.Error("reading a disk in the guest changed its image")
	}
}
