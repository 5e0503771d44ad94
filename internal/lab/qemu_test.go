package lab

import (
	"strings"
	"testing"
)

func TestQemuArgsShapesDisksLikeTheHost(t *testing.T) {
	hdd, _ := Disks(HDD, 2, 256, "512e")
	nvme, _ := Disks(NVMe, 1, 128, "4kn")
	cfg := Config{Disks: append(hdd, nvme...), WorkDir: "/w"}.withDefaults()
	images := map[string]string{"hdd1": "/w/hdd1.img", "hdd2": "/w/hdd2.img", "nvme1": "/w/nvme1.img"}
	args := qemuArgs(cfg, "/c/vmlinuz", "/w/initrd.img", images)
	line := strings.Join(args, " ")
	for _, want := range []string{
		"-accel tcg,thread=multi -cpu max",
		"-smp 2 -m 1024",
		"-no-reboot",
		"-kernel /c/vmlinuz -initrd /w/initrd.img",
		"-device virtio-scsi-pci,id=scsi0,num_queues=1",
		"-drive if=none,id=hdd1,file=/w/hdd1.img,format=raw,cache=unsafe",
		"-device scsi-hd,bus=scsi0.0,drive=hdd1,serial=HDD1,channel=0,scsi-id=1,lun=0,rotation_rate=7200,wwn=0x",
		"scsi-id=2,lun=0,rotation_rate=7200",
		"logical_block_size=512,physical_block_size=4096",
		"-device nvme,drive=nvme1,serial=NVME1,logical_block_size=4096,physical_block_size=4096",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("argv lacks %q:\n%s", want, line)
		}
	}
	if strings.Contains(line, "kvm") || strings.Contains(line, "accel=") {
		t.Errorf("TCG only, via -accel: %s", line)
	}
	for i, a := range args {
		if a == "-append" && !strings.Contains(args[i+1], "console=ttyS0") {
			t.Errorf("kernel command line %q", args[i+1])
		}
	}
	if strings.Contains(line, "throttling") {
		t.Errorf("no cap asked for: %s", line)
	}
	// a fail-slow disk: its drive capped at 15 read IOPS, the others not
	slow := append([]Disk(nil), hdd...)
	slow[1].ReadIOPS = 15
	line = strings.Join(qemuArgs(Config{Disks: slow, WorkDir: "/w"}.withDefaults(), "k", "i", images), " ")
	if !strings.Contains(line, "-drive if=none,id=hdd2,file=/w/hdd2.img,format=raw,cache=unsafe,throttling.iops-read=15 ") ||
		strings.Count(line, "throttling") != 1 {
		t.Errorf("hdd2 not capped alone at 15 read IOPS: %s", line)
	}
	// NVMe only: no SCSI controller
	only := Config{Disks: nvme, WorkDir: "/w"}.withDefaults()
	if strings.Contains(strings.Join(qemuArgs(only, "k", "i", images), " "), "virtio-scsi") {
		t.Error("no HDD, no virtio-scsi controller")
	}
}

func TestDiskWWNStableAndDistinct(t *testing.T) {
	a, b := Disk{Name: "hdd1"}, Disk{Name: "hdd2"}
	if a.wwn() != (Disk{Name: "hdd1", Image: "/x"}).wwn() {
		t.Error("WWN must depend on the disk's name only (stable across boots)")
	}
	if a.wwn() == b.wwn() {
		t.Error("two disks share a WWN")
	}
	if a.wwn()>>60 != 5 {
		t.Errorf("WWN %x is not NAA 5", a.wwn())
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{WorkDir: "/w", Disks: []Disk{{Name: "hdd1", Kind: HDD, SizeMiB: 1}}}
	if err := ok.validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]Config{
		"no work dir":  {Disks: ok.Disks},
		"bad name":     {WorkDir: "/w", Disks: []Disk{{Name: "a b", Kind: HDD, SizeMiB: 1}}},
		"dup serial":   {WorkDir: "/w", Disks: []Disk{{Name: "a", Kind: HDD, SizeMiB: 1, Serial: "X"}, {Name: "b", Kind: HDD, SizeMiB: 1, Serial: "X"}}},
		"bad kind":     {WorkDir: "/w", Disks: []Disk{{Name: "a", Kind: "ssd", SizeMiB: 1}}},
		"no size":      {WorkDir: "/w", Disks: []Disk{{Name: "a", Kind: HDD}}},
		"block 1024":   {WorkDir: "/w", Disks: []Disk{{Name: "a", Kind: HDD, SizeMiB: 1, LogicalBlockSize: 1024}}},
		"log>phys":     {WorkDir: "/w", Disks: []Disk{{Name: "a", Kind: HDD, SizeMiB: 1, LogicalBlockSize: 4096, PhysicalBlockSize: 512}}},
		"serial comma": {WorkDir: "/w", Disks: []Disk{{Name: "a", Kind: HDD, SizeMiB: 1, Serial: "X,Y"}}},
		"iops < 0":     {WorkDir: "/w", Disks: []Disk{{Name: "a", Kind: HDD, SizeMiB: 1, ReadIOPS: -1}}},
	}
	for name, c := range bad {
		if err := c.validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, _, err := BlockSizes("1k"); err == nil {
		t.Error("BlockSizes accepted 1k")
	}
	if l, p, _ := BlockSizes("512e"); l != 512 || p != 4096 {
		t.Errorf("512e = %d/%d", l, p)
	}
}
