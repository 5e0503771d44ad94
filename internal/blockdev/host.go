package blockdev

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/tbhost/tbhost/internal/sysread"
)

// The host model behind the capacity and timeline figures (issue 15): the
// machine's RAM, each disk's NUMA node (its controller's), and the I/O
// scheduler as a finding when it is not what the reference host's
// operators run.

// Finding codes of the inventory (an API: JSON findings[].code).
const (
	// FindingScheduler: a disk's I/O scheduler is not mq-deadline (HDD) or
	// none (NVMe).
	FindingScheduler = "io-scheduler"
)

// Finding is advice about the machine: what is off, and the commands that
// fix it. Findings do not change inventory's exit status (0).
type Finding struct {
	Code   string   `json:"code"`
	Device string   `json:"device"`
	Text   string   `json:"text"`
	Fix    []string `json:"fix"`
}

// maxMemKiB bounds MemTotal (16 PiB).
const maxMemKiB = 1 << 44

// readMemTotal is MemTotal of /proc/meminfo in bytes; 0 when the file or
// the line is missing. A MemTotal line that is no number of kB in range is
// a refusal.
func readMemTotal(h *hostFS) int64 {
	b, err := h.readBytes("/proc/meminfo")
	if err != nil {
		return 0
	}
	n, err := parseMemTotal(b)
	if err != nil {
		h.refused(fmt.Errorf("%s: %w (fix the --root tree)", h.path("/proc/meminfo"), err))
		return 0
	}
	return n
}

// parseMemTotal is the MemTotal line of a meminfo file in bytes (0 without
// one): "MemTotal:  65747416 kB", 1 kB to 16 PiB.
func parseMemTotal(b []byte) (int64, error) {
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("MemTotal %q: want \"<number> kB\": %w", strings.TrimSpace(rest), sysread.ErrOutOfRange)
		}
		kib, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kib < 1 || kib > maxMemKiB {
			return 0, fmt.Errorf("MemTotal %q kB: want 1 to %d: %w", f[0], int64(maxMemKiB), sysread.ErrOutOfRange)
		}
		return kib << 10, nil
	}
	return 0, nil
}

// maxNUMANode is the kernel's largest node number (CONFIG_NODES_SHIFT 10).
const maxNUMANode = 1023

// numaNode is the NUMA node of the disk at /sys/block/name: the first
// numa_node attribute of device/ or, walking up its device path
// (/sys/devices/pci0000:00/0000:00:17.0/ata1/.../block/sda), of the
// controller it hangs off. -1: none (the kernel's "no node", or no
// attribute at all, as in a VM without NUMA).
func numaNode(h *hostFS, name, link string) int {
	base := "/sys/block/" + name
	cands := []string{base + "/device/numa_node", base + "/device/device/numa_node"}
	if link != "" {
		dir := path.Join("/sys/block", link)
		for i := 0; i < 32 && strings.HasPrefix(dir, "/sys/devices/"); i++ {
			cands = append(cands, dir+"/numa_node")
			dir = path.Dir(dir)
		}
	}
	for _, c := range cands {
		if !h.exists(c) {
			continue
		}
		if v := h.readInt(c, -1, -1, maxNUMANode); v >= -1 {
			return int(v)
		}
	}
	return -1
}

// schedulers parses queue/scheduler ("[mq-deadline] kyber none"): the one
// in brackets and every one the kernel offers.
func schedulers(s string) (current string, avail []string) {
	for _, f := range strings.Fields(s) {
		// exactly one pair of brackets around a name ("[]0]" is not one;
		// found by FuzzSysfsAttrs)
		if len(f) > 2 && f[0] == '[' && f[len(f)-1] == ']' && !strings.ContainsAny(f[1:len(f)-1], "[]") {
			f = f[1 : len(f)-1]
			current = f
		}
		avail = append(avail, f)
	}
	if current == "" && len(avail) == 1 {
		current = avail[0] // "none" alone: a queue without a choice
	}
	return current, avail
}

// wantScheduler is the reference host's choice for d: mq-deadline on
// HDDs (it orders the seeks of concurrent readers), none on NVMe (no seeks;
// any scheduler only costs CPU). "" where tbhost has no opinion.
func wantScheduler(d *Device) (want, media, match string) {
	switch {
	case d.Transport == "nvme":
		return "none", "nvme", `KERNEL=="nvme[0-9]*n[0-9]*", ENV{DEVTYPE}=="disk"`
	case d.Rotational:
		return "mq-deadline", "hdd", `KERNEL=="sd*", ENV{DEVTYPE}=="disk", ATTR{queue/rotational}=="1"`
	}
	return "", "", ""
}

// schedulerFindings lists the disks whose scheduler is not the reference
// host's, with the command that switches now and the udev rule that keeps
// it across reboots.
func schedulerFindings(inv *Inventory) []Finding {
	out := []Finding{}
	for _, d := range inv.Disks {
		want, media, match := wantScheduler(d)
		if want == "" || d.Scheduler == "" || d.Scheduler == want {
			continue
		}
		what := "HDD"
		if d.Transport == "nvme" {
			what = "NVMe disk"
		}
		f := Finding{Code: FindingScheduler, Device: d.Name,
			Text: fmt.Sprintf("%s: I/O scheduler %s, the reference host's operators run %s on every %s", d.Name, d.Scheduler, want, what)}
		offered := false
		for _, a := range d.schedulers {
			offered = offered || a == want
		}
		if !offered && want != "none" {
			f.Fix = append(f.Fix, "modprobe "+want+"   # the kernel offers only: "+strings.Join(d.schedulers, " "))
		}
		f.Fix = append(f.Fix,
			fmt.Sprintf("echo %s > /sys/block/%s/queue/scheduler   # now, until the next boot", want, d.Name),
			fmt.Sprintf(`echo 'ACTION=="add|change", %s, ATTR{queue/scheduler}="%s"' > /etc/udev/rules.d/60-tbhost-iosched-%s.rules && udevadm control --reload && udevadm trigger --subsystem-match=block   # every boot`, match, want, media))
		out = append(out, f)
	}
	return out
}

// readInt is readUint for attributes that may be negative (numa_node -1).
func (h *hostFS) readInt(p string, def, min, max int64) int64 {
	s := h.readString(p)
	if s == "" {
		return def
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < min || v > max {
		h.refused(fmt.Errorf("%s: %q: want an integer in [%d, %d] (fix the --root tree): %w", h.path(p), s, min, max, sysread.ErrOutOfRange))
		return def
	}
	return v
}
