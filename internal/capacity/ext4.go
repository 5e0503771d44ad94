package capacity

import (
	"fmt"
	"math"
	"strconv"
)

// Ext4Options are the mkfs.ext4 options tbhost passes. They are explicit so
// that the result does not depend on the host's /etc/mke2fs.conf size types
// (mke2fs picks "small" below 512 MiB, "big" and "huge" above 4 and 16 TiB,
// each with its own inode ratio and block size).
type Ext4Options struct {
	BlockSize       int64   `json:"block_size" yaml:"block_size"`             // -b
	InodeSize       int64   `json:"inode_size" yaml:"inode_size"`             // -I
	InodeRatio      int64   `json:"inode_ratio" yaml:"inode_ratio"`           // -i: bytes per inode
	ReservedPercent float64 `json:"reserved_percent" yaml:"reserved_percent"` // -m: blocks only root may use
}

// Args are the options as mkfs.ext4 arguments.
func (o Ext4Options) Args() []string {
	return []string{
		"-b", strconv.FormatInt(o.BlockSize, 10),
		"-I", strconv.FormatInt(o.InodeSize, 10),
		"-i", strconv.FormatInt(o.InodeRatio, 10),
		"-m", strconv.FormatFloat(o.ReservedPercent, 'f', -1, 64),
	}
}

// Ext4 computes what mke2fs 1.47.0 (Debian 12) makes of a device of size
// bytes with the ext4 features of Debian's mke2fs.conf (has_journal, extent,
// huge_file, flex_bg, metadata_csum, 64bit, dir_nlink, extra_isize,
// sparse_super, resize_inode below 2^32 blocks) and what the kernel's statfs
// then reports. It follows lib/ext2fs/initialize.c (group count, inodes per
// group, reserved GDT blocks, dropping a last group too small for its
// metadata), ext2fs_default_journal_size, and fs/ext4/super.c (the overhead
// in s_overhead_clusters, the 2 % / 4096-cluster delayed-allocation reserve).
// Checked block for block against the real mkfs.ext4 and a loop mount at the
// reference host's LV sizes (capacity_real_test.go).
func Ext4(size int64, o Ext4Options) (Usage, error) {
	if err := o.check(); err != nil {
		return Usage{}, err
	}
	bs := o.BlockSize
	blocks := uint64(size / bs)
	if blocks < 2048 {
		return Usage{}, fmt.Errorf("ext4 on %d bytes: mkfs.ext4 needs at least %d bytes for a journal", size, 2048*bs)
	}
	// mke2fs sets the inode count once, from the device size.
	inodes := blocks * uint64(bs) / uint64(o.InodeRatio)
	if inodes > math.MaxUint32 {
		inodes = math.MaxUint32
	}
	bpg := uint64(8 * bs)           // blocks per group: one bitmap block
	descPerBlock := uint64(bs / 64) // 64bit: 64-byte group descriptors
	inodesPerBlock := uint64(bs / o.InodeSize)
	resizeInode := blocks <= math.MaxUint32 // mke2fs drops resize_inode above 2^32 blocks
	var groups, descBlocks, ipg, itb, rsvGDT uint64
	for {
		groups = ceilDiv(blocks, bpg)
		descBlocks = ceilDiv(groups, descPerBlock)
		ipg = ceilDiv(inodes, groups)
		if max := uint64(1<<16) - inodesPerBlock; ipg > max {
			ipg = max
		}
		// the inode table fills whole blocks, and ipg is a multiple of 8
		itb = ceilDiv(ipg*uint64(o.InodeSize), uint64(bs))
		ipg = itb * uint64(bs) / uint64(o.InodeSize)
		if ipg < 8 {
			ipg = 8
		}
		ipg &^= 7
		itb = ceilDiv(ipg*uint64(o.InodeSize), uint64(bs))
		rsvGDT = 0
		if resizeInode {
			rsvGDT = reservedGDTBlocks(blocks, bpg, descPerBlock, descBlocks, uint64(bs))
		}
		// a last group too small for its own metadata (+50) is dropped
		last := 2 + itb
		if hasSuperBackup(groups - 1) {
			last += 1 + descBlocks + rsvGDT
		}
		rem := blocks % bpg
		if rem != 0 && rem < last+50 && groups > 1 {
			blocks -= rem
			continue
		}
		break
	}
	var overhead uint64 = groups * (2 + itb) // block bitmap, inode bitmap, inode table
	for g := uint64(0); g < groups; g++ {
		if hasSuperBackup(g) {
			overhead += 1 + descBlocks + rsvGDT
		}
	}
	journal := defaultJournalBlocks(blocks)
	overhead += journal
	// root directory, lost+found (16 KiB), the journal inode's extent index
	// block when its extents do not fit in the inode, the resize inode's
	// double-indirect block
	used := uint64(1) + uint64(16384/bs)
	if ceilDiv(journal, 32768) > 4 {
		used++
	}
	if resizeInode {
		used++
	}
	reserved := uint64(o.ReservedPercent * float64(blocks) / 100)
	delalloc := blocks / 50
	if delalloc > 4096 {
		delalloc = 4096
	}
	fsBlocks := blocks - overhead
	free := fsBlocks - used
	u := Usage{
		FS:            "ext4",
		DeviceBytes:   size,
		BlockSize:     bs,
		Size:          int64(fsBlocks) * bs,
		Overhead:      int64(overhead) * bs,
		Used:          int64(used) * bs,
		Reserved:      int64(reserved) * bs,
		Inodes:        int64(ipg * groups),
		AvailableRoot: int64(sub(free, delalloc)) * bs,
		Available:     int64(sub(free, reserved+delalloc)) * bs,
		Exact:         true,
		Model:         "mke2fs 1.47.0 (Debian 12) ext4 defaults with explicit -b/-I/-i/-m; Linux ext4 statfs",
	}
	return u, nil
}

