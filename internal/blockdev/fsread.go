package blockdev

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/tbhost/tbhost/internal/sysread"
)

// hostFS reads host paths (/sys/block/sda/size) under a root directory and
// remembers every path it touched, so Snapshot can copy exactly what the
// inventory read. Every read is bounded (internal/sysread): a missing file
// reads as "" as before, but a file that is refused (a FIFO, a device such
// as /dev/zero, a huge file, a number out of range) is remembered as the
// first failure, which Read returns, naming the file.
type hostFS struct {
	root    string
	mu      sync.Mutex
	seen    map[string]bool
	failure error
}

// maxBytes bounds binary attributes and udev database files (VPD pages
// are at most 64 KiB + 4).
const maxBytes = 1 << 20

func newHostFS(root string) *hostFS {
	if root == "" {
		root = "/"
	}
	return &hostFS{root: root, seen: map[string]bool{}}
}

// path maps a host path to the real path under root.
func (h *hostFS) path(p string) string {
	if h.root == "/" {
		return p
	}
	return filepath.Join(h.root, p)
}

func (h *hostFS) note(p string) {
	h.mu.Lock()
	h.seen[p] = true
	h.mu.Unlock()
}

// refused records err as the first failure when it is a refusal (not a
// missing or unreadable file, which callers treat as absent).
func (h *hostFS) refused(err error) {
	if !errors.Is(err, sysread.ErrNotRegular) && !errors.Is(err, sysread.ErrTooLarge) &&
		!errors.Is(err, sysread.ErrOutOfRange) && !errors.Is(err, sysread.ErrNotDir) {
		return
	}
	h.mu.Lock()
	if h.failure == nil {
		h.failure = err
	}
	h.mu.Unlock()
}

// failed is the first refusal met, nil when there was none.
func (h *hostFS) failed() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failure
}

// readString returns the trimmed content of a file, "" if it is missing.
func (h *hostFS) readString(p string) string {
	s, err := sysread.Attr(h.path(p))
	if err != nil {
		h.refused(err)
		return ""
	}
	h.note(p)
	return s
}

func (h *hostFS) readBytes(p string) ([]byte, error) {
	b, err := sysread.File(h.path(p), maxBytes)
	if err != nil {
		h.refused(err)
		return nil, err
	}
	h.note(p)
	return b, nil
}

// readUint reads a decimal attribute in [min, max]; def when the file is
// missing or empty. Anything else out of range is a refusal.
func (h *hostFS) readUint(p string, def, min, max int64) int64 {
	s := h.readString(p)
	if s == "" {
		return def
	}
	v, err := sysread.ParseInt(h.path(p), s, min, max)
	if err != nil {
		if !errors.Is(err, sysread.ErrOutOfRange) {
			err = fmt.Errorf("%w: %w", err, sysread.ErrOutOfRange)
		}
		h.refused(fmt.Errorf("%w (fix the --root tree)", err))
		return def
	}
	return v
}

func (h *hostFS) readlink(p string) string {
	t, err := os.Readlink(h.path(p))
	if err != nil {
		return ""
	}
	h.note(p)
	return t
}

// readDir lists entry names, sorted; nil when the directory is missing.
func (h *hostFS) readDir(p string) []string {
	es, err := sysread.Dir(h.path(p), sysread.DirLimit)
	if err != nil {
		h.refused(err)
		return nil
	}
	h.note(p + "/")
	names := make([]string, 0, len(es))
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func (h *hostFS) exists(p string) bool {
	_, err := os.Stat(h.path(p))
	return err == nil
}

// touched returns the paths read, sorted; directories end in "/".
func (h *hostFS) touched() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.seen))
	for p := range h.seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
