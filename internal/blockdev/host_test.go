package blockdev_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/fixturetree"
)

func findings(inv *blockdev.Inventory) map[string]blockdev.Finding {
	out := map[string]blockdev.Finding{}
	for _, f := range inv.Findings {
		out[f.Device] = f
	}
	return out
}

// Issue 15, item 6: RAM, NUMA node and I/O scheduler on the captured
// trees. The reference host (one node, 64 GiB) runs what its operators
// chose: no finding.
func TestHostModelOfTheReferenceHost(t *testing.T) {
	inv := readTree(t, "reference-host")
	if inv.MemTotal != 65_747_416*1024 {
		t.Errorf("MemTotal %d, want 65,747,416 kB", inv.MemTotal)
	}
	for _, d := range inv.All() {
		if d.NUMANode != 0 {
			t.Errorf("%s on NUMA node %d, want 0 (its controller's numa_node)", d.Name, d.NUMANode)
		}
	}
	if len(inv.Findings) != 0 {
		t.Errorf("findings on the reference host: %+v", inv.Findings)
	}
	var out bytes.Buffer
	if err := blockdev.WriteText(&out, inv); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "RAM 62.7 GiB (MemTotal 65747416 kB)\n") || !strings.Contains(out.String(), "NUMA") || strings.Contains(out.String(), "FINDINGS") {
		t.Errorf("text:\n%s", out.String())
	}
	b, _ := json.Marshal(inv)
	for _, w := range []string{`"mem_total":67325353984`, `"numa_node":0`, `"findings":[]`} {
		if !bytes.Contains(b, []byte(w)) {
			t.Errorf("JSON lacks %s", w)
		}
	}
}

// Two sockets: the SAS HBA's disks on node 1, the chipset's SATA disks on
// node 0 (found walking up from the disk to the PCI controller); sdk runs
// bfq: a finding with the command and the udev rule. The SSD (sdl) gets no
// opinion.
func TestHostModelOfTheBusyHost(t *testing.T) {
	inv := readTree(t, "busy-host")
	if inv.MemTotal != 263_855_104*1024 {
		t.Errorf("MemTotal %d", inv.MemTotal)
	}
	for name, node := range map[string]int{"sda": 1, "sdf": 1, "sdk": 1, "sdg": 0, "sdh": 0, "sdh1": 0, "sdl": 0} {
		if d := inv.Find(name); d == nil || d.NUMANode != node {
			t.Errorf("%s: NUMA %v, want %d", name, d, node)
		}
	}
	fs := findings(inv)
	f, ok := fs["sdk"]
	if len(fs) != 1 || !ok || f.Code != blockdev.FindingScheduler || !strings.Contains(f.Text, "bfq") || !strings.Contains(f.Text, "mq-deadline") {
		t.Fatalf("findings %+v, want one io-scheduler finding for sdk", inv.Findings)
	}
	if len(f.Fix) != 2 || f.Fix[0] != "echo mq-deadline > /sys/block/sdk/queue/scheduler   # now, until the next boot" ||
		!strings.Contains(f.Fix[1], `ATTR{queue/rotational}=="1", ATTR{queue/scheduler}="mq-deadline"' > /etc/udev/rules.d/60-tbhost-iosched-hdd.rules`) {
		t.Errorf("fix %q", f.Fix)
	}
	var out bytes.Buffer
	blockdev.WriteText(&out, inv)
	if !strings.Contains(out.String(), "FINDINGS\n  sdk: I/O scheduler bfq") || !strings.Contains(out.String(), "RAM 251.63 GiB") {
		t.Errorf("text:\n%s", out.String())
	}
}

// The real lab guest (qemu without NUMA, busybox without /proc/meminfo in
// the snapshot): node -1 ("none"), RAM unknown, the schedulers qemu's
// disks get (mq-deadline on scsi-hd, none on NVMe) draw no finding.
func TestHostModelOfTheLabCapture(t *testing.T) {
	inv := readTree(t, "lab-guest-real")
	if inv.MemTotal != 0 || len(inv.Findings) != 0 {
		t.Errorf("MemTotal %d, findings %+v", inv.MemTotal, inv.Findings)
	}
	for _, d := range inv.Disks {
		if d.NUMANode != -1 {
			t.Errorf("%s: NUMA %d, want -1", d.Name, d.NUMANode)
		}
	}
	var out bytes.Buffer
	blockdev.WriteText(&out, inv)
	if !strings.HasPrefix(out.String(), "RAM unknown") || !strings.Contains(out.String(), "  none  ") {
		t.Errorf("text:\n%s", out.String())
	}
}

