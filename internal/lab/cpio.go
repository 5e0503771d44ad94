package lab

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// cpioWriter writes a cpio archive in the "newc" (SVR4, no CRC) format the
// kernel unpacks into its initramfs. Only what an initramfs needs: regular
// files, directories, symlinks and character devices; no hard links.
type cpioWriter struct {
	w   *bufio.Writer
	n   int64 // bytes written so far (for 4-byte alignment)
	ino uint32
}

func newCpioWriter(w io.Writer) *cpioWriter {
	return &cpioWriter{w: bufio.NewWriterSize(w, 1<<20), ino: 1}
}

const (
	cpioModeDir  = 0o040000
	cpioModeFile = 0o100000
	cpioModeLink = 0o120000
	cpioModeChr  = 0o020000
)

func (c *cpioWriter) write(p []byte) error {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return err
}

func (c *cpioWriter) pad(align int64) error {
	if r := c.n % align; r != 0 {
		return c.write(make([]byte, align-r))
	}
	return nil
}

func (c *cpioWriter) header(name string, mode uint32, size int64, rdevMajor, rdevMinor uint32) error {
	name = strings.TrimPrefix(filepath.ToSlash(name), "/")
	if name == "" {
		name = "."
	}
	nlink := 1
	if mode&0o170000 == cpioModeDir {
		nlink = 2
	}
	ino := c.ino
	c.ino++
	if name == "TRAILER!!!" {
		ino, nlink = 0, 1
	}
	h := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, mode, 0, 0, nlink, 0, size, 0, 0, rdevMajor, rdevMinor, len(name)+1, 0)
	if err := c.write([]byte(h)); err != nil {
		return err
	}
	if err := c.write(append([]byte(name), 0)); err != nil {
		return err
	}
	return c.pad(4)
}

// Dir adds a directory entry.
func (c *cpioWriter) Dir(name string, perm fs.FileMode) error {
	return c.header(name, cpioModeDir|uint32(perm.Perm()), 0, 0, 0)
}

// File adds a regular file with the given content.
func (c *cpioWriter) File(name string, perm fs.FileMode, data []byte) error {
	if err := c.header(name, cpioModeFile|uint32(perm.Perm()), int64(len(data)), 0, 0); err != nil {
		return err
	}
	if err := c.write(data); err != nil {
		return err
	}
	return c.pad(4)
}

// FileFrom adds a regular file copied from the host path src.
func (c *cpioWriter) FileFrom(name string, perm fs.FileMode, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := c.header(name, cpioModeFile|uint32(perm.Perm()), st.Size(), 0, 0); err != nil {
		return err
	}
	n, err := io.Copy(c.w, f)
	c.n += n
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if n != st.Size() {
		return fmt.Errorf("%s changed size while archiving", src)
	}
	return c.pad(4)
}

// Symlink adds a symbolic link.
func (c *cpioWriter) Symlink(name, target string) error {
	if err := c.header(name, cpioModeLink|0o777, int64(len(target)), 0, 0); err != nil {
		return err
	}
	if err := c.write([]byte(target)); err != nil {
		return err
	}
	return c.pad(4)
}

// CharDev adds a character device node (e.g. /dev/console 5:1).
func (c *cpioWriter) CharDev(name string, perm fs.FileMode, major, minor uint32) error {
	return c.header(name, cpioModeChr|uint32(perm.Perm()), 0, major, minor)
}

// Tree adds every entry below root (sorted, parents first), named relative
// to root.
func (c *cpioWriter) Tree(root string) error {
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("walk %s: %w", root, err)
	}
	sort.Strings(paths) // a parent sorts before its children
	for _, p := range paths {
		rel, _ := filepath.Rel(root, p)
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			err = c.Symlink(rel, t)
			if err != nil {
				return err
			}
		case st.IsDir():
			if err := c.Dir(rel, st.Mode()); err != nil {
				return err
			}
		case st.Mode().IsRegular():
			if err := c.FileFrom(rel, st.Mode(), p); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: unsupported file type %v in initramfs tree", p, st.Mode().Type())
		}
	}
	return nil
}

// Close writes the trailer and pads the archive to 512 bytes, so another
// archive can be appended (the kernel requires 4-byte alignment between
// concatenated archives).
func (c *cpioWriter) Close() error {
	if err := c.header("TRAILER!!!", 0, 0, 0, 0); err != nil {
		return err
	}
	if err := c.pad(512); err != nil {
		return err
	}
	return c.w.Flush()
}
