// Package blockdev is tbhost's inventory of a machine's block devices: what
// each disk and partition is (stable id, serial, WWN, model, size, block
// sizes, rotational, transport, scheduler), what it holds (partitions,
// filesystem/RAID/LVM signatures, PV membership) and what uses it (mounts,
// swap, device-mapper/md holders), with a role guess (hdd, nvme, ssd,
// system). It reads /sys, /proc, /dev/disk/by-id and /run/udev under a root
// directory, so a snapshot of another host (see Snapshot) replays exactly.
package blockdev

import (
	"fmt"
	"sort"
	"strings"
)

// Roles a device can be given.
const (
	RoleSystem = "system" // holds /, /boot, /boot/efi, /usr or /var: never planned whole
	RoleHDD    = "hdd"    // rotational disk
	RoleNVMe   = "nvme"   // NVMe namespace or partition
	RoleSSD    = "ssd"    // other non-rotational disk
	RoleOther  = "other"  // removable, read-only, empty
)

// Signature is something found on a device that says it holds data.
type Signature struct {
	Type   string `json:"type" yaml:"type"`                         // ext4, xfs, btrfs, swap, LVM2_member, linux_raid_member, crypto_LUKS, gpt, dos
	Offset int64  `json:"offset" yaml:"offset"`                     // byte offset of the magic (-1 when from udev)
	UUID   string `json:"uuid,omitempty" yaml:"uuid,omitempty"`     // filesystem/PV UUID when known
	Label  string `json:"label,omitempty" yaml:"label,omitempty"`   // filesystem label when known
	Source string `json:"source" yaml:"source"`                     // probe (read from the device) or udev
	Detail string `json:"detail,omitempty" yaml:"detail,omitempty"` // e.g. "md 1.2", "LUKS2"
}

// Holder is a device built on top of this one (device-mapper or md).
type Holder struct {
	Kernel string `json:"kernel"`         // dm-3, md0
	Name   string `json:"name,omitempty"` // vg--hdd-tables_rimage_0 (dm name), md0
}

func (h Holder) String() string {
	if h.Name != "" && h.Name != h.Kernel {
		return h.Name + " (" + h.Kernel + ")"
	}
	return h.Kernel
}

// PV is an LVM physical volume as `pvs` reports it.
type PV struct {
	Device string `json:"device"`       // /dev/sda
	VG     string `json:"vg,omitempty"` // "" when the PV belongs to no VG
	UUID   string `json:"uuid,omitempty"`
}

// Device is one whole disk or one partition.
type Device struct {
	Name      string   `json:"name"`             // sda, nvme0n1p4
	Path      string   `json:"path"`             // /dev/sda
	Kind      string   `json:"kind"`             // disk or part
	Parent    string   `json:"parent,omitempty"` // the disk of a partition
	Partition int      `json:"partition,omitempty"`
	MajMin    string   `json:"majmin"`              // 8:0
	StableID  string   `json:"stable_id,omitempty"` // /dev/disk/by-id/wwn-... (or the serial link)
	IDLinks   []string `json:"id_links,omitempty"`  // every /dev/disk/by-id link to it
	Model     string   `json:"model,omitempty"`
	Vendor    string   `json:"vendor,omitempty"`
	Serial    string   `json:"serial,omitempty"`
	WWN       string   `json:"wwn,omitempty"`
	Size      int64    `json:"size"` // bytes
	Start     int64    `json:"start,omitempty"`
	// LogicalBlockSize and PhysicalBlockSize in bytes (512/512 is 512n,
	// 512/4096 is 512e, 4096/4096 is 4Kn).
	LogicalBlockSize  int64  `json:"logical_block_size"`
	PhysicalBlockSize int64  `json:"physical_block_size"`
	Rotational        bool   `json:"rotational"`
	ReadOnly          bool   `json:"read_only,omitempty"`
	Removable         bool   `json:"removable,omitempty"`
	Transport         string `json:"transport,omitempty"` // nvme, sata, sas, scsi, virtio, usb
	Scheduler         string `json:"scheduler,omitempty"`
	// NUMANode is the node of the disk's controller; -1: none (no NUMA, or
	// the kernel does not know).
	NUMANode   int         `json:"numa_node"`
	Partitions []*Device   `json:"partitions,omitempty"`
	Holders    []Holder    `json:"holders,omitempty"`
	Slaves     []string    `json:"slaves,omitempty"`
	Mounts     []string    `json:"mounts,omitempty"` // "/" or "/ (via vg0-root)"
	Swap       bool        `json:"swap,omitempty"`
	Signatures []Signature `json:"signatures,omitempty"`
	ProbeError string      `json:"probe_error,omitempty"` // why the device could not be read
	PV         *PV         `json:"pv,omitempty"`
	Role       string      `json:"role"`
	RoleWhy    string      `json:"role_why,omitempty"`

	schedulers   []string          // every I/O scheduler queue/scheduler offers
	systemMounts []string          // mounts of /, /boot, ... reaching this device
	udev         map[string]string // udev properties, when /run/udev has them
}

// BlockFormat names the logical/physical block size combination.
func (d *Device) BlockFormat() string {
	switch {
	case d.LogicalBlockSize == 4096:
		return "4Kn"
	case d.LogicalBlockSize == 512 && d.PhysicalBlockSize >= 4096:
		return "512e"
	case d.LogicalBlockSize == 512:
		return "512n"
	}
	return fmt.Sprintf("%d/%d", d.LogicalBlockSize, d.PhysicalBlockSize)
}