func (o Ext4Options) check() error {
	switch o.BlockSize {
	case 1024, 2048, 4096:
	default:
		return fmt.Errorf("ext4 block size %d: use 1024, 2048 or 4096", o.BlockSize)
	}
	if o.BlockSize == 1024 || o.BlockSize == 2048 {
		// first_data_block is 1 with 1 KiB blocks; tbhost never makes them
		return fmt.Errorf("ext4 block size %d: the capacity model covers 4096-byte blocks only", o.BlockSize)
	}
	if o.InodeSize < 128 || o.InodeSize > o.BlockSize || o.InodeSize&(o.InodeSize-1) != 0 {
		return fmt.Errorf("ext4 inode size %d: a power of two from 128 to the block size", o.InodeSize)
	}
	if o.InodeRatio < o.BlockSize || o.InodeRatio > 1<<26 {
		return fmt.Errorf("ext4 inode ratio %d: between the block size and 64 MiB (mke2fs's limits)", o.InodeRatio)
	}
	if o.ReservedPercent < 0 || o.ReservedPercent > 50 || math.IsNaN(o.ReservedPercent) {
		return fmt.Errorf("ext4 reserved percentage %v: between 0 and 50", o.ReservedPercent)
	}
	return nil
}

// reservedGDTBlocks is calc_reserved_gdt_blocks of mke2fs: room to grow the
// filesystem to 1024 times its size or 2^32 blocks, whichever is smaller,
// at most one block of block numbers.
func reservedGDTBlocks(blocks, bpg, descPerBlock, descBlocks, bs uint64) uint64 {
	maxBlocks := uint64(math.MaxUint32)
	if blocks < maxBlocks/1024 {
		maxBlocks = blocks * 1024
	}
	rsvGroups := ceilDiv(maxBlocks, bpg)
	rsv := ceilDiv(rsvGroups, descPerBlock) - descBlocks
	if limit := bs / 4; rsv > limit {
		rsv = limit
	}
	return rsv
}

// defaultJournalBlocks is ext2fs_default_journal_size of e2fsprogs 1.47.0.
func defaultJournalBlocks(blocks uint64) uint64 {
	switch {
	case blocks < 32768:
		return 1024
	case blocks < 256*1024:
		return 4096
	case blocks < 512*1024:
		return 8192
	case blocks < 4096*1024:
		return 16384
	case blocks < 8192*1024:
		return 32768
	case blocks < 16384*1024:
		return 65536
	case blocks < 32768*1024:
		return 131072
	}
	return 262144
}

// hasSuperBackup: with sparse_super, groups 0, 1 and the powers of 3, 5
// and 7 hold a superblock and group descriptor backup.
func hasSuperBackup(g uint64) bool {
	if g <= 1 {
		return true
	}
	for _, base := range []uint64{3, 5, 7} {
		p := base
		for p < g {
			p *= base
		}
		if p == g {
			return true
		}
	}
	return false
}

func ceilDiv(a, b uint64) uint64 { return (a + b - 1) / b }

func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}
