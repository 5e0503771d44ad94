package bench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// IO is how table bytes are read.
type IO string

// The two ways servers read tables: pread(2) into a buffer, or copying out
// of an mmap(2)ed file (page faults on cold pages).
const (
	IOPread IO = "pread"
	IOMmap  IO = "mmap"
)

// Advice is the access-pattern hint given to the kernel.
type Advice string

// normal: no hint (kernel readahead). random: POSIX_FADV_RANDOM for pread,
// MADV_RANDOM for mmap (no readahead).
const (
	AdviseNormal Advice = "normal"
	AdviseRandom Advice = "random"
)

// ParseIO reads the --io flag.
func ParseIO(s string) (IO, error) {
	switch IO(s) {
	case IOPread, IOMmap:
		return IO(s), nil
	}
	return "", fmt.Errorf("--io %q: want pread or mmap", s)
}

// ParseAdvice reads the --advise flag.
func ParseAdvice(s string) (Advice, error) {
	switch Advice(s) {
	case AdviseNormal, AdviseRandom:
		return Advice(s), nil
	}
	return "", fmt.Errorf("--advise %q: want normal or random", s)
}

// openFile opens path for reading with the given method and advice. The
// returned ReaderAt is safe for concurrent use. ownProcessor says that every
// read will come from a client that has a processor of its own
// (Load.OwnProcessors, one probe at a time: ownProcessorReads); pread then goes
// through rawPread (on 64-bit systems).
func openFile(path string, how IO, advice Advice, ownProcessor bool) (io.ReaderAt, io.Closer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open for benchmark: %w", err)
	}
	switch how {
	case IOPread:
		if advice == AdviseRandom {
			if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM); err != nil {
				f.Close()
				return nil, nil, fmt.Errorf("%s: posix_fadvise(RANDOM): %w", path, err)
			}
		}
		if ownProcessor && strconv.IntSize == 64 { // one register holds pread64's offset
			r := newRawPread(f)
			return r, r, nil
		}
		return f, f, nil
	case IOMmap:
		m, err := mmapFile(f, advice)
		f.Close() // the mapping stays valid without the descriptor
		if err != nil {
			return nil, nil, err
		}
		return m, m, nil
	}
	f.Close()
	return nil, nil, fmt.Errorf("internal: unknown IO method %q", how)
}

// mapped is a read-only shared mapping of a whole file.
type mapped struct {
	path string
	data []byte
}

func mmapFile(f *os.File, advice Advice) (*mapped, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat for mmap: %w", err)
	}
	if fi.Size() == 0 {
		return &mapped{path: f.Name()}, nil
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("%s: mmap: %w", f.Name(), err)
	}
	if advice == AdviseRandom {
		if err := unix.Madvise(data, unix.MADV_RANDOM); err != nil {
			_ = unix.Munmap(data)
			return nil, fmt.Errorf("%s: madvise(RANDOM): %w", f.Name(), err)
		}
	}
	return &mapped{path: f.Name(), data: data}, nil
}

