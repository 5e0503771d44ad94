// Package treearchive packs a directory tree (regular files, directories,
// symlinks) into a reproducible .tar.gz and unpacks one again. It is how
// tbhost carries sysfs/procfs snapshots: the embedded reference host of
// `tbhost lvm plan --example` and the tests' fixture trees.
//
// Pack is reproducible: entries sorted by path, zero times, fixed modes
// (0644 files, 0755 directories, symlinks as links). Unpack treats the
// archive as untrusted input: it refuses absolute paths, "..", entries
// below a symlink, duplicate entries, entry types other than file,
// directory and symlink, and archives larger than MaxBytes unpacked.
package treearchive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// MaxBytes bounds the unpacked size of an archive (file contents), and
// MaxEntries the number of entries: the fixture trees are well below.
const (
	MaxBytes   = 256 << 20
	MaxEntries = 100000
)

// Pack packs the tree under root into a reproducible .tar.gz.
func Pack(root string) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, t, 0o777
			return tw.WriteHeader(hdr)
		case d.IsDir():
			hdr.Typeflag, hdr.Mode, hdr.Name = tar.TypeDir, 0o755, hdr.Name+"/"
			return tw.WriteHeader(hdr)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o644, int64(len(b))
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			_, err = tw.Write(b)
			return err
		default:
			return fmt.Errorf("%s: not a file, directory or symlink (%s)", p, d.Type())
		}
	})
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", root, err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("pack %s: %w", root, err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("pack %s: %w", root, err)
	}
	return buf.Bytes(), nil
}

// Unpack unpacks a .tar.gz made by Pack into dir (created if needed).
func Unpack(data []byte, dir string) error {
	if err := unpack(data, dir); err != nil {
		return fmt.Errorf("unpack into %s: %w", dir, err)
	}
	return nil
}

func unpack(data []byte, dir string) error {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	seen := map[string]byte{} // cleaned name -> type flag
	var total int64
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if n >= MaxEntries {
			return fmt.Errorf("more than %d entries", MaxEntries)
		}
		name, err := cleanName(hdr.Name)
		if err != nil {
			return err
		}
		if _, dup := seen[name]; dup {
			return fmt.Errorf("%q: duplicate entry", hdr.Name)
		}
		// Parents must be directories this archive made (or implied), never
		// a symlink: writing through one could leave dir.
		for p := path.Dir(name); p != "."; p = path.Dir(p) {
			if typ, ok := seen[p]; ok && typ != tar.TypeDir {
				return fmt.Errorf("%q: below %q, which is not a directory", hdr.Name, p)
			}
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(hdr.Linkname, p); err != nil {
				return err
			}
		case tar.TypeReg:
			if hdr.Size < 0 || total+hdr.Size > MaxBytes {
				return fmt.Errorf("%q: more than %d bytes unpacked", hdr.Name, MaxBytes)
			}
			total += hdr.Size
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := writeFile(p, tr, hdr.Size); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%q: entry type %q is not a file, directory or symlink", hdr.Name, hdr.Typeflag)
		}
		seen[name] = hdr.Typeflag
	}
}

// cleanName returns the slash-separated relative path of an entry, or an
// error if it is empty, absolute or leaves the tree.
func cleanName(name string) (string, error) {
	c := path.Clean(strings.TrimSuffix(name, "/"))
	if name == "" || c == "." || path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") ||
		strings.ContainsRune(name, '\\') || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("unsafe path %q", name)
	}
	return c, nil
}

func writeFile(p string, r io.Reader, size int64) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, r, size); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", p, err)
	}
	return f.Close()
}
