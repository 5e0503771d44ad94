package blockdev

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func types(sigs []Signature) string {
	var t []string
	for _, s := range sigs {
		t = append(t, s.Type)
	}
	return strings.Join(t, ",")
}

func probeBytes(t *testing.T, img []byte, lbs int64) []Signature {
	t.Helper()
	sigs, err := Probe(bytes.NewReader(img), int64(len(img)), lbs)
	if err != nil {
		t.Fatal(err)
	}
	return sigs
}

// Synthetic images with each magic where the kernel tools put it.
func TestProbeSynthetic(t *testing.T) {
	const size = 4 << 20
	put := func(img []byte, off int, b []byte) { copy(img[off:], b) }
	le32 := func(v uint32) []byte { b := make([]byte, 4); binary.LittleEndian.PutUint32(b, v); return b }
	cases := []struct {
		name string
		lbs  int64
		make func(img []byte)
		want string
	}{
		{"blank", 512, func([]byte) {}, ""},
		{"ext4", 512, func(img []byte) {
			put(img, 1024+56, []byte{0x53, 0xEF})
			put(img, 1024+0x60, le32(0x40)) // extents
		}, "ext4"},
		{"ext3", 512, func(img []byte) {
			put(img, 1024+56, []byte{0x53, 0xEF})
			put(img, 1024+0x5C, le32(0x4)) // has_journal
		}, "ext3"},
		{"ext2", 512, func(img []byte) { put(img, 1024+56, []byte{0x53, 0xEF}) }, "ext2"},
		{"xfs", 512, func(img []byte) { put(img, 0, []byte("XFSB")) }, "xfs"},
		{"btrfs", 512, func(img []byte) { put(img, 65536+64, []byte("_BHRfS_M")) }, "btrfs"},
		{"swap", 512, func(img []byte) { put(img, 4096-10, []byte("SWAPSPACE2")) }, "swap"},
		{"lvm2 pv", 512, func(img []byte) {
			put(img, 512, []byte("LABELONE"))
			put(img, 512+24, []byte("LVM2 001abcdefghijklmnopqrstuvwxyz012345"))
		}, "LVM2_member"},
		{"md 1.2", 512, func(img []byte) { put(img, 4096, le32(0xa92b4efc)) }, "linux_raid_member"},
		{"md 1.0", 512, func(img []byte) { put(img, ((size>>9-16)&^7)<<9, le32(0xa92b4efc)) }, "linux_raid_member"},
		{"md 0.90", 512, func(img []byte) { put(img, size&^(65536-1)-65536, le32(0xa92b4efc)) }, "linux_raid_member"},
		{"luks2", 512, func(img []byte) { put(img, 0, []byte("LUKS\xba\xbe\x00\x02")) }, "crypto_LUKS"},
		{"gpt 512", 512, func(img []byte) {
			put(img, 510, []byte{0x55, 0xAA})
			put(img, 446+4, []byte{0xEE})
			put(img, 512, []byte("EFI PART"))
		}, "gpt"},
		{"gpt 4Kn", 4096, func(img []byte) { put(img, 4096, []byte("EFI PART")) }, "gpt"},
		{"gpt backup only", 512, func(img []byte) { put(img, size-512, []byte("EFI PART")) }, "gpt"},
		{"mbr", 512, func(img []byte) {
			put(img, 510, []byte{0x55, 0xAA})
			put(img, 446, []byte{0x80, 0, 0, 0, 0x83})
		}, "dos"},
		{"boot sector is not an mbr", 512, func(img []byte) {
			put(img, 510, []byte{0x55, 0xAA})
			put(img, 446, []byte{0x12, 0x34})
		}, ""},
	}
	for _, c := range cases {
		img := make([]byte, size)
		c.make(img)
		if got := types(probeBytes(t, img, c.lbs)); got != c.want {
			t.Errorf("%s: found %q, want %q", c.name, got, c.want)
		}
	}
}

func TestProbeTinyDevice(t *testing.T) {
	if got := types(probeBytes(t, make([]byte, 1000), 512)); got != "" {
		t.Errorf("1000-byte zero device: %q", got)
	}
}

// Real tools make real signatures; Probe must agree with blkid.
func TestProbeRealFilesystems(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, argv ...string) string {
		img := filepath.Join(dir, name)
		if err := os.WriteFile(img, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(img, 64<<20); err != nil {
			t.Fatal(err)
		}
		if _, err := exec.LookPath(argv[0]); err != nil {
			t.Skipf("%s not installed (apt-get install e2fsprogs util-linux)", argv[0])
		}
		if out, err := exec.Command(argv[0], append(argv[1:], img)...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", argv, err, out)
		}
		return img
	}
	for _, c := range []struct {
		name string
		argv []string
		want string
	}{
		{"ext4.img", []string{"mkfs.ext4", "-q", "-F"}, "ext4"},
		{"ext2.img", []string{"mke2fs", "-q", "-F", "-t", "ext2"}, "ext2"},
		{"swap.img", []string{"mkswap"}, "swap"},
	} {
		img := mk(c.name, c.argv...)
		f, err := os.Open(img)
		if err != nil {
			t.Fatal(err)
		}
		sigs, err := Probe(f, 64<<20, 512)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if types(sigs) != c.want {
			t.Errorf("%s: probe found %q, want %q", c.name, types(sigs), c.want)
		}
		t.Run(c.name+"/blkid agrees", func(t *testing.T) {
			blkid, err := exec.LookPath("blkid")
			if err != nil {
				t.Skip("blkid not installed (Debian package util-linux): cannot cross-check the UUID")
			}
			out, _ := exec.Command(blkid, "-p", "-o", "value", "-s", "UUID", img).Output()
			if u := strings.TrimSpace(string(out)); u != "" && len(sigs) > 0 && sigs[0].UUID != u {
				t.Errorf("%s: probe UUID %q, blkid %q", c.name, sigs[0].UUID, u)
			}
		})
		// wipefs --all must leave nothing Probe can find
		t.Run(c.name+"/wipefs leaves nothing", func(t *testing.T) {
			wipefs, err := exec.LookPath("wipefs")
			if err != nil {
				t.Skip("wipefs not installed (Debian package util-linux): cannot check what wipefs leaves")
			}
			if out, err := exec.Command(wipefs, "--all", "-q", img).CombinedOutput(); err != nil {
				t.Fatalf("wipefs: %v %s", err, out)
			}
			f, _ := os.Open(img)
			sigs, _ := Probe(f, 64<<20, 512)
			f.Close()
			if len(sigs) != 0 {
				t.Errorf("%s after wipefs: still %q", c.name, types(sigs))
			}
		})
	}
}
