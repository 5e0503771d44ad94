package capacity

import "fmt"

// XFSOptions are the mkfs.xfs settings the model needs. tbhost passes no
// sizing options to mkfs.xfs (its defaults fit tables and prefixes); the
// stripe geometry comes from the LV, which mkfs.xfs reads from the device.
type XFSOptions struct {
	// StripeUnit and StripeWidth (bytes; 0 without striping) are what
	// mkfs.xfs finds on a RAID LV (raid0/raid5: the stripe size, and the data
	// stripes times it). They align the data size and the log.
	StripeUnit  int64 `json:"stripe_unit,omitempty" yaml:"stripe_unit,omitempty"`
	StripeWidth int64 `json:"stripe_width,omitempty" yaml:"stripe_width,omitempty"`
}

const (
	xfsBlockSize = 4096
	// XFS_MAX_LOG_BYTES of xfsprogs 6.1: 2 GiB less XFS_MIN_LOG_BYTES.
	xfsMaxLogBytes = 2<<30 - 10<<20
	// xfsReserveFraction bounds what the kernel keeps aside per allocation
	// group at mount (reflink's refcount btree and the free inode btree
	// reservations, the AGFL set-aside). Measured with the real mkfs.xfs
	// (xfsprogs 6.1, defaults reflink=1 finobt=1) and Linux 6.x: 0.697 % to
	// 0.705 % of the data blocks from 402 GiB to 27 TiB; the model keeps 0.71 %
	// so that it never promises more than the kernel gives.
	xfsReserveFraction = 0.0071
	// xfsReservePerAG covers the part of the reservations that does not
	// scale with the AG size (small filesystems: 3.6 % of a 1.2 GiB one).
	xfsReservePerAG = 2600
	// xfsMinLogBlocks: mkfs.xfs 6.1 makes at least a 64 MiB log.
	xfsMinLogBlocks = 64 << 20 / xfsBlockSize
	// xfsMaxAGBlocks is XFS_AG_MAX_BLOCKS for 4 KiB blocks (1 TiB - 1 block).
	xfsMaxAGBlocks = 1<<28 - 1
)

// XFS computes what mkfs.xfs 6.1 (Debian 12) makes of a device of size
// bytes and what statfs reports once it is mounted: the data blocks (rounded
// down to the stripe width), the internal log (1/2048 of the data, at most
// 2 GiB, rounded up to the stripe unit) exactly; the per-AG reservations of
// the kernel conservatively (Exact is false: within 0.05 % of the size at the
// reference host's sizes, never above what the kernel gives).
func XFS(size int64, o XFSOptions) (Usage, error) {
	if size < 300<<20 {
		return Usage{}, fmt.Errorf("xfs on %d bytes: mkfs.xfs needs at least 300 MiB", size)
	}
	if o.StripeUnit < 0 || o.StripeWidth < 0 || o.StripeUnit%xfsBlockSize != 0 || o.StripeWidth%xfsBlockSize != 0 ||
		(o.StripeUnit == 0) != (o.StripeWidth == 0) || (o.StripeUnit > 0 && o.StripeWidth%o.StripeUnit != 0) {
		return Usage{}, fmt.Errorf("xfs stripe unit %d / width %d: multiples of 4096, the width a multiple of the unit", o.StripeUnit, o.StripeWidth)
	}
	dblocks := size / xfsBlockSize
	var agcount int64
	if o.StripeUnit > 0 {
		dblocks, agcount = xfsStripedGeometry(dblocks, o.StripeUnit/xfsBlockSize, o.StripeWidth/xfsBlockSize)
	} else {
		agcount = xfsPlainAGCount(dblocks)
	}
	logBlocks := dblocks / 2048
	if logBlocks < xfsMinLogBlocks {
		logBlocks = xfsMinLogBlocks
	}
	if max := int64(xfsMaxLogBytes / xfsBlockSize); logBlocks > max {
		logBlocks = max
	}
	if o.StripeUnit > 0 {
		su := o.StripeUnit / xfsBlockSize
		logBlocks = (logBlocks + su - 1) / su * su
	}
	fsBlocks := dblocks - logBlocks
	reserve := int64(float64(dblocks)*xfsReserveFraction) + xfsReservePerAG*agcount
	return Usage{
		FS:            "xfs",
		DeviceBytes:   size,
		BlockSize:     xfsBlockSize,
		Size:          fsBlocks * xfsBlockSize,
		Overhead:      (size/xfsBlockSize - fsBlocks) * xfsBlockSize,
		Used:          reserve * xfsBlockSize,
		AvailableRoot: (fsBlocks - reserve) * xfsBlockSize,
		Available:     (fsBlocks - reserve) * xfsBlockSize,
		Model:         "mkfs.xfs 6.1 (Debian 12) defaults; kernel per-AG reservations bounded at 0.71 %",
	}, nil
}

// xfsStripedDataBlocks is the data size mkfs.xfs 6.1 gives a striped device
// (calc_default_ag_geometry and align_ag_geometry in mkfs/xfs_mkfs.c): 16
// allocation groups up to 512 GiB, 32 above; the AG size rounded up to the
// stripe unit, less one stripe unit when it is a multiple of the stripe width
// (so that the AG headers do not all land on one disk), and the data size cut
// to whole groups.
func xfsStripedGeometry(dblocks, su, sw int64) (int64, int64) {
	const gib = (1 << 30) / xfsBlockSize
	shift := 5
	if dblocks <= 512*gib {
		shift = 4
	}
	if dblocks <= 8*gib {
		shift = 3
	}
	agsize := dblocks >> shift
	if rem := agsize % su; rem != 0 {
		agsize += su - rem
	}
	agcount := (dblocks + agsize - 1) / agsize
	if agcount > 1 && agsize%sw == 0 {
		agsize -= su
	}
	if whole := agcount * agsize; whole < dblocks {
		dblocks = whole
	}
	return dblocks, agcount
}

// xfsPlainAGCount: on a single device, 4 allocation groups, or groups of
// the largest size above 4 TiB.
func xfsPlainAGCount(dblocks int64) int64 {
	if n := (dblocks + xfsMaxAGBlocks - 1) / xfsMaxAGBlocks; n > 4 {
		return n
	}
	return 4
}
