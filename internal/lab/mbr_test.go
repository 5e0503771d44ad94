package lab

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteMBR(t *testing.T) {
	for _, lbs := range []int{512, 4096} {
		img := filepath.Join(t.TempDir(), "n.img")
		sizes := []int64{4 << 20, 4 << 20, 4 << 20, 40 << 20}
		os.WriteFile(img, nil, 0o644)
		os.Truncate(img, PartitionedSize(sizes))
		if err := writeMBR(img, lbs, sizes); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(img)
		if b[510] != 0x55 || b[511] != 0xaa {
			t.Fatal("no boot signature")
		}
		start := uint32((1 << 20) / lbs)
		for i, sz := range sizes {
			e := b[446+16*i:]
			if e[4] != 0x83 {
				t.Errorf("partition %d type %x", i+1, e[4])
			}
			if got := binary.LittleEndian.Uint32(e[8:]); got != start {
				t.Errorf("lbs %d partition %d starts at %d, want %d", lbs, i+1, got, start)
			}
			if got := binary.LittleEndian.Uint32(e[12:]); got != uint32(sz/int64(lbs)) {
				t.Errorf("lbs %d partition %d has %d blocks", lbs, i+1, got)
			}
			start += uint32(sz / int64(lbs))
		}
		if lbs == 512 {
			t.Run("sfdisk agrees", func(t *testing.T) {
				if _, err := exec.LookPath("sfdisk"); err != nil {
					t.Skip("sfdisk not installed (Debian package fdisk): cannot cross-check the partition table")
				}
				out, err := exec.Command("sfdisk", "--dump", img).CombinedOutput()
				if err != nil {
					t.Fatalf("sfdisk: %v %s", err, out)
				}
				if !strings.Contains(string(out), "n.img4 : start=       30720, size=       81920, type=83") {
					t.Errorf("sfdisk --dump:\n%s", out)
				}
			})
		}
	}
	img := filepath.Join(t.TempDir(), "small.img")
	os.WriteFile(img, make([]byte, 2<<20), 0o644)
	if err := writeMBR(img, 512, []int64{4 << 20}); err == nil {
		t.Error("a partition past the end must be refused")
	}
}
