package blockdev

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// ProbeWindow is how much of the start and of the end of a device Probe
// reads: every signature it knows lives in the first 68 KiB (btrfs) or the
// last 128 KiB (md 0.90 / 1.0, backup GPT).
const ProbeWindow = 128 << 10

// Probe looks for data signatures on a device of the given size (bytes) and
// logical block size, the way blkid/wipefs would: ext2/3/4, xfs, btrfs,
// swap, LVM2 PV labels, md RAID superblocks (0.90, 1.0, 1.1, 1.2), LUKS,
// GPT and MBR partition tables. It reads only the first and last
// ProbeWindow bytes, so it is cheap on multi-TB disks. It is pure Go
// because the lab guest (busybox) may have no blkid.
func Probe(r io.ReaderAt, size, logicalBlockSize int64) ([]Signature, error) {
	if logicalBlockSize <= 0 {
		logicalBlockSize = 512
	}
	headLen := int64(ProbeWindow)
	if size < headLen {
		headLen = size
	}
	head := make([]byte, headLen)
	if _, err := readFull(r, head, 0); err != nil {
		return nil, fmt.Errorf("read first %d bytes: %w", headLen, err)
	}
	tailOff := size - ProbeWindow
	if tailOff < 0 {
		tailOff = 0
	}
	tail := make([]byte, size-tailOff)
	if _, err := readFull(r, tail, tailOff); err != nil {
		return nil, fmt.Errorf("read last %d bytes: %w", len(tail), err)
	}
	at := func(off int64, n int) []byte { // bytes at an absolute offset, nil if outside both windows
		if off >= 0 && off+int64(n) <= int64(len(head)) {
			return head[off : off+int64(n)]
		}
		if off >= tailOff && off+int64(n) <= size {
			return tail[off-tailOff : off-tailOff+int64(n)]
		}
		return nil
	}
	var sigs []Signature
	add := func(s Signature) { s.Source = "probe"; sigs = append(sigs, s) }

	// ext2/3/4: superblock at 1024, magic 0xEF53 at +56.
	if sb := at(1024, 256); sb != nil && binary.LittleEndian.Uint16(sb[56:]) == 0xEF53 {
		compat := binary.LittleEndian.Uint32(sb[0x5C:])
		incompat := binary.LittleEndian.Uint32(sb[0x60:])
		t := "ext2"
		switch {
		case incompat&(0x40|0x80|0x200|0x400|0x1000|0x8000|0x10000) != 0: // extents, 64bit, flex_bg, ea_inode, dirdata?, csum_seed, large_dir...
			t = "ext4"
		case compat&0x4 != 0: // has_journal
			t = "ext3"
		}
		add(Signature{Type: t, Offset: 1024 + 56, UUID: uuidString(sb[0x68:0x78]), Label: cString(sb[0x78:0x88])})
	}
	// xfs: "XFSB" at 0.
	if b := at(0, 48); b != nil && string(b[:4]) == "XFSB" {
		add(Signature{Type: "xfs", Offset: 0, UUID: uuidString(b[32:48])})
	}
	// btrfs: "_BHRfS_M" at 64 KiB + 64.
	if b := at(65536, 0x22b); b != nil && string(b[64:72]) == "_BHRfS_M" {
		add(Signature{Type: "btrfs", Offset: 65536 + 64, UUID: uuidString(b[32:48]), Label: cString(b[0x12b:0x22b])})
	}
	// swap: "SWAPSPACE2" (or the old "SWAP-SPACE") in the last 10 bytes of the first page.
	for _, page := range []int64{4096, 8192, 16384, 65536} {
		if b := at(page-10, 10); b != nil && (string(b) == "SWAPSPACE2" || string(b) == "SWAP-SPACE") {
			s := Signature{Type: "swap", Offset: page - 10}
			if u := at(1024+12, 16); u != nil {
				s.UUID = uuidString(u)
			}
			add(s)
			break
		}
	}
	// LVM2 PV: "LABELONE" in one of the first four 512-byte sectors, "LVM2 001" at +24.
	for sec := int64(0); sec < 4; sec++ {
		if b := at(sec*512, 64); b != nil && string(b[:8]) == "LABELONE" && string(b[24:32]) == "LVM2 001" {
			add(Signature{Type: "LVM2_member", Offset: sec * 512, UUID: lvmUUID(string(b[32:64]))})
			break
		}
	}
	// md RAID: magic 0xa92b4efc (LE) at 0 (1.1), 4096 (1.2), end-8K aligned (1.0), end-64K aligned (0.90).
	const mdMagic = 0xa92b4efc
	mdAt := func(off int64, detail string) bool {
		b := at(off, 8)
		if b == nil || binary.LittleEndian.Uint32(b) != mdMagic {
			return false
		}
		add(Signature{Type: "linux_raid_member", Offset: off, Detail: detail})
		return true
	}
	if !mdAt(4096, "md 1.2") && !mdAt(0, "md 1.1") {
		if size >= 8192 && !mdAt((((size>>9)-16)&^7)<<9, "md 1.0") && size >= 65536 {
			mdAt((size&^(65536-1))-65536, "md 0.90")
		}
	}
	// LUKS1/2: "LUKS\xba\xbe" at 0.
	if b := at(0, 8); b != nil && bytes.Equal(b[:6], []byte("LUKS\xba\xbe")) {
		add(Signature{Type: "crypto_LUKS", Offset: 0, Detail: fmt.Sprintf("LUKS%d", binary.BigEndian.Uint16(b[6:8]))})
	}
	// GPT: "EFI PART" at LBA 1 (primary) or the last LBA (backup).
	gpt := false
	for _, off := range []int64{logicalBlockSize, size - logicalBlockSize} {
		if b := at(off, 8); b != nil && string(b) == "EFI PART" {
			add(Signature{Type: "gpt", Offset: off})
			gpt = true
			break
		}
	}
	// MBR: 0x55AA at 510 and a plausible partition entry (not a filesystem boot sector).
	if !gpt {
		if b := at(0, 512); b != nil && b[510] == 0x55 && b[511] == 0xAA && len(sigs) == 0 && mbrPlausible(b) {
			add(Signature{Type: "dos", Offset: 510})
		}
	}
	return sigs, nil
}

func mbrPlausible(b []byte) bool {
	any := false
	for i := 0; i < 4; i++ {
		e := b[446+16*i : 446+16*(i+1)]
		if e[0] != 0 && e[0] != 0x80 {
			return false
		}
		if e[4] != 0 {
			any = true
		}
	}
	return any
}

func readFull(r io.ReaderAt, buf []byte, off int64) (int, error) {
	n, err := r.ReadAt(buf, off)
	if n == len(buf) {
		return n, nil
	}
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func uuidString(b []byte) string {
	if len(b) != 16 || bytes.Equal(b, make([]byte, 16)) {
		return ""
	}
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// lvmUUID formats LVM's 32-character id the way pvs prints it (6-4-4-4-4-4-6).
func lvmUUID(s string) string {
	if len(s) != 32 {
		return strings.TrimSpace(s)
	}
	parts := []int{6, 4, 4, 4, 4, 4, 6}
	var out []string
	i := 0
	for _, n := range parts {
		out = append(out, s[i:i+n])
		i += n
	}
	return strings.Join(out, "-")
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.TrimSpace(string(b))
}
