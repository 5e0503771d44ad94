package lab

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// CorruptImage flips every bit of n bytes at offset of a disk image (the
// guest must be down). Every byte changes, so the corruption is certain.
func CorruptImage(image string, offset int64, n int) error {
	f, err := os.OpenFile(image, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("corrupt %s: %w", image, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if offset < 0 || n <= 0 || offset+int64(n) > st.Size() {
		return fmt.Errorf("corrupt %s: %d bytes at %d is outside the %d-byte image", image, n, offset, st.Size())
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, offset); err != nil {
		return fmt.Errorf("corrupt %s: %w", image, err)
	}
	for i := range buf {
		buf[i] ^= 0xff
	}
	if _, err := f.WriteAt(buf, offset); err != nil {
		return fmt.Errorf("corrupt %s: %w", image, err)
	}
	return f.Close()
}

// ImageChecksum is the sha256 of a disk image: compare before and after a
// step that must not write.
func ImageChecksum(image string) (string, error) {
	f, err := os.Open(image)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("checksum %s: %w", image, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// WriteExt4 makes an ext4 file system on a disk image from the host (guest
// down) with the mke2fs unpacked in the cache, so the disk carries a real
// ext4 signature that blkid/wipefs and tbhost's guards must notice.
func (c *Cache) WriteExt4(ctx context.Context, image string) error {
	stage := c.stageDir()
	mke2fs, err := findInStage(stage, "mke2fs")
	if err != nil {
		return fmt.Errorf("write ext4 on %s: %w (run Prepare first)", image, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	lib := "LD_LIBRARY_PATH=" + filepath.Join(stage, "lib/x86_64-linux-gnu") + ":" + filepath.Join(stage, "usr/lib/x86_64-linux-gnu")
	if _, err := c.Runner.Run(ctx, "env", lib, mke2fs, "-q", "-F", "-t", "ext4", "-L", "lab-ext4", image); err != nil {
		return fmt.Errorf("write ext4 on %s: %w", image, err)
	}
	return nil
}

// Reuse returns disks with each Image set from a previous result, for a
// second boot of the same disks.
func Reuse(disks []Disk, images map[string]string) []Disk {
	out := make([]Disk, len(disks))
	for i, d := range disks {
		if p, ok := images[d.Name]; ok {
			d.Image = p
		}
		out[i] = d
	}
	return out
}
