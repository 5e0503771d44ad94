package prefix

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"

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

// openFile opens path as os.OpenFile does (close-on-exec, EINTR retried,
// errors as *os.PathError), minus the runtime's attempt to put the
// descriptor into its network poller: on Linux os.OpenFile tries epoll on
// every file, and for a regular file that fails (EPERM) after switching the
// descriptor to non-blocking mode and back, four system calls that do
// nothing. os.NewFile checks the mode with one. Extract opens three files a
// table (the table for its header, again for its prefix, and the temporary
// prefix file); where a system call costs a microsecond (a guest whose
// kernel runs behind a hypervisor's traps, as on the benchmark host) the
// wasted ones were a sizeable part of its CPU time on many small prefixes
// (issue 16).
func openFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	for {
		fd, err := unix.Open(path, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err == nil {
			return os.NewFile(uintptr(fd), path), nil
		}
		if err != unix.EINTR {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
	}
}

// adviseRandom turns off the kernel's readahead for f (advice only: a file
// system that ignores it is still read correctly).
func adviseRandom(f *os.File) {
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM)
}

// rangeReader reads f from 0 to n, asking the kernel for the next readAhead
// bytes of the range before each read, never for a byte at or past n. f
// should be advised random (adviseRandom) so that the reads themselves add
// no readahead.
//
// With a head (streamHead), it reads [0, head) through the kernel's own
// sequential readahead instead: its disk requests are several times larger
// (large folios: 2.4 MiB on this machine's virtio disk, where a WILLNEED of
// the same bytes makes 99-455 KiB ones), and a cold copy of a prefix of
// tens of MB is that much faster. The readahead runs at most two windows
// (2 x read_ahead_kb) past the reader, so head stops that far before n and
// nothing past n is read. The tail [head, n) is asked for with WILLNEED and
// copied from a read-only mapping advised MADV_RANDOM: the last readahead
// windows left marker pages in it, and a read() of a marker page starts
// another window (past n, advice or not), where a fault in a MADV_RANDOM
// mapping starts none.
type rangeReader struct {
	f       *os.File
	off, n  int64
	advised int64 // [0, advised) was asked for

	head      int64  // [0, head) through the kernel's readahead; 0: none
	readahead int64  // the kernel's readahead window (bytes), with a head
	tail      []byte // the mapping of [tailAt, n), once the reader is past head
	tailAt    int64
}

func newRangeReader(f *os.File, n int64) *rangeReader {
	return &rangeReader{f: f, n: n}
}

// minStreamHead: below this many bytes before the tail, the range is read
// as a whole with WILLNEED (small prefixes gain nothing from the switch).
const minStreamHead = 4 << 20

// streamHead turns on the head of the range read through the kernel's
// readahead (see rangeReader), where f's device's readahead is known
// (deviceReadahead) and the range is long enough; f must not have been
// advised random. It returns r.
func (r *rangeReader) streamHead(readahead int64) *rangeReader {
	margin := 2*readahead + readAhead // two windows, and two chunks for a window rounded up to large folios
	if readahead <= 0 || r.n-margin < minStreamHead {
		adviseRandom(r.f)
		return r
	}
	_ = unix.Fadvise(int(r.f.Fd()), 0, 0, unix.FADV_NORMAL)
	r.head, r.readahead = r.n-margin, readahead
	return r
}

// Close unmaps the tail; the file stays open.
func (r *rangeReader) Close() error {
	if r.tail == nil {
		return nil
	}
	err := unix.Munmap(r.tail)
	r.tail = nil
	return err
}

func (r *rangeReader) Read(p []byte) (int, error) {
	if r.off >= r.n {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n-r.off {
		p = p[:r.n-r.off]
	}
	if r.head > 0 {
		if r.off < r.head {
			m, err := r.f.ReadAt(p[:min(int64(len(p)), r.head-r.off)], r.off)
			r.off += int64(m)
			if err == io.EOF && m > 0 {
				err = nil
			}
			return m, err
		}
		if n, ok, err := r.readTail(p); ok {
			return n, err
		}
		r.head = 0 // no mapping: the rest as without a head (WILLNEED)
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

// readTail copies p from the tail's mapping, made on the first call; ok is
// false where the file cannot be mapped (the caller reads on without it).
func (r *rangeReader) readTail(p []byte) (n int, ok bool, err error) {
	if r.tail == nil {
		fd := int(r.f.Fd())
		_ = unix.Fadvise(fd, 0, 0, unix.FADV_RANDOM)
		// one WILLNEED reads at most read_ahead_kb (the kernel caps it): ask
		// in pieces of that size, all at once
		for at := r.head; at < r.n; at += r.readahead {
			_ = unix.Fadvise(fd, at, min(r.readahead, r.n-at), unix.FADV_WILLNEED)
		}
		r.advised = r.n
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return 0, true, fmt.Errorf("stat the table: %w", err)
		}
		if st.Size < r.n { // mapped bytes past the end of a file read as zeros
			r.n = max(st.Size, r.head)
			if r.off >= r.n {
				return 0, true, io.EOF
			}
		}
		at := r.head &^ int64(os.Getpagesize()-1)
		m, err := unix.Mmap(fd, at, int(r.n-at), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return 0, false, nil
		}
		_ = unix.Madvise(m, unix.MADV_RANDOM)
		r.tail, r.tailAt = m, at
	}
	// a file cut short under the mapping faults (SIGBUS): an error here,
	// not a crash; any other panic is a bug and goes on
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if v := recover(); v != nil {
			if _, fault := v.(interface{ Addr() uintptr }); !fault {
				panic(v)
			}
			n, err = 0, fmt.Errorf("%w: the table was cut short while its prefix was read", ErrTruncated)
		}
	}()
	ok = true
	n = copy(p, r.tail[r.off-r.tailAt:])
	r.off += int64(n)
	return n, true, nil
}

// deviceReadahead is the kernel's readahead window for files on the block
// device numbered dev (read_ahead_kb of its queue, or of its disk's for a
// partition), or 0 where it is not found (a file system without one block
// device).
func deviceReadahead(dev uint64) int64 {
	base := fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(dev), unix.Minor(dev))
	for _, q := range []string{base + "/queue/read_ahead_kb", base + "/../queue/read_ahead_kb"} {
		b, err := os.ReadFile(q)
		if err != nil {
			continue
		}
		kb, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
		if err != nil || kb < 0 || kb > 1<<30 {
			return 0
		}
		return kb << 10
	}
	return 0
}

// readaheads remembers each device's readahead window for one extract:
// reading it from sysfs took about ten system calls, made for every table.
type readaheads struct {
	mu    sync.Mutex
	bytes map[uint64]int64 // by device number
}

// of is the readahead window of the device holding the file st describes
// (an os.FileInfo of an open file), or 0 where it is not known.
func (r *readaheads) of(st os.FileInfo) int64 {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	dev := uint64(sys.Dev) // not uint64 on every platform
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok := r.bytes[dev]; ok {
		return n
	}
	if r.bytes == nil {
		r.bytes = map[uint64]int64{}
	}
	n := deviceReadahead(dev)
	r.bytes[dev] = n
	return n
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
// sync (its batch's syncfs, or its fsync) waits only for the last chunks,
// as a copy followed by `sync` cannot. The request is advice: where the
// kernel or file system refuses it, the final sync still writes everything.
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
