package treearchive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// listTree describes a tree: files by content, symlinks by target,
// directories by name.
func listTree(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case rel == ".":
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "-> " + l
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = "file " + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A sysfs-like tree (symlinks out of the tree, into it, empty directories)
// round-trips, and packing is reproducible.
func TestPackUnpackRoundTrip(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "sys/block/sda/holders"), 0o755)
	os.MkdirAll(filepath.Join(src, "sys/block/dm-0/slaves"), 0o755)
	os.WriteFile(filepath.Join(src, "sys/block/sda/size"), []byte("524288\n"), 0o644)
	os.WriteFile(filepath.Join(src, "empty"), nil, 0o644)
	os.Symlink("../../dm-0", filepath.Join(src, "sys/block/sda/holders/dm-0"))
	os.Symlink("../../../../pci0000:00/0000:00:03.0", filepath.Join(src, "sys/block/sda/device"))
	a, err := Pack(src)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Pack(src)
	if err != nil || !bytes.Equal(a, b) {
		t.Fatalf("packing twice differs (%v)", err)
	}
	dst := filepath.Join(t.TempDir(), "new")
	if err := Unpack(a, dst); err != nil {
		t.Fatal(err)
	}
	want, got := listTree(t, src), listTree(t, dst)
	if !equal(want, got) {
		t.Fatalf("round trip:\n got %v\nwant %v", got, want)
	}
	if got["sys/block/sda/device"] != "-> ../../../../pci0000:00/0000:00:03.0" || got["sys/block/dm-0/slaves"] != "dir" {
		t.Fatalf("symlink or empty directory lost: %v", got)
	}
}

type entry struct {
	name, link, body string
	typ              byte
}

func archive(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// Archives that would write outside the target directory, or hold what a
// fixture tree never does, are refused, and nothing lands outside.
func TestUnpackRefusesEscapes(t *testing.T) {
	for name, data := range map[string][]byte{
		"dot-dot":          archive(t, entry{name: "../evil", typ: tar.TypeReg, body: "x"}),
		"nested dot-dot":   archive(t, entry{name: "a/../../evil", typ: tar.TypeReg, body: "x"}),
		"absolute":         archive(t, entry{name: "/tmp/evil", typ: tar.TypeReg, body: "x"}),
		"through symlink":  archive(t, entry{name: "l", link: "..", typ: tar.TypeSymlink}, entry{name: "l/evil", typ: tar.TypeReg, body: "x"}),
		"over symlink":     archive(t, entry{name: "l", link: "../evil", typ: tar.TypeSymlink}, entry{name: "l", typ: tar.TypeReg, body: "x"}),
		"hard link":        archive(t, entry{name: "h", link: "/etc/passwd", typ: tar.TypeLink}),
		"device":           archive(t, entry{name: "d", typ: tar.TypeChar}),
		"empty name":       archive(t, entry{name: "", typ: tar.TypeReg, body: "x"}),
		"not gzip":         []byte("sys/block/sda/size 512\n"),
		"truncated":        archive(t, entry{name: "f", typ: tar.TypeReg, body: strings.Repeat("x", 4096)})[:60],
		"duplicate":        archive(t, entry{name: "f", typ: tar.TypeReg, body: "x"}, entry{name: "f", typ: tar.TypeReg, body: "y"}),
		"backslash":        archive(t, entry{name: `a\..\..\evil`, typ: tar.TypeReg, body: "x"}),
		"dir then symlink": archive(t, entry{name: "d/", typ: tar.TypeDir}, entry{name: "d", link: "..", typ: tar.TypeSymlink}),
	} {
		parent := t.TempDir()
		dst := filepath.Join(parent, "root")
		if err := Unpack(data, dst); err == nil {
			t.Errorf("%s: unpacked", name)
		} else if !strings.Contains(err.Error(), dst) {
			t.Errorf("%s: error %q does not name the directory", name, err)
		}
		if _, err := os.Lstat(filepath.Join(parent, "evil")); err == nil {
			t.Errorf("%s: wrote outside the directory", name)
		}
	}
}

func TestUnpackRefusesOversizedArchive(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: "big", Typeflag: tar.TypeReg, Mode: 0o644, Size: MaxBytes + 1})
	// no body: the size alone must be refused before reading it
	zw.Close()
	err := Unpack(buf.Bytes(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("err %v", err)
	}
}

// FuzzUnpack: any input either fails or unpacks into the directory only;
// what unpacked packs and unpacks again to the same tree.
func FuzzUnpack(f *testing.F) {
	f.Add(archive(f, entry{name: "sys/block/sda/size", typ: tar.TypeReg, body: "8\n"}, entry{name: "dev/disk/by-id/x", link: "../../sda", typ: tar.TypeSymlink}))
	f.Add(archive(f, entry{name: "a/", typ: tar.TypeDir}, entry{name: "a/l", link: "..", typ: tar.TypeSymlink}, entry{name: "a/l/x", typ: tar.TypeReg, body: "x"}))
	f.Add(archive(f, entry{name: "../x", typ: tar.TypeReg, body: "x"}))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255})
	f.Fuzz(func(t *testing.T, data []byte) {
		parent := t.TempDir()
		dst := filepath.Join(parent, "root")
		err := Unpack(data, dst)
		entries, _ := os.ReadDir(parent)
		if len(entries) > 1 || (len(entries) == 1 && entries[0].Name() != "root") {
			t.Fatalf("wrote beside the directory: %v", entries)
		}
		if err != nil {
			return
		}
		tree := listTree(t, dst)
		var size int
		for _, v := range tree {
			size += len(v)
		}
		if size > MaxBytes+len(tree)*8 {
			t.Fatalf("unpacked %d bytes", size)
		}
		again, err := Pack(dst)
		if err != nil {
			t.Fatalf("re-pack: %v", err)
		}
		dst2 := filepath.Join(t.TempDir(), "again")
		if err := Unpack(again, dst2); err != nil {
			t.Fatalf("unpack of a packed tree: %v", err)
		}
		if got := listTree(t, dst2); !equal(tree, got) {
			t.Fatalf("round trip differs:\n%v\n%v", tree, got)
		}
	})
}
