package lvm

import (
	"fmt"

	"github.com/tbhost/tbhost/internal/sizes"
)

// Sizing facts of lvm2 2.03.16 (Debian 12), the version tbhost plans for.
const (
	// DefaultExtentSize is vgcreate's default physical extent size; tbhost
	// passes it explicitly so the extent arithmetic below holds.
	DefaultExtentSize = 4 << 20
	// PEStart is where the first extent of a PV starts (pvcreate's default
	// data alignment: 1 MiB, the metadata area sits before it).
	PEStart = 1 << 20
	// RmetaExtents is the raid metadata sub-LV of each image (one extent).
	RmetaExtents = 1
	// SpareExtents are left free on each PV as a safety margin, so that a
	// rounding difference in a future lvm2 makes lvcreate succeed rather
	// than fail half-way.
	SpareExtents = 1
	// MaxRaid5DataStripes and MaxRaid0Stripes are LVM's limits.
	MaxRaid5DataStripes = 63
	MaxRaid0Stripes     = 64
	// MaxPVBytes bounds the device sizes tbhost plans and accepts in a
	// plan file (64 PiB, far beyond any disk; it keeps the extent
	// arithmetic of 64 such devices inside int64).
	MaxPVBytes = 1 << 56
)

// PVExtents is how many extents pvcreate+vgcreate make of a device.
func PVExtents(deviceSize, extentSize int64) int64 {
	if deviceSize <= PEStart {
		return 0
	}
	return (deviceSize - PEStart) / extentSize
}

// IntegrityMetaBytes is the size lvcreate gives each image's _imeta LV in
// lvm2 2.03.16 (lib/metadata/integrity_manip.c,
// _lv_size_bytes_to_integrity_meta_bytes): 4 MiB per started 500 MiB of
// image data, plus an initial journal allowance of 4 MiB (image <= 512 MiB),
// 8 MiB (<= 1 GiB), 32 MiB (<= 4 GiB) or 64 MiB (larger). Checked against
// the real lab log: 8 MiB for a 240 MiB and a 452 MiB image, 12 MiB for a
// 500 MiB image.
func IntegrityMetaBytes(imageBytes int64) int64 {
	const mib = 1 << 20
	meta := (imageBytes/(500*mib) + 1) * 4 * mib
	switch {
	case imageBytes <= 512*mib:
		meta += 4 * mib
	case imageBytes <= 1<<30:
		meta += 8 * mib
	case imageBytes <= 4<<30:
		meta += 32 * mib
	default:
		meta += 64 * mib
	}
	return meta
}

// IntegrityMetaExtents is IntegrityMetaBytes in extents, as lvcreate
// rounds it (down: the byte count is a multiple of 4 MiB).
func IntegrityMetaExtents(imageExtents, extentSize int64) int64 {
	m := IntegrityMetaBytes(imageExtents*extentSize) / extentSize
	if m == 0 {
		m = 1
	}
	return m
}

// Raid5Layout is how one PV of a raid5+integrity LV is used.
type Raid5Layout struct {
	PVExtents    int64 `json:"pv_extents" yaml:"pv_extents"`
	ImageExtents int64 `json:"image_extents" yaml:"image_extents"` // the data (or parity) image
	RmetaExtents int64 `json:"rmeta_extents" yaml:"rmeta_extents"`
	ImetaExtents int64 `json:"imeta_extents" yaml:"imeta_extents"` // 0 without integrity
	SpareExtents int64 `json:"spare_extents" yaml:"spare_extents"`
}

// SizeRaid5 finds the largest image that fits on a PV of pvExtents extents
// next to its rmeta, its integrity metadata and the spare margin. The
// image plus its metadata grows with the image, so the largest fit is found
// by bisection (a plan file's PV size is input: a scan down from the top
// would take hours on an absurd one).
func SizeRaid5(pvExtents, extentSize int64, integrity bool) (Raid5Layout, error) {
	l := Raid5Layout{PVExtents: pvExtents, RmetaExtents: RmetaExtents, SpareExtents: SpareExtents}
	if extentSize <= 0 || pvExtents > MaxPVBytes/extentSize {
		return l, fmt.Errorf("a PV of %d extents of %d bytes is beyond what tbhost sizes (%d bytes)", pvExtents, extentSize, int64(MaxPVBytes))
	}
	meta := func(img int64) int64 {
		if integrity {
			return IntegrityMetaExtents(img, extentSize)
		}
		return 0
	}
	fits := func(img int64) bool { return img+RmetaExtents+meta(img)+SpareExtents <= pvExtents }
	lo, hi := int64(0), pvExtents-RmetaExtents-SpareExtents // lo fits (or is 0), everything above hi does not
	if hi < 1 || !fits(1) {
		return l, fmt.Errorf("a PV of %d extents is too small for a raid image with its metadata", pvExtents)
	}
	lo = 1
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	l.ImageExtents, l.ImetaExtents = lo, meta(lo)
	return l, nil
}

// SizeRaid5For is the layout of a raid5 LV of a chosen size (lvm plan
// --tables-size) on PVs of pvExtents extents: size is rounded up to whole
// extents and then to a whole number of extents per data stripe, as
// lvcreate --size does ("Rounding size up to full stripe"); each image
// then takes its rmeta and integrity metadata, and SpareExtents is what
// stays free on each PV. It fails when that leaves less than the one
// spare extent the full-size plan keeps, naming the largest size that fits.
func SizeRaid5For(size, pvExtents, extentSize int64, dataStripes int, integrity bool) (Raid5Layout, error) {
	full, err := SizeRaid5(pvExtents, extentSize, integrity)
	if err != nil {
		return full, err
	}
	if dataStripes < 1 {
		return full, fmt.Errorf("raid5 needs at least 1 data stripe, got %d", dataStripes)
	}
	max := int64(dataStripes) * full.ImageExtents * extentSize
	if size <= 0 {
		return full, fmt.Errorf("size %d: give a size above 0", size)
	}
	if size > max {
		return full, fmt.Errorf("%s is more than the VG holds as raid5 with integrity: at most %s (%d bytes = %d data stripes x %d extents)",
			sizes.Format(size), sizes.Format(max), max, dataStripes, full.ImageExtents)
	}
	ext := (size + extentSize - 1) / extentSize
	img := (ext + int64(dataStripes) - 1) / int64(dataStripes)
	l := Raid5Layout{PVExtents: pvExtents, ImageExtents: img, RmetaExtents: RmetaExtents}
	if integrity {
		l.ImetaExtents = IntegrityMetaExtents(img, extentSize)
	}
	l.SpareExtents = pvExtents - img - l.RmetaExtents - l.ImetaExtents
	if l.SpareExtents < SpareExtents { // unreachable while size <= max; kept as the invariant
		return full, fmt.Errorf("%s leaves no spare extent on a PV of %d extents", sizes.Format(size), pvExtents)
	}
	return l, nil
}
