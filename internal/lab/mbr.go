package lab

import (
	"encoding/binary"
	"fmt"
	"os"
)

// writeMBR writes a DOS partition table with up to four primary Linux
// partitions of the given sizes (bytes, each rounded down to whole MiB),
// 1 MiB aligned, numbered 1..n, onto a (sparse) image. Sizes are in
// logical blocks of lbs bytes, as the kernel reads them.
func writeMBR(image string, lbs int, sizes []int64) error {
	if len(sizes) == 0 || len(sizes) > 4 {
		return fmt.Errorf("partition table of %s: 1 to 4 partitions, not %d", image, len(sizes))
	}
	if lbs != 512 && lbs != 4096 {
		return fmt.Errorf("partition table of %s: block size %d", image, lbs)
	}
	st, err := os.Stat(image)
	if err != nil {
		return err
	}
	const mib = 1 << 20
	mbr := make([]byte, 512)
	start := int64(mib)
	for i, sz := range sizes {
		sz = sz / mib * mib
		if sz <= 0 {
			return fmt.Errorf("partition %d of %s: size below 1 MiB", i+1, image)
		}
		if start+sz > st.Size() {
			return fmt.Errorf("partition %d of %s ends at %d, past the image's %d bytes", i+1, image, start+sz, st.Size())
		}
		e := mbr[446+16*i : 446+16*(i+1)]
		e[0] = 0x00                            // not bootable
		copy(e[1:4], []byte{0xfe, 0xff, 0xff}) // CHS: use LBA
		e[4] = 0x83                            // Linux
		copy(e[5:8], []byte{0xfe, 0xff, 0xff}) // CHS: use LBA
		binary.LittleEndian.PutUint32(e[8:12], uint32(start/int64(lbs)))
		binary.LittleEndian.PutUint32(e[12:16], uint32(sz/int64(lbs)))
		start += sz
	}
	binary.LittleEndian.PutUint32(mbr[440:444], 0x7ab10000|uint32(len(sizes))) // disk signature
	mbr[510], mbr[511] = 0x55, 0xaa
	f, err := os.OpenFile(image, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(mbr, 0); err != nil {
		f.Close()
		return fmt.Errorf("partition table of %s: %w", image, err)
	}
	return f.Close()
}

// PartitionedSize is the image size that holds partitions of these sizes
// (1 MiB in front, 1 MiB spare at the end).
func PartitionedSize(sizes []int64) int64 {
	total := int64(2 << 20)
	for _, s := range sizes {
		total += s / (1 << 20) * (1 << 20)
	}
	return total
}
