package lvm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// PlanExistsError refuses to replace a saved plan (it may be the reviewed
// one) without --force.
type PlanExistsError struct{ Path string }

func (e *PlanExistsError) Error() string {
	return fmt.Sprintf("%s exists (a plan already reviewed?): it is left as it is; pass --force to replace it, or save to another file with -o", e.Path)
}

// Save writes the plan's YAML to path atomically: into a temporary file in
// the same directory, synced, then moved into place, so that a crash leaves
// the old file or the new one, never a part. An existing path (a file, a
// directory, a symlink, even a dangling one) is refused unless force; with
// force it is replaced (a symlink itself, not its target).
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
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("save plan %s: %w", path, err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("save plan %s: %w", path, err)
	}
	if _, err := tmp.Write(y); err != nil {
		return fmt.Errorf("save plan %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("save plan %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save plan %s: %w", path, err)
	}
	if force {
		err = os.Rename(tmp.Name(), path)
	} else {
		// link(2) fails if path appeared meanwhile: no window in which
		// another file is silently replaced
		err = os.Link(tmp.Name(), path)
		if errors.Is(err, fs.ErrExist) {
			os.Remove(tmp.Name())
			done = true
			return &PlanExistsError{Path: path}
		}
		if err == nil {
			err = os.Remove(tmp.Name())
		} else if _, lerr := os.Lstat(path); errors.Is(lerr, fs.ErrNotExist) {
			err = os.Rename(tmp.Name(), path) // a filesystem without hard links
		}
	}
	if err != nil {
		return fmt.Errorf("save plan %s: %w", path, err)
	}
	done = true
	if d, err := os.Open(dir); err == nil {
		serr := d.Sync()
		d.Close()
		if serr != nil {
			return fmt.Errorf("save plan %s: sync %s: %w", path, dir, serr)
		}
	}
	return nil
}