// Schedulers that are off on both kinds of disk, one the kernel does not
// offer, and a NUMA node straight on device/.
func TestSchedulerFindings(t *testing.T) {
	root := fixturetree.Copy(t, tree(t, "reference-host"))
	write := func(p, s string) {
		t.Helper()
		full := filepath.Join(root, p)
		os.Remove(full)
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sys/block/sda/queue/scheduler", "mq-deadline kyber [bfq] none\n")
	write("sys/block/sdb/queue/scheduler", "[none] kyber\n")
	write("sys/block/nvme1n1/queue/scheduler", "[mq-deadline] none\n")
	write("sys/block/sdc/device/numa_node", "3\n")
	inv, err := blockdev.Read(context.Background(), blockdev.Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	fs := findings(inv)
	if len(fs) != 3 {
		t.Fatalf("findings %+v, want sda, sdb, nvme1n1", inv.Findings)
	}
	if f := fs["sdb"]; len(f.Fix) != 3 || !strings.HasPrefix(f.Fix[0], "modprobe mq-deadline") || !strings.Contains(f.Fix[0], "none kyber") {
		t.Errorf("sdb (mq-deadline not offered): %q", f.Fix)
	}
	if f := fs["nvme1n1"]; !strings.Contains(f.Text, "mq-deadline") || !strings.Contains(f.Text, "none on every NVMe disk") ||
		f.Fix[0] != "echo none > /sys/block/nvme1n1/queue/scheduler   # now, until the next boot" || !strings.Contains(f.Fix[1], "60-tbhost-iosched-nvme.rules") {
		t.Errorf("nvme1n1: %+v", f)
	}
	if d := inv.Find("sdc"); d.NUMANode != 3 {
		t.Errorf("sdc NUMA %d, want 3 (device/numa_node first)", d.NUMANode)
	}
}

// Hostile trees: the new files are read bounded and checked, and a bad
// one is an error naming it, at once.
func TestHostModelRefusesBadFiles(t *testing.T) {
	fifo := func(p string) error { return syscall.Mkfifo(p, 0o644) }
	text := func(s string) func(string) error {
		return func(p string) error { return os.WriteFile(p, []byte(s), 0o644) }
	}
	huge := func(p string) error {
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Truncate(1 << 40)
	}
	const numa = "sys/devices/pci0000:00/0000:00:17.0/numa_node"
	for _, c := range []struct {
		name, file string
		make       func(string) error
	}{
		{"meminfo is a FIFO", "proc/meminfo", fifo},
		{"meminfo is huge", "proc/meminfo", huge},
		{"MemTotal no number", "proc/meminfo", text("MemTotal:  lots kB\n")},
		{"MemTotal negative", "proc/meminfo", text("MemTotal:  -5 kB\n")},
		{"MemTotal in pages", "proc/meminfo", text("MemTotal:  5\n")},
		{"MemTotal beyond 16 PiB", "proc/meminfo", text("MemTotal:  99999999999999999 kB\n")},
		{"numa_node is a FIFO", numa, fifo},
		{"numa_node 99999", numa, text("99999\n")},
		{"numa_node -2", numa, text("-2\n")},
		{"numa_node words", numa, text("zero\n")},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := fixturetree.Copy(t, tree(t, "reference-host"))
			p := filepath.Join(root, c.file)
			os.Remove(p)
			if err := c.make(p); err != nil {
				t.Fatal(err)
			}
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
	// no MemTotal line, no meminfo: unknown, not an error
	for _, content := range []string{"MemFree: 5 kB\n", ""} {
		root := fixturetree.Copy(t, tree(t, "reference-host"))
		p := filepath.Join(root, "proc/meminfo")
		os.Remove(p)
		if content != "" {
			os.WriteFile(p, []byte(content), 0o644)
		}
		inv, err := blockdev.Read(context.Background(), blockdev.Options{Root: root})
		if err != nil || inv.MemTotal != 0 {
			t.Errorf("meminfo %q: %v, MemTotal %v", content, err, inv)
		}
	}
}
