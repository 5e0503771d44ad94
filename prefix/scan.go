package prefix

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/tbhost/tbhost/internal/tablewalk"
)

// Source is one table file found under the table directories.
type Source struct {
	Path string
	Name string // base name, KRvK.rtbw
	// Err is set for a table that is there by name but cannot be read (a
	// symlink to a missing target): ParseAll and Verify report it as that
	// table's failure and go on with the others.
	Err error
}

// FindTables walks dirs for files ending in .rtbw or .rtbz, with the
// semantics of internal/tablewalk (shared with integrity verify-tables):
// a dir may be a symlink, symlinked files and subdirectories below are
// followed, a symlink loop is an error. A dangling symlink with a table's
// name is returned with Err set; other files, dangling links included,
// are ignored. The same table name under two directories is an error: the
// store holds one prefix per name.
func FindTables(dirs []string) ([]Source, error) {
	files, err := tablewalk.Walk(dirs, tablewalk.Options{Keep: func(name string, dir bool) bool {
		return dir || tablewalk.IsTableName(name)
	}})
	if err != nil {
		return nil, err
	}
	var out []Source
	seen := map[string]string{}
	for _, f := range files {
		if other, dup := seen[f.Name]; dup {
			return nil, fmt.Errorf("table %s is in two places: %s and %s; keep one (the store holds one prefix per table name)", f.Name, other, f.Path)
		}
		seen[f.Name] = f.Path
		out = append(out, Source{Path: f.Path, Name: f.Name, Err: f.Err})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Parsed is a source with its layout, or the reason it was refused.
type Parsed struct {
	Source
	Layout *Layout
	Err    error
}

// ParseAll parses every source's header with jobs parallel readers, keeping
// the order of sources. A refused file has Err set; the others still parse.
func ParseAll(ctx context.Context, sources []Source, jobs int) []Parsed {
	out := make([]Parsed, len(sources))
	if jobs < 1 {
		jobs = 1
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				out[i].Source = sources[i]
				if err := ctx.Err(); err != nil {
					out[i].Err = err
					continue
				}
				if sources[i].Err != nil { // found by name, unreadable: nothing to parse
					out[i].Err = sources[i].Err
					continue
				}
				out[i].Layout, out[i].Err = ParseFile(sources[i].Path)
			}
		}()
	}
	for i := range sources {
		work <- i
	}
	close(work)
	wg.Wait()
	return out
}

// Errs returns the refused files' errors.
func Errs(ps []Parsed) []error {
	var errs []error
	for _, p := range ps {
		if p.Err != nil {
			errs = append(errs, p.Err)
		}
	}
	return errs
}

// IsRefusal reports whether err is a file the parser refused (as opposed to
// an I/O failure or a cancelled context).
func IsRefusal(err error) bool {
	return errors.Is(err, ErrName) || errors.Is(err, ErrMagic) || errors.Is(err, ErrTruncated) ||
		errors.Is(err, ErrSize) || errors.Is(err, ErrInconsistent)
}
