package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/tbhost/tbhost/prefix"
)

// LoadTables parses every Syzygy table in dirs (not recursive) with the
// prefix package. Tables that fail to parse are left out with a notice; a
// table name found twice is used from the first directory.
func LoadTables(dirs []string) (*TableSet, error) {
	if len(dirs) == 0 {
		return nil, errors.New("no --tables directory given")
	}
	set := &TableSet{}
	seen := map[string]string{}
	for _, dir := range dirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("--tables %s: %w", dir, err)
		}
		for _, e := range ents {
			if e.IsDir() || !prefix.IsTableName(e.Name()) {
				continue
			}
			path := filepath.Join(dir, e.Name())
			if prev, ok := seen[e.Name()]; ok {
				set.Notices = append(set.Notices, fmt.Sprintf("%s: also in %s; using that one", path, prev))
				continue
			}
			seen[e.Name()] = path
			l, err := prefix.ParseFile(path)
			if err != nil {
				set.Notices = append(set.Notices, fmt.Sprintf("left out: %v", err))
				continue
			}
			set.tables = append(set.tables, fromLayout(path, l))
		}
	}
	if len(set.tables) == 0 {
		return nil, fmt.Errorf("no Syzygy tables (*.rtbw, *.rtbz) in %v", dirs)
	}
	sort.Slice(set.tables, func(i, j int) bool { return set.tables[i].Name < set.tables[j].Name })
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
