// Package tablesync copies a Syzygy table set from an old host with rsync
// (the tool sysadmins already trust for 17 TiB) and verifies every file as
// it lands against the published lists (size from bytes.tsv, the embedded
// checksum from tbcheck.txt, the digest when a digest list is there).
//
// Layout under the destination DIR:
//
//	DIR/<rel>                      verified tables, where the source has them
//	DIR/.tbhost-sync/incoming/     rsync's destination; a file moves to DIR only once verified
//	DIR/.tbhost-sync/partial/      rsync --partial-dir (resumes an interrupted file)
//	DIR/.tbhost-sync/refused/<rel> files that failed verification, kept for a look
//	DIR/.tbhost-sync/state.json    what was verified (size, mtime, digest), written atomically
//
// A file in DIR that the state records as verified and that passes this
// run's checks is never handed to rsync again, so it is never replaced by a
// different one. The state spares only the digest, and only when it is the
// one the run's list publishes; a file that fails the run's checks is moved
// out of DIR to refused/ and copied again. Interrupted at any
// point (SIGKILL included), a rerun continues: complete files rsync left in
// incoming/ are verified first, partial ones are resumed by rsync.
package tablesync

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// tableName is a standard Syzygy table file name: white's pieces, "v",
// black's pieces, each side starting with its king.
var tableName = regexp.MustCompile(`^K[QRBNP]*vK[QRBNP]*\.rtb[wz]$`)

// IsTableName reports whether name (a base name) is a Syzygy table file.
func IsTableName(name string) bool { return tableName.MatchString(name) }

// Pieces is the number of pieces of a table (kings included): KQvK.rtbw is 3.
func Pieces(name string) int {
	stem := strings.TrimSuffix(strings.TrimSuffix(name, ".rtbw"), ".rtbz")
	return len(strings.ReplaceAll(stem, "v", ""))
}

// PieceSet is a selection of piece counts, e.g. 3-7 or 3,4,5.
type PieceSet struct {
	spec   string
	counts map[int]bool
}

// ParseSet reads --set: piece counts from 3 to 7, as a range ("3-7", "6-7"),
// a list ("3,4,7") or both ("3-5,7").
func ParseSet(spec string) (PieceSet, error) {
	s := PieceSet{spec: spec, counts: map[int]bool{}}
	if strings.TrimSpace(spec) == "" {
		return s, fmt.Errorf("empty piece set: give e.g. 3-7 (the whole standard set) or 3-5")
	}
	for _, part := range strings.Split(spec, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 3 || b > 7 || a > b {
			return s, fmt.Errorf("piece set %q: %q is not a piece count or range within 3-7 (e.g. 3-7, 6, 3-5,7)", spec, part)
		}
		for n := a; n <= b; n++ {
			s.counts[n] = true
		}
	}
	return s, nil
}

// Has reports whether the set selects tables of n pieces.
func (s PieceSet) Has(n int) bool { return s.counts[n] }

// String is the set as given.
func (s PieceSet) String() string { return s.spec }

// SourceFile is one regular file of the source listing.
type SourceFile struct {
	Rel  string // path relative to the source root, "/"-separated
	Name string // base name
	Size int64
}

// ParseListing reads the output of `rsync --list-only -r --no-h SRC/`:
// lines of "<mode> <size> <date> <time> <path>" (sizes may carry thousands
// separators). Only regular files with a table name are kept; directories,
// links (list with --copy-links to follow them), devices and other files
// are left out. The listing is outside input: a path that leaves the root
// or a size that is not a number is an error; one table name at two paths
// keeps the first (in path order) with a warning, or is an error when the
// sizes differ.
func ParseListing(out string) (files []SourceFile, warnings []string, err error) {
	seen := map[string]int{}
	for i, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 5 || len(f[0]) != 10 {
			return nil, nil, fmt.Errorf("rsync listing line %d: %.120q is not \"<mode> <size> <date> <time> <path>\"", i+1, line)
		}
		if f[0][0] != '-' {
			continue // directory, symlink, device
		}
		size, err := strconv.ParseInt(strings.ReplaceAll(f[1], ",", ""), 10, 64)
		if err != nil || size < 0 {
			return nil, nil, fmt.Errorf("rsync listing line %d: size %q is not a number of bytes", i+1, f[1])
		}
		rel := listingPath(line)
		clean := path.Clean(rel)
		if clean != rel || strings.HasPrefix(clean, "../") || clean == ".." || strings.HasPrefix(clean, "/") {
			return nil, nil, fmt.Errorf("rsync listing line %d: path %q leaves the source directory or is not clean", i+1, rel)
		}
		if strings.IndexFunc(clean, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
			// found by FuzzParseListing: a CR inside a line; no table path holds one
			return nil, nil, fmt.Errorf("rsync listing line %d: path %q holds a control character", i+1, rel)
		}
		name := path.Base(clean)
		if !IsTableName(name) {
			continue
		}
		if strings.HasPrefix(clean, ".") || strings.Contains(clean, "/.") {
			continue // a dot directory (another tool's staging area)
		}
		files = append(files, SourceFile{Rel: clean, Name: name, Size: size})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Rel < files[j].Rel })
	out2 := files[:0]
	for _, f := range files {
		if k, dup := seen[f.Name]; dup {
			first := out2[k]
			if first.Size != f.Size {
				return nil, nil, fmt.Errorf("rsync listing: %s is at two paths on the source with different sizes (%s: %d bytes, %s: %d bytes): remove the wrong one there", f.Name, first.Rel, first.Size, f.Rel, f.Size)
			}
			warnings = append(warnings, fmt.Sprintf("%s is at two paths on the source (%s, %s): copying %s", f.Name, first.Rel, f.Rel, first.Rel))
			continue
		}
		seen[f.Name] = len(out2)
		out2 = append(out2, f)
	}
	return out2, warnings, nil
}

// listingPath is the path of a listing line of at least five fields:
// everything after the fourth field, spaces included.
func listingPath(line string) string {
	rest := line
	for k := 0; k < 4; k++ {
		rest = strings.TrimLeft(rest, " ")
		rest = rest[strings.IndexByte(rest, ' ')+1:]
	}
	return strings.TrimLeft(rest, " ")
}
