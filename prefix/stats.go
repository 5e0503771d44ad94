package prefix

// FileStats are one table's byte figures (the JSON of `prefix stats --files`).
type FileStats struct {
	Name         string `json:"name"`
	Kind         Kind   `json:"kind"`
	Size         int64  `json:"size"`
	Header       int64  `json:"header"`        // header and pairs descriptions (and DTZ maps)
	SparseIndex  int64  `json:"sparse_index"`  // all sparse indexes
	BlockLengths int64  `json:"block_lengths"` // all block-length lists
	Data         int64  `json:"data"`          // compressed blocks (with their 64-byte alignment)
	SparsePrefix int64  `json:"sparse_prefix"` // header + sparse indexes
	Prefix       int64  `json:"prefix"`        // up to the first data block
}

// Totals sum FileStats over a set of tables.
type Totals struct {
	Files        int   `json:"files"`
	Size         int64 `json:"size"`
	Header       int64 `json:"header"`
	SparseIndex  int64 `json:"sparse_index"`
	BlockLengths int64 `json:"block_lengths"`
	Data         int64 `json:"data"`
	SparsePrefix int64 `json:"sparse_prefix"`
	Prefix       int64 `json:"prefix"`
}

// PrefixShare is the prefix bytes as a fraction of the whole files.
func (t Totals) PrefixShare() float64 {
	if t.Size == 0 {
		return 0
	}
	return float64(t.Prefix) / float64(t.Size)
}

func (t *Totals) add(f FileStats) {
	t.Files++
	t.Size += f.Size
	t.Header += f.Header
	t.SparseIndex += f.SparseIndex
	t.BlockLengths += f.BlockLengths
	t.Data += f.Data
	t.SparsePrefix += f.SparsePrefix
	t.Prefix += f.Prefix
}

// KindTotals are the totals per kind and overall.
type KindTotals struct {
	WDL Totals `json:"wdl"`
	DTZ Totals `json:"dtz"`
	All Totals `json:"all"`
}

// Stats is the report of `prefix stats`.
type Stats struct {
	Files  []FileStats `json:"files,omitempty"`
	Totals KindTotals  `json:"totals"`
	// BytesRead is how much the parser read from the tables (headers only).
	BytesRead int64 `json:"-"`
}

// Of returns one layout's figures.
func Of(l *Layout) FileStats {
	return FileStats{
		Name: l.Name, Kind: l.Kind, Size: l.Size,
		Header: l.Header.Size, SparseIndex: l.SparseIndex.Size, BlockLengths: l.BlockLengths.Size,
		Data: l.Data.Size, SparsePrefix: l.SparsePrefix, Prefix: l.Prefix,
	}
}

// Summarize adds up the parsed tables (refused ones are skipped); with
// files, the per-file figures are kept too.
func Summarize(ps []Parsed, files bool) Stats {
	var s Stats
	for _, p := range ps {
		if p.Err != nil {
			continue
		}
		f := Of(p.Layout)
		s.BytesRead += p.Layout.BytesRead
		if files {
			s.Files = append(s.Files, f)
		}
		if f.Kind == DTZ {
			s.Totals.DTZ.add(f)
		} else {
			s.Totals.WDL.add(f)
		}
		s.Totals.All.add(f)
	}
	return s
}
