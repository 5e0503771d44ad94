package lab

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestCorruptImageChangesExactlyTheRange(t *testing.T) {
	img := filepath.Join(t.TempDir(), "d.img")
	orig := bytes.Repeat([]byte{0x00, 0x5a, 0xff}, 2000)
	os.WriteFile(img, orig, 0o644)
	before, _ := ImageChecksum(img)
	if err := CorruptImage(img, 1000, 512); err != nil {
		t.Fatal(err)
	}
	after, _ := ImageChecksum(img)
	if before == after {
		t.Fatal("checksum unchanged")
	}
	got, _ := os.ReadFile(img)
	for i := range got {
		changed := got[i] != orig[i]
		if changed != (i >= 1000 && i < 1512) {
			t.Fatalf("byte %d changed=%v", i, changed)
		}
	}
	if err := CorruptImage(img, 5990, 100); err == nil {
		t.Error("a range past the end must be refused")
	}
}

func TestReuseAndWithout(t *testing.T) {
	ds, _ := Disks(HDD, 3, 8, "")
	ds = Reuse(ds, map[string]string{"hdd1": "/w/hdd1.img", "hdd2": "/w/hdd2.img"})
	if ds[0].Image != "/w/hdd1.img" || ds[2].Image != "" {
		t.Errorf("reuse: %+v", ds)
	}
	w := Without(ds, "hdd2")
	if len(w) != 2 || w[0].Name != "hdd1" || w[1].Name != "hdd3" {
		t.Errorf("without: %+v", w)
	}
}
