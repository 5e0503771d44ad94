package prefix

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// How table bytes are read: every byte of a table once, and only the bytes
// needed. The kernel's readahead would read up to read_ahead_kb (8 MiB on
// many HDD arrays) past each read; for a table whose prefix ends long before
// the file does, that is data nobody asked for. So every table descriptor is
// advised POSIX_FADV_RANDOM (no readahead on it), the header parse reads only
// the header's pages, and the prefix copy asks for exactly its range ahead of
// the reads (POSIX_FADV_WILLNEED, clipped to the prefix), which keeps the
// disks busy without reading past the prefix.

// readAhead is how far past the current read the prefix reader asks the
// kernel to fetch: two chunks, so one is in flight while one is consumed.
const readAhead = 2 * digestChunk

// adviseRandom turns off the kernel's readahead for f (advice only: a file
// system that ignores it is still read correctly).
func adviseRandom(f *os.File) {
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM)
}

// rangeReader reads f from 0 to n, asking the kernel for the next readAhead
// bytes of the range before each read, never for a byte at or past n. f
// should be advised random (adviseRandom) so that the reads themselves add
// no readahead.
type rangeReader struct {
	f       *os.File
	off, n  int64
	advised int64 // [0, advised) was asked for
}

func newRangeReader(f *os.File, n int64) *rangeReader {
	return &rangeReader{f: f, n: n}
}

func (r *rangeReader) Read(p []byte) (int, error) {
	if r.off >= r.n {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n-r.off {
		p = p[:r.n-r.off]
	}
	if want := min(r.n, r.off+int64(len(p))+readAhead); want > r.advised {
		_ = unix.Fadvise(int(r.f.Fd()), r.advised, want-r.advised, unix.FADV_WILLNEED)
		r.advised = want
	}
	m, err := r.f.ReadAt(p, r.off)
	r.off += int64(m)
	if err == io.EOF && m > 0 {
		err = nil
	}
	return m, err
}

// procSelfIO is where the kernel counts this process's I/O.
const procSelfIO = "/proc/self/io"

// PhysicalReads is a reading of the bytes this process has had read from
// storage (read_bytes of /proc/self/io: block-device reads it caused,
// readahead included, page-cache hits not). OK is false where the kernel
// does not provide the counter (no task I/O accounting, or no /proc).
type PhysicalReads struct {
	Bytes int64
	OK    bool
}

// ReadPhysical takes a reading now.
func ReadPhysical() PhysicalReads {
	b, err := os.ReadFile(procSelfIO)
	if err != nil {
		return PhysicalReads{}
	}
	n, err := parseReadBytes(b)
	if err != nil {
		return PhysicalReads{}
	}
	return PhysicalReads{Bytes: n, OK: true}
}

// Since returns the bytes read from storage since r was taken, or -1 when
// either reading is unavailable (or the counter went backwards, which a
// kernel never does: the input is not trusted).
func (r PhysicalReads) Since() int64 {
	now := ReadPhysical()
	if !r.OK || !now.OK || now.Bytes < r.Bytes {
		return -1
	}
	return now.Bytes - r.Bytes
}

// parseReadBytes finds the read_bytes line of /proc/<pid>/io.
func parseReadBytes(b []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok || string(k) != "read_bytes" {
			continue
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s: read_bytes %q is not a byte count", procSelfIO, bytes.TrimSpace(v))
		}
		return n, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("%s: %w", procSelfIO, err)
	}
	return 0, fmt.Errorf("%s has no read_bytes line (kernel without task I/O accounting)", procSelfIO)
}

// writebackFile writes to f and asks the kernel to start writing each
// chunk back to the disk as soon as it is in the page cache
// (sync_file_range SYNC_FILE_RANGE_WRITE: asynchronous, it does not wait),
// so the disk writes overlap the rest of the copy and the prefix's final
// fsync waits only for the last chunks, as a copy followed by `sync` cannot.
// The request is advice: where the kernel or file system refuses it, the
// fsync still writes everything.
type writebackFile struct {
	f   *os.File
	off int64
}

func (w *writebackFile) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if n > 0 {
		_ = unix.SyncFileRange(int(w.f.Fd()), w.off, int64(n), unix.SYNC_FILE_RANGE_WRITE)
		w.off += int64(n)
	}
	return n, err
}
