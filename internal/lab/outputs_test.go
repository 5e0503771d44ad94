package lab

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
)

func tgz(t *testing.T, entries []tar.Header, bodies map[string]string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, h := range entries {
		h := h
		body := bodies[h.Name]
		h.Size = int64(len(body))
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func TestExtractTarGzKeepsSymlinksAndReplacesTopDirs(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "cap1", "stale"), 0o755)
	os.MkdirAll(filepath.Join(dir, "other"), 0o755)
	data := tgz(t, []tar.Header{
		{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "./cap1/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "./cap1/sys/block/sda/size", Typeflag: tar.TypeReg, Mode: 0o644},
		{Name: "./cap1/sys/block/dm-0/slaves/sda", Typeflag: tar.TypeSymlink, Linkname: "../../../../devices/sda"},
	}, map[string]string{"./cap1/sys/block/sda/size": "524288\n"})
	if err := ExtractTarGz(data, dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "cap1/sys/block/sda/size")); string(b) != "524288\n" {
		t.Errorf("size = %q", b)
	}
	if l, _ := os.Readlink(filepath.Join(dir, "cap1/sys/block/dm-0/slaves/sda")); l != "../../../../devices/sda" {
		t.Errorf("link = %q", l)
	}
	if _, err := os.Stat(filepath.Join(dir, "cap1/stale")); err == nil {
		t.Error("an old capture's files must be replaced")
	}
	if _, err := os.Stat(filepath.Join(dir, "other")); err != nil {
		t.Error("captures not in the archive must stay")
	}
	bad := tgz(t, []tar.Header{{Name: "../escape", Typeflag: tar.TypeReg, Mode: 0o644}}, nil)
	if err := ExtractTarGz(bad, dir); err == nil {
		t.Error("a path leaving the directory must be refused")
	}
}