// Ref is how tbhost names the device to a human: the stable id if any, else the path.
func (d *Device) Ref() string {
	if d.StableID != "" {
		return d.StableID
	}
	return d.Path
}

// Busy lists what actively uses the device right now (mounts, swap,
// holders): things no wipe can override.
func (d *Device) Busy() []string {
	var out []string
	for _, m := range d.Mounts {
		out = append(out, "mounted at "+m)
	}
	if d.Swap {
		out = append(out, "in use as swap")
	}
	if len(d.Holders) > 0 {
		hs := make([]string, len(d.Holders))
		for i, h := range d.Holders {
			hs[i] = h.String()
		}
		out = append(out, "held by "+strings.Join(hs, ", "))
	}
	for _, p := range d.Partitions {
		for _, b := range p.Busy() {
			out = append(out, p.Name+" "+b)
		}
	}
	return out
}

// Content lists what the device holds that a wipe would destroy:
// partitions, signatures and PV membership.
func (d *Device) Content() []string {
	var out []string
	if len(d.Partitions) > 0 {
		names := make([]string, len(d.Partitions))
		for i, p := range d.Partitions {
			names[i] = p.Name
		}
		out = append(out, "partitions "+strings.Join(names, ", "))
	}
	for _, s := range d.Signatures {
		if d.PV != nil && s.Type == "LVM2_member" {
			continue // said below, with the VG
		}
		txt := s.Type + " signature"
		if s.Offset >= 0 {
			txt += fmt.Sprintf(" at byte %d", s.Offset)
		}
		out = append(out, txt)
	}
	if d.PV != nil {
		if d.PV.VG != "" {
			out = append(out, "LVM PV of VG "+d.PV.VG)
		} else {
			out = append(out, "LVM PV in no VG")
		}
	}
	return out
}

// HasSignature reports whether a signature of type t was found.
func (d *Device) HasSignature(t string) bool {
	for _, s := range d.Signatures {
		if s.Type == t {
			return true
		}
	}
	return false
}

// Inventory is every disk of a machine, partitions nested.
type Inventory struct {
	Root     string `json:"root"` // "/" or the --root directory read
	Hostname string `json:"hostname,omitempty"`
	// MemTotal is the RAM (MemTotal of /proc/meminfo) in bytes; 0: unknown.
	MemTotal int64     `json:"mem_total"`
	Disks    []*Device `json:"disks"`
	// Findings are advice (the I/O scheduler); they do not change the exit status.
	Findings    []Finding `json:"findings"`
	PVsKnown    bool      `json:"pvs_known"` // PV membership was read (pvs ran, or a snapshot had it)
	Fingerprint string    `json:"fingerprint"`
	Warnings    []string  `json:"warnings,omitempty"`
}

// All returns every disk and partition, disks first in name order, each
// followed by its partitions.
func (inv *Inventory) All() []*Device {
	var out []*Device
	for _, d := range inv.Disks {
		out = append(out, d)
		out = append(out, d.Partitions...)
	}
	return out
}

// Find looks a device up by kernel name (sda), path (/dev/sda), stable id or
// any /dev/disk/by-id link (full path or base name).
func (inv *Inventory) Find(ref string) *Device {
	r := strings.TrimSpace(ref)
	for _, d := range inv.All() {
		if r == d.Name || r == d.Path || (d.StableID != "" && r == d.StableID) {
			return d
		}
		for _, l := range d.IDLinks {
			if r == l || "/dev/disk/by-id/"+r == l {
				return d
			}
		}
	}
	return nil
}

// BySerial finds the whole disk with the given serial (and WWN when both
// are known).
func (inv *Inventory) BySerial(serial, wwn string) *Device {
	for _, d := range inv.Disks {
		if serial != "" && d.Serial == serial && (wwn == "" || d.WWN == "" || d.WWN == wwn) {
			return d
		}
		if serial == "" && wwn != "" && d.WWN == wwn {
			return d
		}
	}
	return nil
}

func sortDevices(ds []*Device) {
	sort.Slice(ds, func(i, j int) bool { return naturalLess(ds[i].Name, ds[j].Name) })
}

// naturalLess orders sda < sdb < sdaa and nvme0n1p2 < nvme0n1p10.
func naturalLess(a, b string) bool {
	if len(a) != len(b) && strings.TrimRight(a, "0123456789") != strings.TrimRight(b, "0123456789") {
		ta, tb := strings.TrimRight(a, "0123456789"), strings.TrimRight(b, "0123456789")
		if len(ta) != len(tb) && strings.HasPrefix(ta, "sd") && strings.HasPrefix(tb, "sd") {
			return len(ta) < len(tb)
		}
	}
	ai, bi := 0, 0
	for ai < len(a) && bi < len(b) {
		ca, cb := a[ai], b[bi]
		if isDigit(ca) && isDigit(cb) {
			sa := ai
			for ai < len(a) && isDigit(a[ai]) {
				ai++
			}
			sb := bi
			for bi < len(b) && isDigit(b[bi]) {
				bi++
			}
			na, nb := strings.TrimLeft(a[sa:ai], "0"), strings.TrimLeft(b[sb:bi], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			continue
		}
		if ca != cb {
			return ca < cb
		}
		ai++
		bi++
	}
	return len(a)-ai < len(b)-bi
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
