package prefix

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Source is one table file found under the table directories.
type Source struct {
	Path string
	Name string // base name, KRvK.rtbw
}

// FindTables walks dirs (recursively; a dir may be a symlink) for files
// ending in .rtbw or .rtbz (regular files or symlinks to them).
// Other files are ignored. The same table name under two directories is an
// error: the store holds one prefix per name.
func FindTables(dirs []string) ([]Source, error) {
	var out []Source
	seen := map[string]string{}
	for _, dir := range dirs {
		st, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("table directory: %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("table directory %s is not a directory", dir)
		}
		// A table directory is often a symlink to the array's mount: walk its
		// target (symlinked subdirectories below are not followed).
		root, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return nil, fmt.Errorf("table directory: %w", err)
		}
		err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return fmt.Errorf("scan %s: %w", path, err)
			}
			name := d.Name()
			if d.IsDir() || !(strings.HasSuffix(name, ".rtbw") || strings.HasSuffix(name, ".rtbz")) {
				return nil
			}
			if other, dup := seen[name]; dup {
				return fmt.Errorf("table %s is in two places: %s and %s; keep one (the store holds one prefix per table name)", name, other, path)
			}
			seen[name] = path
			out = append(out, Source{Path: path, Name: name})
			return nil
		})
		if err != nil {
			return nil, err
		}
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
