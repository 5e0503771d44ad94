// Package smallfs mounts a small tmpfs for a test: a file system that
// fills up for real (the kernel's own ENOSPC), standing in for a full
// disk. Only root can mount; without root, or where mount is refused,
// the test is skipped with a message saying so.
package smallfs

import (
	"os"
	"os/exec"
	"testing"
)

// Mount mounts a tmpfs of size (mount's size= syntax: "4k", "823040")
// on a new temporary directory, unmounted when the test ends, and
// returns the directory. what names the stand-in in the skip message
// ("a full store").
func Mount(t *testing.T, size, what string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("SKIP: only root can mount the small tmpfs that stands in for %s", what)
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tbhost-smallfs-test", dir).CombinedOutput(); err != nil {
		t.Skipf("SKIP: cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir
}

// Resize gives the tmpfs mounted on dir a new size: room again after it
// filled up.
func Resize(t *testing.T, dir, size string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,size="+size, dir).CombinedOutput(); err != nil {
		t.Fatalf("remount %s with size %s: %v %s", dir, size, err, out)
	}
}
