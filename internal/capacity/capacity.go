// Package capacity says how many bytes the filesystems tbhost creates really
// hold, and whether the Syzygy table set and its prefix store fit in them.
//
// The filesystem models follow the mkfs programs of Debian 12 (e2fsprogs
// 1.47.0, xfsprogs 6.1) and the kernel's statfs; tests check them against the
// real mkfs on sparse files of the reference host's sizes. The options tbhost
// passes to mkfs come from here too (MkfsArgs), so that what is planned is
// what provision-host makes.
package capacity

import (
	"fmt"
)

// Usage is a filesystem as statfs reports it right after mkfs.
type Usage struct {
	FS          string `json:"fs" yaml:"fs"`
	DeviceBytes int64  `json:"device_bytes" yaml:"device_bytes"`
	BlockSize   int64  `json:"block_size" yaml:"block_size"`
	// Size is statfs's f_blocks: the device less the filesystem's metadata.
	Size     int64 `json:"size" yaml:"size"`
	Overhead int64 `json:"overhead" yaml:"overhead"`
	// Used is what a new filesystem already uses (root directory,
	// lost+found, journal index; for xfs the kernel's per-AG reservations).
	Used int64 `json:"used" yaml:"used"`
	// Reserved is ext4's root reserve (-m).
	Reserved int64 `json:"reserved" yaml:"reserved"`
	Inodes   int64 `json:"inodes,omitempty" yaml:"inodes,omitempty"`
	// Available is what an ordinary user can write (f_bavail); root can
	// write AvailableRoot.
	Available     int64 `json:"available" yaml:"available"`
	AvailableRoot int64 `json:"available_root" yaml:"available_root"`
	// Exact is true when the model reproduces mkfs block for block.
	Exact bool   `json:"exact" yaml:"exact"`
	Model string `json:"model" yaml:"model"`
}

// Role is what tbhost puts on a filesystem.
type Role string

const (
	RoleTables Role = "tables"
	RolePrefix Role = "prefix"
)

// Choice is the filesystem tbhost makes for a role, with its reasons.
type Choice struct {
	FS   string      `json:"fs" yaml:"fs"`
	Ext4 Ext4Options `json:"ext4,omitempty" yaml:"ext4,omitempty"`
	Why  string      `json:"why" yaml:"why"`
}

// Choose is the mkfs configuration tbhost uses for role on fs (ext4 or xfs).
//
// Prefix store, ext4: no root reserve (-m 0: the store is rebuilt from the
// tables, nothing on it needs root's emergency room, and the default 5 %
// would leave 374.5 GiB of the reference host's 401.99 GiB, less than the
// 385.41 GiB the full prefix store needs) and one inode per MiB (411,648 on
// the reference host for at most 3,022 prefix files and the manifest; the
// default one per 16 KiB spends 6.3 GiB on inode tables).
//
// Tables, ext4: a 1 % root reserve (277 GiB on the reference host: room for
// root to repair a full filesystem, instead of the default 5 % = 1.35 TiB)
// and one inode per 4 MiB (the largefile4 ratio: 7.1 million inodes for
// 3,022 files).
func Choose(role Role, fs string) (Choice, error) {
	switch fs {
	case "xfs":
		return Choice{FS: "xfs", Why: "mkfs.xfs defaults: no root reserve, inodes allocated on demand"}, nil
	case "ext4":
	default:
		return Choice{}, fmt.Errorf("filesystem %q: tbhost makes ext4 or xfs", fs)
	}
	switch role {
	case RolePrefix:
		return Choice{FS: "ext4", Ext4: Ext4Options{BlockSize: 4096, InodeSize: 256, InodeRatio: 1 << 20, ReservedPercent: 0},
			Why: "no root reserve (-m 0: the store is rebuilt from the tables; 5 % would not leave room for the full prefix store), one inode per MiB (-i 1048576)"}, nil
	case RoleTables:
		return Choice{FS: "ext4", Ext4: Ext4Options{BlockSize: 4096, InodeSize: 256, InodeRatio: 4 << 20, ReservedPercent: 1},
			Why: "1 % root reserve (-m 1: room for root to repair a full filesystem, not the default 5 %), one inode per 4 MiB (-i 4194304) for a few thousand large files"}, nil
	}
	return Choice{}, fmt.Errorf("filesystem role %q: tables or prefix", role)
}

// MkfsArgs are the options (after the program name, before the label and
// device) that tbhost passes to mkfs.<fs> for role.
func MkfsArgs(role Role, fs string) ([]string, error) {
	c, err := Choose(role, fs)
	if err != nil {
		return nil, err
	}
	if c.FS == "ext4" {
		return c.Ext4.Args(), nil
	}
	return nil, nil
}

// Usable is the Usage of the filesystem tbhost makes for role on a device
// of size bytes. xfs needs the device's stripe geometry (zero values for a
// plain device).
func Usable(role Role, fs string, size int64, stripe XFSOptions) (Usage, error) {
	c, err := Choose(role, fs)
	if err != nil {
		return Usage{}, err
	}
	if c.FS == "xfs" {
		return XFS(size, stripe)
	}
	return Ext4(size, c.Ext4)
}
