package prefix

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseReadBytes(t *testing.T) {
	good := "rchar: 6976\nwchar: 0\nsyscr: 10\nsyscw: 0\nread_bytes: 4096\nwrite_bytes: 0\ncancelled_write_bytes: 0\n"
	if n, err := parseReadBytes([]byte(good)); err != nil || n != 4096 {
		t.Fatalf("parseReadBytes = %d, %v; want 4096", n, err)
	}
	for _, bad := range []string{"", "rchar: 1\n", "read_bytes: -5\n", "read_bytes: 12x\n", "read_bytes: 99999999999999999999\n"} {
		if n, err := parseReadBytes([]byte(bad)); err == nil {
			t.Errorf("parseReadBytes(%q) = %d, want an error", bad, n)
		}
	}
	if r := (PhysicalReads{Bytes: 1 << 62, OK: true}); ReadPhysical().OK && r.Since() != -1 {
		t.Errorf("a counter that went backwards gave %d, want -1 (unknown)", r.Since())
	}
	if (PhysicalReads{}).Since() != -1 {
		t.Error("an unavailable reading must give -1")
	}
}

func FuzzParseReadBytes(f *testing.F) {
	f.Add([]byte("rchar: 6976\nread_bytes: 4096\nwrite_bytes: 0\n"))
	f.Add([]byte("read_bytes:\n"))
	f.Add([]byte("read_bytes: 1\nread_bytes: 2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := parseReadBytes(b)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("negative byte count %d accepted", n)
		}
		// The value returned is the first read_bytes line's, as written.
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && k == "read_bytes" {
				if want, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64); want != n {
					t.Fatalf("parsed %d, the line says %q", n, v)
				}
				return
			}
		}
	})
}

// The prefix reader returns exactly [0, n) of the file whatever the read
// sizes, and reports EOF at n although the file goes on.
func TestRangeReaderStopsAtTheRange(t *testing.T) {
	path, data := randomFile(t, 3*digestChunk+777, 1)
	for _, n := range []int64{0, 1, 4095, digestChunk, 2*digestChunk + 5, int64(len(data)), int64(len(data)) + 100} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		adviseRandom(f)
		got, err := io.ReadAll(io.LimitReader(struct{ io.Reader }{newRangeReader(f, n)}, 1<<30))
		f.Close()
		want := data[:min(n, int64(len(data)))]
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("n=%d: read %d bytes (%v), want %d", n, len(got), err, len(want))
		}
	}
}

// With a head read through the kernel's readahead and the tail through a
// mapping, the reader still returns exactly [0, n) whatever the read sizes
// and the switch point, also for a range longer than the file.
func TestStreamHeadReaderStopsAtTheRange(t *testing.T) {
	path, data := randomFile(t, 9*digestChunk+777, 2)
	full := int64(len(data))
	for _, c := range []struct {
		n, readahead int64
		read         int
		head         bool
	}{
		{full, 64 << 10, digestChunk, true},
		{full, 64 << 10, 4096 + 13, true},
		{full - 1, 256 << 10, 3 * digestChunk, true},
		{7*digestChunk + 1, 0, digestChunk, false},       // readahead unknown: no head
		{7*digestChunk + 1, 8 << 20, digestChunk, false}, // too short for the margin
		{full + 100, 64 << 10, digestChunk, true},        // past the end of the file: its bytes, then EOF
	} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		r := newRangeReader(f, c.n).streamHead(c.readahead)
		if (r.head > 0) != c.head {
			t.Errorf("n=%d readahead=%d: head %d, want one: %v", c.n, c.readahead, r.head, c.head)
		}
		var got []byte
		buf := make([]byte, c.read)
		var rerr error
		for {
			m, err := r.Read(buf)
			got = append(got, buf[:m]...)
			if err != nil {
				rerr = err
				break
			}
		}
		r.Close()
		f.Close()
		want := data[:min(c.n, full)]
		if !bytes.Equal(got, want) {
			t.Errorf("n=%d readahead=%d read=%d: %d bytes, want %d", c.n, c.readahead, c.read, len(got), len(want))
		}
		if rerr != io.EOF {
			t.Errorf("n=%d: ended with %v, want EOF", c.n, rerr)
		}
		if c.n > full && (rerr != io.EOF || int64(len(got)) != full) {
			t.Errorf("n=%d past the end of the file: %d bytes and %v, want the file's %d and EOF (the caller's count says truncated)", c.n, len(got), rerr, full)
		}
	}
}

// A table cut short while its tail is read through the mapping (a fault,
// SIGBUS) is an ErrTruncated error, not a crash.
func TestStreamHeadReaderTableCutShort(t *testing.T) {
	path, data := randomFile(t, 8*digestChunk, 3)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := newRangeReader(f, int64(len(data))).streamHead(64 << 10)
	defer r.Close()
	buf := make([]byte, digestChunk)
	for r.off <= r.head {
		if _, err := r.Read(buf); err != nil {
			t.Fatalf("read before the cut: %v", err)
		}
	}
	if err := os.Truncate(path, r.off); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(buf); !errors.Is(err, ErrTruncated) {
		t.Fatalf("read after the cut: %v, want ErrTruncated", err)
	}
}

// randomFile writes size random bytes (from seed) to a new file.
func randomFile(t *testing.T, size int, seed int64) (string, []byte) {
	t.Helper()
	data := make([]byte, size)
	rand.New(rand.NewSource(seed)).Read(data)
	path := filepath.Join(t.TempDir(), "t")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// The early-writeback writer writes every byte where a plain write would,
// in order, on a file; and where sync_file_range is refused (a pipe) the
// bytes still go through: the advice never costs a byte.
func TestWritebackFileWritesEveryByte(t *testing.T) {
	want := make([]byte, 3*digestChunk+123)
	for i := range want {
		want[i] = byte(i * 7)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "p"))
	if err != nil {
		t.Fatal(err)
	}
	w := &writebackFile{f: f}
	for rest := want; len(rest) > 0; {
		n := min(len(rest), digestChunk)
		if m, err := w.Write(rest[:n]); err != nil || m != n {
			t.Fatalf("write: %d, %v", m, err)
		}
		rest = rest[n:]
	}
	if w.off != int64(len(want)) {
		t.Errorf("offset %d after %d bytes", w.off, len(want))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(f.Name()); !bytes.Equal(got, want) {
		t.Errorf("file holds %d bytes, not the %d written", len(got), len(want))
	}

	r, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	pwb := &writebackFile{f: pw}
	if _, err := pwb.Write(want[:1000]); err != nil {
		t.Fatalf("write to a pipe: %v", err)
	}
	pw.Close()
	if got := <-done; !bytes.Equal(got, want[:1000]) {
		t.Errorf("pipe got %d bytes, want 1000", len(got))
	}
}
