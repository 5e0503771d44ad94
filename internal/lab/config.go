package lab

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"
)

// DiskKind is how a virtual disk is attached.
type DiskKind string

const (
	// HDD is a scsi-hd on virtio-scsi (one queue, rotation_rate 7200): the
	// guest sees rotational=1 and mq-deadline, like a SATA HDD.
	HDD DiskKind = "hdd"
	// NVMe is a qemu nvme controller with one namespace: rotational=0.
	NVMe DiskKind = "nvme"
)

// Disk is one virtual disk of a lab VM.
type Disk struct {
	// Name is the disk's id in the run: qemu drive id and image file
	// name (<Name>.img). Letters, digits, - and _.
	Name    string
	Kind    DiskKind
	SizeMiB int64
	// Serial as the guest sees it (default: Name in upper case, e.g. HDD1).
	Serial string
	// LogicalBlockSize and PhysicalBlockSize in bytes (0 = 512), see
	// BlockSizes for 512n/512e/4Kn.
	LogicalBlockSize  int
	PhysicalBlockSize int
	// WWN of an HDD (0 = derived from Name, stable across boots).
	WWN uint64
	// Image reuses an existing image file (a second boot of the same
	// disks); empty = a new sparse file in the run's work dir.
	Image string
	// PartitionsMiB, when set, gives a new image a DOS partition table
	// with these partitions (MiB each, numbered from 1); SizeMiB must
	// leave 2 MiB beyond their sum.
	PartitionsMiB []int64
	// ReadIOPS, when positive, caps the disk at this many read requests
	// per second (qemu's throttling.iops-read on its drive): a fail-slow
	// disk that still answers, each read waiting its turn (issue 20).
	// 0 = no cap.
	ReadIOPS int
}

// Config describes one lab boot.
type Config struct {
	Disks   []Disk
	MemMiB  int           // default 1024
	SMP     int           // default 2
	Timeout time.Duration // whole boot, default 20 min
	// WorkDir holds the disk images, the initrd and the serial log;
	// images persist there for a second boot. Required.
	WorkDir string
	// Name names the serial log (serial-<Name>.log); default "run".
	Name string
	// Script is the scenario (busybox sh), run as /lab/scenario.
	Script []byte
	// Tbhost is a statically linked tbhost binary (CGO_ENABLED=0),
	// installed as /usr/bin/tbhost in the guest. Optional.
	Tbhost string
	// Files are extra guest files: absolute guest path -> content.
	Files map[string][]byte
}

// BlockSizes maps a block-size format to qemu's logical/physical sizes:
// 512n (512/512), 512e (512/4096), 4kn (4096/4096).
func BlockSizes(format string) (logical, physical int, err error) {
	switch strings.ToLower(format) {
	case "", "512n", "512":
		return 512, 512, nil
	case "512e":
		return 512, 4096, nil
	case "4kn", "4k", "4096":
		return 4096, 4096, nil
	}
	return 0, 0, fmt.Errorf("block size %q: want 512n, 512e or 4kn", format)
}

// Disks returns n disks of kind named <kind><i> (hdd1..hddN), serial
// HDD1..., with the given size and block-size format.
func Disks(kind DiskKind, n int, sizeMiB int64, blockFormat string) ([]Disk, error) {
	l, p, err := BlockSizes(blockFormat)
	if err != nil {
		return nil, err
	}
	var ds []Disk
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("%s%d", kind, i)
		ds = append(ds, Disk{Name: name, Kind: kind, SizeMiB: sizeMiB, Serial: strings.ToUpper(name),
			LogicalBlockSize: l, PhysicalBlockSize: p})
	}
	return ds, nil
}

// Without returns the disks except the one named name (a member gone).
func Without(disks []Disk, name string) []Disk {
	var out []Disk
	for _, d := range disks {
		if d.Name != name {
			out = append(out, d)
		}
	}
	return out
}

func (d Disk) serial() string {
	if d.Serial != "" {
		return d.Serial
	}
	return strings.ToUpper(d.Name)
}

func (d Disk) wwn() uint64 {
	if d.WWN != 0 {
		return d.WWN
	}
	h := fnv.New32a()
	h.Write([]byte(d.Name))
	return 0x5000c50000000000 | uint64(h.Sum32())<<4 // NAA 5, a Seagate-like OUI
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func (c *Config) validate() error {
	if c.WorkDir == "" {
		return fmt.Errorf("lab config: no work dir")
	}
	seen := map[string]bool{}
	serials := map[string]bool{}
	for _, d := range c.Disks {
		if !validName(d.Name) {
			return fmt.Errorf("lab disk name %q: use letters, digits, - and _", d.Name)
		}
		if seen[d.Name] || serials[d.serial()] {
			return fmt.Errorf("lab disk %s: duplicate name or serial", d.Name)
		}
		seen[d.Name], serials[d.serial()] = true, true
		if !validName(d.serial()) {
			return fmt.Errorf("lab disk %s: serial %q: use letters, digits, - and _", d.Name, d.serial())
		}
		if d.Kind != HDD && d.Kind != NVMe {
			return fmt.Errorf("lab disk %s: kind %q: want hdd or nvme", d.Name, d.Kind)
		}
		if d.Image == "" && d.SizeMiB <= 0 {
			return fmt.Errorf("lab disk %s: size must be positive", d.Name)
		}
		for _, bs := range []int{d.LogicalBlockSize, d.PhysicalBlockSize} {
			if bs != 0 && bs != 512 && bs != 4096 {
				return fmt.Errorf("lab disk %s: block size %d: want 512 or 4096", d.Name, bs)
			}
		}
		if d.ReadIOPS < 0 || d.ReadIOPS > 1000000 {
			return fmt.Errorf("lab disk %s: read IOPS cap %d: want 0 (none) to 1000000", d.Name, d.ReadIOPS)
		}
		if d.LogicalBlockSize > d.PhysicalBlockSize && d.PhysicalBlockSize != 0 {
			return fmt.Errorf("lab disk %s: logical block size above physical", d.Name)
		}
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.MemMiB == 0 {
		c.MemMiB = 1024
	}
	if c.SMP == 0 {
		c.SMP = 2
	}
	if c.Timeout == 0 {
		c.Timeout = 20 * time.Minute
	}
	if c.Name == "" {
		c.Name = "run"
	}
	return c
}
