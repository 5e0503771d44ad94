package capacity

import (
	"fmt"

	"github.com/tbhost/tbhost/internal/sizes"
)

// PieceSet is the part of the standard Syzygy set with one piece count.
type PieceSet struct {
	Pieces int   `json:"pieces" yaml:"pieces"`
	Files  int   `json:"files" yaml:"files"`
	Bytes  int64 `json:"bytes" yaml:"bytes"`
}

// Published figures of the standard 3-7 piece Syzygy set (WDL + DTZ).
// Files and bytes per piece count are the sums of syzygy-tables.info's
// bytes.tsv (all 3,022 files; TestPublishedSetMatchesBytesList re-adds them
// from ../shared/syzygy when it is there). The prefix store figure is the
// one published by the operators of the largest public tablebase server for
// their own store: every file's bytes up to its first data block, i.e. the
// header, the sparse indexes and the block-length lists (sparse index
// about 47 GiB, block lengths about 339 GiB).
var publishedSet = []PieceSet{
	{3, 10, 25_824},
	{4, 60, 4_320_256},
	{5, 220, 979_611_840},
	{6, 730, 160_225_616_032},
	{7, 2002, 18_388_904_125_408},
}

// FullSetPrefixBytes is the prefix store of all 3,022 files.
const FullSetPrefixBytes int64 = 413_834_902_592

// TableSet is a set of tables to fit.
type TableSet struct {
	Name        string `json:"name" yaml:"name"` // e.g. 3-7
	Files       int    `json:"files" yaml:"files"`
	Bytes       int64  `json:"bytes" yaml:"bytes"`
	PrefixBytes int64  `json:"prefix_bytes" yaml:"prefix_bytes"`
}

// FullSet is the standard 3-4-5-6-7 piece set.
func FullSet() TableSet {
	s := TableSet{Name: "3-7", PrefixBytes: FullSetPrefixBytes}
	for _, p := range publishedSet {
		s.Files += p.Files
		s.Bytes += p.Bytes
	}
	return s
}

// PublishedSet returns the per-piece-count figures (a copy).
func PublishedSet() []PieceSet { return append([]PieceSet(nil), publishedSet...) }

// Need is what a filesystem must hold for n files of bytes in total: the
// bytes, each file's last block rounded up, one block of extent tree per
// file (a 70 GB table has about 600 extents of 128 MiB), the directory and
// the prefix store's manifest (about 200 bytes per file).
func Need(files int, bytes, blockSize int64) int64 {
	perFile := 2*blockSize + 256
	return bytes + int64(files)*perFile + 1<<20
}

// Fit is whether a set fits a filesystem.
type Fit struct {
	What      string `json:"what" yaml:"what"` // "tables 3-7" or "prefix store 3-7"
	Need      int64  `json:"need" yaml:"need"`
	Available int64  `json:"available" yaml:"available"`
	Headroom  int64  `json:"headroom" yaml:"headroom"` // Available - Need; negative: does not fit
	Fits      bool   `json:"fits" yaml:"fits"`
	Message   string `json:"message" yaml:"message"`
}

// Check compares what a set needs with what the filesystem offers.
func Check(what string, need, available int64) Fit {
	f := Fit{What: what, Need: need, Available: available, Headroom: available - need, Fits: available >= need}
	if f.Fits {
		f.Message = fmt.Sprintf("%s fits: needs %s of %s available, headroom %s (%.1f %%)",
			what, sizes.Format(need), sizes.Format(available), sizes.Format(f.Headroom), 100*float64(f.Headroom)/float64(available))
	} else {
		f.Message = fmt.Sprintf("%s does not fit: needs %s, the filesystem gives %s (%s short)",
			what, sizes.Format(need), sizes.Format(available), sizes.Format(-f.Headroom))
	}
	return f
}
