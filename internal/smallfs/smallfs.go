// Package smallfs mounts a small tmpfs for a test: a file system that
// fills up for real (the kernel's own ENOSPC), standing in for a full
// disk. Only root can mount; without root, or where mount is refused,
// the test is skipped with a message saying so.
package smallfs

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/prometheus/procfs"
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
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s at the end of the test: %v %s; still open under it: %v", dir, err, out, holders(dir))
		}
	})
	return dir
}

// holders lists the processes with their working directory or an open
// file under dir ("pid comm"): what keeps a busy tmpfs mounted.
func holders(dir string) []string {
	var found []string
	procs, _ := procfs.AllProcs()
	for _, p := range procs {
		cwd, _ := p.Cwd()
		targets, _ := p.FileDescriptorTargets()
		for _, to := range append(targets, cwd) {
			if to == dir || strings.HasPrefix(to, dir+"/") {
				comm, _ := p.Comm()
				found = append(found, fmt.Sprintf("%d %s", p.PID, comm))
				break
			}
		}
	}
	return found
}

// Resize gives the tmpfs mounted on dir a new size: room again after it
// filled up.
func Resize(t *testing.T, dir, size string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,size="+size, dir).CombinedOutput(); err != nil {
		t.Fatalf("remount %s with size %s: %v %s", dir, size, err, out)
	}
}
