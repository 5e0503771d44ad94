package blockdev

import (
	"sort"
	"strings"
	"testing"
)

func TestNaturalOrder(t *testing.T) {
	names := []string{"sdaa", "nvme0n1p10", "sdb", "nvme1n1", "sda", "nvme0n1p2", "sdz", "nvme0n1"}
	sort.Slice(names, func(i, j int) bool { return naturalLess(names[i], names[j]) })
	want := "nvme0n1 nvme0n1p2 nvme0n1p10 nvme1n1 sda sdb sdz sdaa"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestBlockFormat(t *testing.T) {
	for _, c := range []struct {
		l, p int64
		want string
	}{{512, 512, "512n"}, {512, 4096, "512e"}, {4096, 4096, "4Kn"}, {1024, 1024, "1024/1024"}} {
		d := Device{LogicalBlockSize: c.l, PhysicalBlockSize: c.p}
		if got := d.BlockFormat(); got != c.want {
			t.Errorf("%d/%d: %s", c.l, c.p, got)
		}
	}
}

func TestStableIDPrefersWWNThenSerial(t *testing.T) {
	links := []string{"/dev/disk/by-id/nvme-eui.0025388b91d4a001", "/dev/disk/by-id/ata-ST6000_ZAD0A1B1", "/dev/disk/by-id/wwn-0x5000c500a1b2c301"}
	if got := stableID(links, "ZAD0A1B1"); got != "/dev/disk/by-id/wwn-0x5000c500a1b2c301" {
		t.Errorf("got %s", got)
	}
	if got := stableID(links[:2], "ZAD0A1B1"); got != "/dev/disk/by-id/ata-ST6000_ZAD0A1B1" {
		t.Errorf("got %s", got)
	}
	if got := stableID([]string{"/dev/disk/by-id/nvme-nvme.1b36-4e56", "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME1"}, "NVME1"); got != "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME1" {
		t.Errorf("got %s", got)
	}
}

func TestVPDParsing(t *testing.T) {
	// VPD 0x83 with a T10 vendor id then an NAA designator
	pg83 := []byte{0, 0x83, 0, 24,
		2, 1, 0, 8, 'Q', 'E', 'M', 'U', ' ', ' ', ' ', ' ',
		1, 3, 0, 8, 0x50, 0x00, 0xc5, 0x00, 0xa1, 0xb2, 0xc3, 0x01}
	if got := vpd83NAA(pg83); got != "0x5000c500a1b2c301" {
		t.Errorf("NAA %q", got)
	}
	if got := vpd83NAA([]byte{0, 0x80, 0, 0}); got != "" {
		t.Errorf("wrong page: %q", got)
	}
}
