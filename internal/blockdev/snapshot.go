package blockdev

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tbhost/tbhost/internal/sysread"
)

// Snapshot takes the inventory and copies every file it read into dir, in
// the same layout (symlinks under /sys and /dev kept as symlinks), plus
// SnapshotMeta with what was read from the devices themselves (signatures)
// and from LVM (PVs). `tbhost --root dir inventory` then replays it, and a
// plan can be made for that host from anywhere.
func Snapshot(ctx context.Context, opts Options, dir string) (*Inventory, error) {
	inv, h, err := read(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	for _, p := range h.touched() {
		if err := copyHostPath(h, dir, p); err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", p, err)
		}
	}
	meta := snapshotMeta{Hostname: inv.Hostname, Probes: map[string][]Signature{}, ProbeErrors: map[string]string{}, PVsKnown: inv.PVsKnown}
	for _, d := range inv.All() {
		var probed []Signature
		for _, s := range d.Signatures {
			if s.Source == "probe" {
				probed = append(probed, s)
			}
		}
		if len(probed) > 0 {
			meta.Probes[d.Name] = probed
		}
		if d.ProbeError != "" {
			meta.ProbeErrors[d.Name] = d.ProbeError
		}
		if d.PV != nil {
			meta.PVs = append(meta.PVs, *d.PV)
		}
	}
	b, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, SnapshotMeta), append(b, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return inv, nil
}

// copyHostPath copies host path p (a file, or a directory when it ends in
// "/") from h's root into dst, recreating symlinks met on the way under
// /sys and /dev; /proc files are copied by content.
func copyHostPath(h *hostFS, dst, p string) error {
	isDir := strings.HasSuffix(p, "/")
	p = strings.TrimSuffix(p, "/")
	if strings.HasPrefix(p, "/proc/") {
		b, err := sysread.File(h.path(p), sysread.ReportLimit)
		if err != nil {
			return err
		}
		return writeFile(filepath.Join(dst, p), b)
	}
	real, err := walkLinks(h, dst, p, 0)
	if err != nil {
		return err
	}
	src := h.path(real)
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil // the link itself was recreated by walkLinks
	case fi.IsDir() || isDir:
		if err := os.MkdirAll(filepath.Join(dst, real), 0o755); err != nil {
			return err
		}
		es, err := sysread.Dir(src, sysread.DirLimit)
		if err != nil {
			return err
		}
		for _, e := range es { // entries of slaves/, holders/, by-id/: keep links, mark others
			ep := filepath.Join(dst, real, e.Name())
			if e.Type()&fs.ModeSymlink != 0 {
				t, err := os.Readlink(filepath.Join(src, e.Name()))
				if err != nil {
					return err
				}
				if err := symlink(t, ep); err != nil {
					return err
				}
			} else if e.IsDir() {
				if err := os.MkdirAll(ep, 0o755); err != nil {
					return err
				}
			}
		}
		return nil
	default:
		b, err := sysread.File(src, sysread.ReportLimit)
		if err != nil {
			return err
		}
		return writeFile(filepath.Join(dst, real), b)
	}
}

// walkLinks resolves the symlinks in host path p component by component,
// recreating each one under dst, and returns the resolved path. The last
// component is not followed when it is a symlink (so /dev/disk/by-id/x
// stays a link).
func walkLinks(h *hostFS, dst, p string, depth int) (string, error) {
	if depth > 16 {
		return "", errors.New("too many levels of symbolic links")
	}
	comps := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
	cur := "/"
	for i, c := range comps {
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(h.path(next))
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		t, err := os.Readlink(h.path(next))
		if err != nil {
			return "", err
		}
		if err := symlink(t, filepath.Join(dst, next)); err != nil {
			return "", err
		}
		if i == len(comps)-1 {
			return next, nil
		}
		target := t
		if !filepath.IsAbs(t) {
			target = filepath.Join(cur, t)
		}
		rest := filepath.Join(append([]string{target}, comps[i+1:]...)...)
		return walkLinks(h, dst, rest, depth+1)
	}
	return cur, nil
}

func symlink(target, at string) error {
	if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
		return err
	}
	if old, err := os.Readlink(at); err == nil {
		if old == target {
			return nil
		}
		return fmt.Errorf("%s: already a link to %s, not %s", at, old, target)
	}
	return os.Symlink(target, at)
}

func writeFile(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}
