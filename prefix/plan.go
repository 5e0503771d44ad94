package prefix

import (
	"encoding/json"
	"sort"
	"strings"
)

// FSBlock is the allocation unit assumed for the store's file system: each
// prefix file occupies a whole number of 4 KiB blocks.
const FSBlock = 4096

// OnDisk is the space a file of n bytes takes in the store.
func OnDisk(n int64) int64 { return (n + FSBlock - 1) / FSBlock * FSBlock }

// SourcePathAllowance is the length assumed for a table's absolute path in
// the manifest when the plan estimates it (the directories are not known
// to the plan): generous, so the plan never counts less than extract uses.
const SourcePathAllowance = 64

// StoreOverhead is what the store takes besides the prefix files, in whole
// file-system blocks: the manifest (one JSON line per table), the lock file
// and the directory itself (ext4: 8 bytes per entry plus the name rounded
// to 4). Issue 18: plan said 220 KiB where the store used 228 KiB.
func StoreOverhead(layouts []*Layout) int64 {
	var manifest, dir int64
	for _, l := range layouts {
		b, _ := json.Marshal(ManifestEntry{Name: l.Name, Source: "/" + strings.Repeat("x", SourcePathAllowance) + "/" + l.Name,
			Size: l.Size, MtimeNS: 1 << 62, Upto: UptoSparseIndex.String(), Prefix: l.Prefix,
			SHA256: strings.Repeat("0", 64), Extracted: "2006-01-02T15:04:05Z"})
		manifest += int64(len(b)) + 1
		dir += 8 + (int64(len(l.Name)+len(".prefix"))+3)/4*4
	}
	for _, n := range []string{".", "..", ManifestName, ".tbhost-prefix.lock"} {
		dir += 8 + (int64(len(n))+3)/4*4
	}
	return OnDisk(manifest) + OnDisk(dir) // the lock file is empty: no block
}

// PlanRule says how Plan picks the tables that get a full prefix when not
// all of them fit. Printed by the CLI, so the rule is never implicit.
const PlanRule = "every table gets at least its sparse prefix (header + sparse index); " +
	"full prefixes (adding the block-length lists) go first to WDL tables (probed at every search node; " +
	"DTZ only at the root), then to fewer-piece tables (positions simplify into them, so they are probed " +
	"most), then to the cheapest upgrade in bytes (most tables per byte); a table that does not fit is " +
	"skipped and smaller ones are still tried"

// PlanEntry is one table's share of the store.
type PlanEntry struct {
	Name   string `json:"name"`
	Kind   Kind   `json:"kind"`
	Pieces int    `json:"pieces"`
	Upto   string `json:"upto"`  // block-lengths (full) or sparse-index
	Bytes  int64  `json:"bytes"` // prefix bytes stored
}

// Plan is the answer of `prefix plan`.
type Plan struct {
	Capacity         int64       `json:"capacity"`
	Tables           int         `json:"tables"`
	FullBytes        int64       `json:"full_prefix_bytes"`   // every table's full prefix
	FullOnDisk       int64       `json:"full_prefix_on_disk"` // with 4 KiB file-system blocks and the overhead
	SparseBytes      int64       `json:"sparse_prefix_bytes"`
	SparseOnDisk     int64       `json:"sparse_prefix_on_disk"`
	OverheadOnDisk   int64       `json:"overhead_on_disk"` // manifest and directory (StoreOverhead), in every *_on_disk
	FitsFull         bool        `json:"fits_full"`
	FitsSparse       bool        `json:"fits_sparse"`
	FullTables       int         `json:"full_tables"` // tables planned with a full prefix
	PlannedOnDisk    int64       `json:"planned_on_disk"`
	Rule             string      `json:"rule"`
	Entries          []PlanEntry `json:"entries"`
	FullWDLTables    int         `json:"full_wdl_tables"`
	FullDTZTables    int         `json:"full_dtz_tables"`
	SparseOnlyTables int         `json:"sparse_only_tables"`
}

// MakePlan decides what fits into capacity bytes.
func MakePlan(layouts []*Layout, capacity int64) Plan {
	p := Plan{Capacity: capacity, Tables: len(layouts), Rule: PlanRule, OverheadOnDisk: StoreOverhead(layouts)}
	p.FullOnDisk, p.SparseOnDisk = p.OverheadOnDisk, p.OverheadOnDisk
	for _, l := range layouts {
		p.FullBytes += l.Prefix
		p.FullOnDisk += OnDisk(l.Prefix)
		p.SparseBytes += l.SparsePrefix
		p.SparseOnDisk += OnDisk(l.SparsePrefix)
	}
	p.FitsFull = p.FullOnDisk <= capacity
	p.FitsSparse = p.SparseOnDisk <= capacity
	full := make([]bool, len(layouts))
	used := p.SparseOnDisk
	switch {
	case p.FitsFull:
		for i := range full {
			full[i] = true
		}
		used = p.FullOnDisk
	case p.FitsSparse:
		order := make([]int, len(layouts))
		for i := range order {
			order[i] = i
		}
		cost := func(l *Layout) int64 { return OnDisk(l.Prefix) - OnDisk(l.SparsePrefix) }
		sort.SliceStable(order, func(a, b int) bool {
			la, lb := layouts[order[a]], layouts[order[b]]
			if la.Kind != lb.Kind {
				return la.Kind == WDL
			}
			if la.Pieces != lb.Pieces {
				return la.Pieces < lb.Pieces
			}
			if cost(la) != cost(lb) {
				return cost(la) < cost(lb)
			}
			return la.Name < lb.Name
		})
		for _, i := range order {
			if c := cost(layouts[i]); used+c <= capacity {
				used += c
				full[i] = true
			}
		}
	default:
		used = 0
	}
	p.PlannedOnDisk = used
	for i, l := range layouts {
		e := PlanEntry{Name: l.Name, Kind: l.Kind, Pieces: l.Pieces, Upto: UptoSparseIndex.String(), Bytes: l.SparsePrefix}
		if full[i] {
			e.Upto, e.Bytes = UptoBlockLengths.String(), l.Prefix
			p.FullTables++
			if l.Kind == WDL {
				p.FullWDLTables++
			} else {
				p.FullDTZTables++
			}
		} else {
			p.SparseOnlyTables++
		}
		if !p.FitsSparse {
			e.Upto, e.Bytes = "none", 0
		}
		p.Entries = append(p.Entries, e)
	}
	if !p.FitsSparse {
		p.SparseOnlyTables = 0
	}
	return p
}

// UptoByName returns each table's planned level, for ExtractOptions.
func (p Plan) UptoByName() map[string]Upto {
	m := make(map[string]Upto, len(p.Entries))
	for _, e := range p.Entries {
		if u, err := ParseUpto(e.Upto); err == nil {
			m[e.Name] = u
		}
	}
	return m
}
