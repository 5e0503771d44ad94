package bench

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPrepareCacheSaysWhenItCannotDrop(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "KRvK.rtbw")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// a drop_caches that cannot be written (no such directory): falls back
	prep := prepareCache(CacheDrop, filepath.Join(dir, "no", "drop_caches"), []string{f})
	if !strings.Contains(prep.Notice, "could not drop the page cache") || !strings.Contains(prep.Done, "evicted 1 files") {
		t.Errorf("fallback not reported: %+v", prep)
	}
	// a writable one (a fixture file under --root) counts as dropped
	ok := filepath.Join(dir, "drop_caches")
	os.WriteFile(ok, nil, 0o644)
	if prep := prepareCache(CacheDrop, ok, []string{f}); prep.Notice != "" || !strings.Contains(prep.Done, "dropped") {
		t.Errorf("drop: %+v", prep)
	}
	if b, _ := os.ReadFile(ok); string(b) != "3\n" {
		t.Errorf("wrote %q to drop_caches, want 3", b)
	}
	if prep := prepareCache(CacheEvict, ok, []string{f, filepath.Join(dir, "gone")}); !strings.Contains(prep.Notice, "could not evict") {
		t.Errorf("missing file not reported: %+v", prep)
	}
	if prep := prepareCache(CacheKeep, ok, nil); prep.Done != "kept warm" {
		t.Errorf("keep: %+v", prep)
	}
	for _, bad := range []string{"flush", ""} {
		if _, err := ParseCacheMode(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestMmapReaderAt(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t")
	os.WriteFile(p, []byte("0123456789"), 0o644)
	for _, adv := range []Advice{AdviseNormal, AdviseRandom} {
		r, c, err := openFile(p, IOMmap, adv)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 4)
		if n, err := r.ReadAt(b, 8); n != 2 || err != io.EOF || string(b[:2]) != "89" {
			t.Errorf("tail read: %d %v %q", n, err, b[:n])
		}
		if n, err := r.ReadAt(b, 2); n != 4 || err != nil || string(b) != "2345" {
			t.Errorf("read: %d %v %q", n, err, b)
		}
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}
	if _, _, err := openFile(filepath.Join(t.TempDir(), "missing"), IOPread, AdviseRandom); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing file: %v", err)
	}
}