// ReadAt copies from the mapping (faulting in cold pages, as an mmap
// reader does).
func (m *mapped) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s: negative offset %d", m.path, off)
	}
	if off >= int64(len(m.data)) {
		return 0, io.EOF
	}
	n := mapCopy(p, m.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (m *mapped) Close() error {
	if m.data == nil {
		return nil
	}
	err := unix.Munmap(m.data)
	m.data = nil
	if err != nil {
		return fmt.Errorf("%s: munmap: %w", m.path, err)
	}
	return nil
}

// CacheMode is what happens to the page cache before each configuration.
type CacheMode string

// drop: echo 3 > /proc/sys/vm/drop_caches (needs root; falls back to
// evict and says so); evict: POSIX_FADV_DONTNEED on the files under test
// only; keep: leave the cache warm.
const (
	CacheDrop  CacheMode = "drop"
	CacheEvict CacheMode = "evict"
	CacheKeep  CacheMode = "keep"
)

// ParseCacheMode reads the --cache flag.
func ParseCacheMode(s string) (CacheMode, error) {
	switch CacheMode(s) {
	case CacheDrop, CacheEvict, CacheKeep:
		return CacheMode(s), nil
	}
	return "", fmt.Errorf("--cache %q: want drop (whole page cache, needs root), evict (only the files under test) or keep (warm)", s)
}

// CachePrep reports what was done to the page cache before a run.
type CachePrep struct {
	Mode   CacheMode `json:"mode"`
	Done   string    `json:"done"`             // what actually happened
	Notice string    `json:"notice,omitempty"` // why it is not what was asked
}

// prepareCache empties the page cache for files as mode asks.
// dropCachesPath is /proc/sys/vm/drop_caches (under --root in tests).
func prepareCache(mode CacheMode, dropCachesPath string, files []string) CachePrep {
	prep := CachePrep{Mode: mode}
	switch mode {
	case CacheKeep:
		prep.Done = "kept warm"
		return prep
	case CacheDrop:
		unix.Sync()
		err := os.WriteFile(dropCachesPath, []byte("3\n"), 0)
		if err == nil {
			prep.Done = "dropped the whole page cache"
			return prep
		}
		prep.Notice = fmt.Sprintf("could not drop the page cache (%v): run as root on a host whose /proc/sys is writable; evicted the files under test instead", trimErr(err))
	}
	var failed []string
	for _, f := range files {
		if err := evict(f); err != nil {
			failed = append(failed, err.Error())
		}
	}
	prep.Done = fmt.Sprintf("evicted %d files with POSIX_FADV_DONTNEED", len(files)-len(failed))
	if len(failed) > 0 {
		prep.Notice = strings.TrimPrefix(prep.Notice+"; could not evict: "+strings.Join(failed, "; "), "; ")
	}
	return prep
}

func evict(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("%s: posix_fadvise(DONTNEED): %w", path, err)
	}
	return nil
}

func trimErr(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Path + ": " + pe.Err.Error()
	}
	return err.Error()
}

// rawPread reads an open file with pread(2) made as a raw system call
// (no runtime bookkeeping), for clients that each have a processor of
// their own. Through os.File every read enters and leaves the runtime's
// system-call state; with twelve clients on two CPUs the kernel often
// deschedules a client inside its pread, the runtime's monitor then takes
// the processor from the "blocked" thread and wakes another to look for
// work, and the returning read has to get a processor back. That doubled
// the involuntary context switches and put 300-550 us reads into the warm
// tail where fio, on the same file, had 30-40 us (issue 16: probe p99.9
// warm 9-15x fio's; a raw pread measured 29-35 us against fio's 30-36 us
// in alternating runs). A raw read keeps its processor: only a client
// with a processor of its own may make one, or it would stall the
// goroutines queued behind it, and a garbage collection waits for the
// reads in flight to return. So none should run: the driver collects
// before the clock starts and a sequential probe request allocates nothing
// (prober.picks; TestSequentialRequestAllocatesNothing). --raw's CSV lines
// still make garbage.
type rawPread struct {
	f  *os.File // kept reachable: its finalizer would close fd
	fd uintptr
}

func newRawPread(f *os.File) *rawPread {
	return &rawPread{f: f, fd: f.Fd()}
}

// ReadAt follows io.ReaderAt: n < len(p) only with an error, io.EOF at the
// end of the file.
func (r *rawPread) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s: negative offset %d", r.f.Name(), off)
	}
	n := 0
	for n < len(p) {
		m, _, errno := unix.RawSyscall6(unix.SYS_PREAD64, r.fd, uintptr(unsafe.Pointer(&p[n])), uintptr(len(p)-n), uintptr(off+int64(n)), 0, 0)
		switch {
		case errno == unix.EINTR:
			continue
		case errno != 0:
			runtime.KeepAlive(r.f)
			return n, &os.PathError{Op: "pread", Path: r.f.Name(), Err: errno}
		case m == 0:
			runtime.KeepAlive(r.f)
			return n, io.EOF
		}
		n += int(m)
	}
	runtime.KeepAlive(r.f)
	return n, nil
}

func (r *rawPread) Close() error { return r.f.Close() }
