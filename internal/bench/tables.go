package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"runtime"
	"strings"

	"github.com/tbhost/tbhost/prefix"
)

// TableSet is the tables under test, parsed by the prefix package.
type TableSet struct {
	tables  []probeTable
	parsed  []prefix.Parsed
	Notices []string // tables left out and why
}

// LoadTables finds (recursively) and parses every Syzygy table under dirs
// with the prefix package. Tables the parser refuses are left out with a
// notice; none left is an error.
func LoadTables(ctx context.Context, dirs []string) (*TableSet, error) {
	if len(dirs) == 0 {
		return nil, errors.New("no --tables directory given")
	}
	srcs, err := prefix.FindTables(dirs)
	if err != nil {
		return nil, fmt.Errorf("--tables: %w", err)
	}
	set := &TableSet{}
	for _, p := range prefix.ParseAll(ctx, srcs, runtime.GOMAXPROCS(0)) {
		if p.Err != nil {
			set.Notices = append(set.Notices, fmt.Sprintf("left out: %v", p.Err))
			continue
		}
		set.parsed = append(set.parsed, p)
		set.tables = append(set.tables, fromLayout(p.Path, p.Layout))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(set.tables) == 0 {
		return nil, fmt.Errorf("no usable Syzygy tables (*.rtbw, *.rtbz) under %v", dirs)
	}
	return set, nil
}

// fromLayout keeps what a probe needs from a parsed layout.
func fromLayout(path string, l *prefix.Layout) probeTable {
	t := probeTable{Name: l.Name, Path: path, DTZ: l.Kind == prefix.DTZ, Size: l.Size, Prefix: l.Prefix}
	for _, s := range l.Subtables {
		if s.SingleValue {
			continue
		}
		t.Subtables = append(t.Subtables, probeSubtable{
			SparseOff: s.SparseIndex.Offset, SparseSize: s.SparseIndex.Size,
			BlenOff: s.BlockLengths.Offset, BlenSize: s.BlockLengths.Size,
			DataOff: s.Data.Offset, DataSize: s.Data.Size,
			BlockSizeLog: s.BlockSizeLog, IdxBits: s.IdxBits,
			NumBlocks: s.NumBlocks, TBSize: s.TBSize,
		})
	}
	return t
}

// TableInfo summarizes the set for humans and JSON.
type TableInfo struct {
	Tables     int   `json:"tables"`
	Subtables  int   `json:"subtables_with_data"`
	Bytes      int64 `json:"bytes"`
	PrefixSize int64 `json:"prefix_bytes"`
}

// Info returns the set's totals.
func (s *TableSet) Info() TableInfo {
	var in TableInfo
	for _, t := range s.tables {
		in.Tables++
		in.Subtables += len(t.Subtables)
		in.Bytes += t.Size
		in.PrefixSize += t.Prefix
	}
	return in
}

// ExtractStore writes the set's prefixes into dir with the prefix package
// (for a matrix run without --store: a temporary store).
func (s *TableSet) ExtractStore(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("prefix store %s: %w", dir, err)
	}
	rep, err := prefix.Extract(ctx, s.parsed, prefix.ExtractOptions{Store: dir, Jobs: 2})
	if err != nil {
		return fmt.Errorf("extract prefixes into %s: %w", dir, err)
	}
	if len(rep.Failed) > 0 {
		return fmt.Errorf("extract prefixes into %s: %s: %s", dir, rep.Failed[0].Path, rep.Failed[0].Error)
	}
	return nil
}

// Materials lists the materials (Syzygy stems such as KRvK) of the tables
// with compressed data, for demo logs.
func (s *TableSet) Materials() []string {
	seen := map[string]bool{}
	var ms []string
	for _, t := range s.tables {
		if len(t.Subtables) == 0 {
			continue
		}
		stem := strings.TrimSuffix(strings.TrimSuffix(t.Name, ".rtbw"), ".rtbz")
		if !seen[stem] {
			seen[stem] = true
			ms = append(ms, stem)
		}
	}
	return sortedStrings(ms)
}

// MaterialMix reads a request log (FENs or /standard?fen=... paths, as
// bench replay takes) and returns each material's share of the requests,
// for Weighting.Materials, keyed by the set's table names (a colour-swapped
// FEN counts for its table). It also returns how many requests named a
// material the set does not have (left out), with an example.
func (s *TableSet) MaterialMix(r io.Reader) (mix map[string]float64, unmatched int, example string, err error) {
	log, err := ReadLog(r)
	if err != nil {
		return nil, 0, "", err
	}
	paths := log.Paths
	have := map[string]bool{}
	for _, m := range s.Materials() {
		have[m] = true
	}
	counts := map[string]float64{}
	total := 0.0
	for _, p := range paths {
		_, query, _ := strings.Cut(p, "?")
		q, _ := url.ParseQuery(query)
		mat, err := fenMaterial(strings.ReplaceAll(q.Get("fen"), "_", " "))
		if err == nil && !have[mat] && have[swapSides(mat)] {
			mat = swapSides(mat)
		}
		if err != nil || !have[mat] {
			unmatched++
			if example == "" {
				example = mat
				if err != nil {
					example = err.Error()
				}
			}
			continue
		}
		counts[mat]++
		total++
	}
	if total == 0 {
		return nil, unmatched, example, fmt.Errorf("no request in the log has a material of these tables (e.g. %s)", example)
	}
	for m := range counts {
		counts[m] /= total
	}
	return counts, unmatched, example, nil
}
