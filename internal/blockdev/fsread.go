package blockdev

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// hostFS reads host paths (/sys/block/sda/size) under a root directory and
// remembers every path it touched, so Snapshot can copy exactly what the
// inventory read.
type hostFS struct {
	root string
	mu   sync.Mutex
	seen map[string]bool
}

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

// readString returns the trimmed content of a file, "" if it is missing.
func (h *hostFS) readString(p string) string {
	b, err := os.ReadFile(h.path(p))
	if err != nil {
		return ""
	}
	h.note(p)
	return strings.TrimSpace(string(b))
}

func (h *hostFS) readBytes(p string) ([]byte, error) {
	b, err := os.ReadFile(h.path(p))
	if err == nil {
		h.note(p)
	}
	return b, err
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
	es, err := os.ReadDir(h.path(p))
	if err != nil {
		return nil
	}
	h.note(p + "/")
	names := make([]string, 0, len(es))
	for _, e := range es {
		names = append(names, e.Name())
	}
	sort.Strings(names)
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
