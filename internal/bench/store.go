package bench

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/tbhost/tbhost/prefix"
)

// openThroughStore opens table t through the prefix store with the
// prefix package, which refuses stale, truncated or foreign prefixes. pread
// without advice on shared processors uses prefix.Reader as is. Otherwise both files are opened
// here, so the advice lands on the descriptors (or mappings) that do the
// reads (POSIX_FADV_RANDOM is per open file), and reads are split at the
// same boundary by prefix.SplitReaderAt. ownProcessor is openFile's.
func openThroughStore(t probeTable, store *prefix.Store, how IO, advice Advice, ownProcessor bool) (tableReader, []io.Closer, []string, error) {
	r, err := store.Open(t.Path)
	if err != nil {
		return tableReader{}, nil, nil, storeOpenError(err)
	}
	pp := prefix.PrefixPath(store.Dir(), t.Name)
	files := []string{t.Path, pp}
	if how == IOPread && advice == AdviseNormal && !ownProcessor {
		return tableReader{R: r, SlowFrom: r.PrefixLen()}, []io.Closer{r}, files, nil
	}
	plen := r.PrefixLen()
	r.Close() // validated; now open both files with the advice
	pm, pc, err := openFile(pp, how, advice, ownProcessor)
	if err != nil {
		return tableReader{}, nil, nil, err
	}
	tm, tc, err := openFile(t.Path, how, advice, ownProcessor)
	if err != nil {
		pc.Close()
		return tableReader{}, nil, nil, err
	}
	split := &prefix.SplitReaderAt{Name: t.Name, Prefix: pm, PrefixLen: plen, Table: tm, Size: t.Size}
	return tableReader{R: split, SlowFrom: plen}, []io.Closer{pc, tc}, files, nil
}

// storeOpenError wraps an error of opening a table through the store with
// the fix that fits it: a missing prefix is built by extract; a refused
// read needs a user that can read the store; the descriptor limit gets its
// fix from the caller (openAll); stale, truncated or foreign prefixes carry
// their own fix (rerun extract). Every one can also be probed without the
// store.
func storeOpenError(err error) error {
	switch {
	case tooManyOpenFiles(err):
		return fmt.Errorf("prefix store: %w", err)
	case errors.Is(err, prefix.ErrNoPrefix):
		return fmt.Errorf("prefix store: %w (build it with tbhost prefix extract, or leave out --store)", err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("prefix store: %w (run as a user that can read the store, or leave out --store)", err)
	default:
		return fmt.Errorf("prefix store: %w (to probe the tables alone, leave out --store)", err)
	}
}
