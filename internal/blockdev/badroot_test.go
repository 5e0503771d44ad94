package blockdev_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/fixturetree"

	"github.com/tbhost/tbhost/internal/blockdev"
)

// Issue 12 defect 6 for the inventory: sysfs and /proc files under --root
// are read bounded; a device, FIFO, huge file or wild number in place of
// one is an error naming it, at once (before: an unbounded read or a hang).
func TestReadRefusesBadAttributes(t *testing.T) {
	replace := func(t *testing.T, p string, make func(string) error) {
		t.Helper()
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := make(p); err != nil {
			t.Fatal(err)
		}
	}
	devZero := func(p string) error { return os.Symlink("/dev/zero", p) }
	fifo := func(p string) error { return syscall.Mkfifo(p, 0o644) }
	text := func(s string) func(string) error {
		return func(p string) error { return os.WriteFile(p, []byte(s), 0o644) }
	}
	huge := func(p string) error { // sparse
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Truncate(1 << 40)
	}
	for _, c := range []struct {
		name, file string
		make       func(string) error
	}{
		{"size is /dev/zero", "sys/block/sda/size", devZero},
		{"size out of range", "sys/block/sda/size", text("99999999999999999999\n")},
		{"rotational is a FIFO", "sys/block/sda/queue/rotational", fifo},
		{"rotational is 7", "sys/block/sda/queue/rotational", text("7\n")},
		{"logical block size 1 MiB", "sys/block/sda/queue/logical_block_size", text("1048576\n")},
		{"model is a huge file", "sys/block/sda/device/model", huge},
		{"proc/mounts is /dev/zero", "proc/mounts", devZero},
		{"proc/swaps is a FIFO", "proc/swaps", fifo},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := fixturetree.Dir(t, "../../lvm/refhost/reference-host.tar.gz")
			p := filepath.Join(root, c.file)
			replace(t, p, c.make)
			done := make(chan error, 1)
			go func() {
				_, err := blockdev.Read(context.Background(), blockdev.Options{Root: root})
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), p) {
					t.Errorf("%v, want an error naming %s", err, p)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Read blocked for 20 s")
			}
		})
	}
}
