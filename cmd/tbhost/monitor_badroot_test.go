package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/fixturetree"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Issue 12 defect 6: a --root tree with /dev/zero as diskstats, an md
// "degraded" of 2e9 or a FIFO as a sysfs attribute made monitor check die
// with a Go fatal error (exit 2, CRITICAL to Nagios) or hang. Each must be
// UNKNOWN (exit 3) at once, naming the file.
func TestMonitorCheckBadRootIsUnknown(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(t *testing.T, root string) string // returns the file to be named
	}{
		{"diskstats is /dev/zero", func(t *testing.T, root string) string {
			for _, f := range []string{"diskstats", "diskstats.0", "diskstats.1", "diskstats.2"} {
				os.Remove(filepath.Join(root, "proc", f))
			}
			p := filepath.Join(root, "proc", "diskstats")
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{"a replayed diskstats.1 is /dev/zero", func(t *testing.T, root string) string {
			p := filepath.Join(root, "proc", "diskstats.1")
			os.Remove(p)
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{"diskstats is a huge file", func(t *testing.T, root string) string {
			p := filepath.Join(root, "proc", "diskstats.0")
			if err := os.Truncate(p, 1<<40); err != nil { // sparse: no disk space
				t.Fatal(err)
			}
			return p
		}},
		{"md degraded 2e9", func(t *testing.T, root string) string {
			md := filepath.Join(root, "sys", "block", "md0", "md")
			write(t, filepath.Join(md, "level"), "raid5\n")
			write(t, filepath.Join(md, "raid_disks"), "6\n")
			write(t, filepath.Join(md, "degraded"), "2000000000\n")
			write(t, filepath.Join(md, "array_state"), "clean\n")
			return filepath.Join(md, "degraded")
		}},
		{"dm/name is a FIFO", func(t *testing.T, root string) string {
			p := filepath.Join(root, "sys", "block", "dm-0", "dm", "name")
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{"md sync_completed is a FIFO", func(t *testing.T, root string) string {
			md := filepath.Join(root, "sys", "block", "md0", "md")
			write(t, filepath.Join(md, "level"), "raid5\n")
			write(t, filepath.Join(md, "raid_disks"), "6\n")
			p := filepath.Join(md, "sync_completed")
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := fixturetree.Copy(t, derived(t, "balanced"))
			file := c.spoil(t, root)
			type result struct {
				code        int
				out, stderr string
			}
			done := make(chan result, 1)
			go func() {
				code, out, stderr := runTB(t, nil, "--root", root, "monitor", "check", "--for", "10s")
				done <- result{code, out, stderr}
			}()
			select {
			case r := <-done:
				if r.code != 3 || !strings.HasPrefix(r.out, "UNKNOWN: ") || !strings.Contains(r.out, file) {
					t.Errorf("exit %d, want 3 (UNKNOWN) naming %s\nstdout: %sstderr: %s", r.code, file, r.out, r.stderr)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("monitor check hung for 20 s")
			}
		})
	}
}
