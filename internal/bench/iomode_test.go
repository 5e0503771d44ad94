package bench

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
		r, c, err := openFile(p, IOMmap, adv, false)
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
	if _, _, err := openFile(filepath.Join(t.TempDir(), "missing"), IOPread, AdviseRandom, true); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing file: %v", err)
	}
}

// rawPread keeps io.ReaderAt's contract: short reads only with an error,
// io.EOF at the end, the path in errors, safe for concurrent readers.
func TestThreadPreadReaderAt(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t")
	data := make([]byte, 3<<20+5)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r, c, err := openFile(p, IOPread, AdviseRandom, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.(*rawPread); !ok {
		t.Fatalf("pread on own threads opened as %T", r)
	}
	b := make([]byte, 4)
	if n, err := r.ReadAt(b, int64(len(data)-2)); n != 2 || err != io.EOF || !bytes.Equal(b[:2], data[len(data)-2:]) {
		t.Errorf("tail read: %d %v", n, err)
	}
	if n, err := r.ReadAt(b, int64(len(data)+10)); n != 0 || err != io.EOF {
		t.Errorf("read past the end: %d %v", n, err)
	}
	if n, err := r.ReadAt(nil, 0); n != 0 || err != nil {
		t.Errorf("empty read: %d %v", n, err)
	}
	if _, err := r.ReadAt(b, -1); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("negative offset: %v", err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			big := make([]byte, 1<<20+3) // more than one page cache chunk in one call
			for off := int64(g); off+int64(len(big)) <= int64(len(data)); off += 1 << 20 {
				if n, err := r.ReadAt(big, off); n != len(big) || err != nil || !bytes.Equal(big, data[off:off+int64(len(big))]) {
					t.Errorf("read of %d at %d: %d %v, or wrong bytes", len(big), off, n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadAt(b, 0); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("read after close: %v, want an error naming %s", err, p)
	}
}

// Only clients that own a thread and a processor read through rawPread:
// sequential probes with at most MaxOwnProcessorClients clients.
func TestOwnThreadReads(t *testing.T) {
	for _, c := range []struct {
		clients, parallel int
		want              bool
	}{{12, 1, true}, {12, 0, true}, {MaxOwnProcessorClients, 1, true}, {12, 4, false}, {MaxOwnProcessorClients + 1, 1, false}} {
		if got := ownProcessorReads(Load{Clients: c.clients}, ProbeConfig{IO: IOPread, Parallel: c.parallel}); got != c.want {
			t.Errorf("%d clients, --parallel %d: own-thread reads %v, want %v", c.clients, c.parallel, got, c.want)
		}
	}
}
