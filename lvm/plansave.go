package lvm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tbhost/tbhost/internal/atomicfile"
)

// PlanExistsError refuses to replace a saved plan (it may be the reviewed
// one) without --force.
type PlanExistsError struct{ Path string }

func (e *PlanExistsError) Error() string {
	return fmt.Sprintf("%s exists (a plan already reviewed?): it is left as it is; pass --force to replace it, or save to another file with -o", e.Path)
}

// Save writes the plan's YAML to path atomically: into a temporary file in
// the same directory, synced, then moved into place and the directory
// synced (internal/atomicfile), so that a crash leaves the old file or the
// new one, never a part. An existing path (a file, a directory, a symlink,
// even a dangling one) is refused unless force; with force it is replaced
// (a symlink itself, not its target).
func (p *Plan) Save(path string, force bool) error {
	y, err := p.YAML()
	if err != nil {
		return err
	}
	if !force {
		if _, err := os.Lstat(path); err == nil {
			return &PlanExistsError{Path: path}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("save plan %s: %w", path, err)
		}
	}
	// with !force, link(2) fails if path appeared meanwhile: no window in
	// which another file is silently replaced
	err = atomicfile.WriteFile(path, y, atomicfile.Options{Temp: "." + filepath.Base(path) + ".tmp-*", Perm: 0o644, NoReplace: !force})
	if !force && errors.Is(err, fs.ErrExist) {
		return &PlanExistsError{Path: path}
	}
	if err != nil {
		return fmt.Errorf("save plan %s: %w", path, err)
	}
	return nil
}
