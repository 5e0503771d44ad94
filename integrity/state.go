package integrity

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tbhost/tbhost/internal/sysread"
)

// writeJSONAtomic writes v to path so that a reader (or a run killed midway)
// sees either the old file or the new one, never a torn one: a temporary
// file in the same directory, fsync, rename, fsync of the directory.
func writeJSONAtomic(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("state %s: encode: %w", path, err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("state %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("state %s: %w", path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("state %s: write: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("state %s: fsync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("state %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("state %s: %w", path, err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// readJSON reads path into v; a missing file reports found=false, no error.
func readJSON(path string, v any) (found bool, err error) {
	data, err := sysread.File(path, sysread.ReportLimit)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("state %s: %w (pass a usable --state FILE)", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("state %s: not a tbhost state file (%v); move it away or pass another --state", path, err)
	}
	return true, nil
}
