package prefix

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/tbhost/tbhost/internal/atomicfile"
	"github.com/tbhost/tbhost/internal/jsonlines"
	"github.com/tbhost/tbhost/internal/sysread"
)

// ManifestName is the manifest file in the store: one JSON object per line,
// appended (and fsynced) as each prefix lands, compacted at the end of a run.
// Later lines for the same table win.
const ManifestName = "tbhost-prefix-manifest.jsonl"

// PrefixSuffix is appended to a table name to name its prefix file: the
// layout the largest public tablebase server reads with its hot-prefix option.
const PrefixSuffix = ".prefix"

// tmpPattern names a prefix being written: hidden, never a final name.
func tmpName(name string) string { return "." + name + PrefixSuffix + ".tmp" }

// ManifestEntry records one extracted prefix and the source it came from.
type ManifestEntry struct {
	Name      string `json:"name"`     // KRvK.rtbw
	Source    string `json:"source"`   // absolute path of the table at extraction
	Size      int64  `json:"size"`     // table size at extraction
	MtimeNS   int64  `json:"mtime_ns"` // table mtime at extraction (ns since epoch)
	Upto      string `json:"upto"`     // block-lengths (full prefix) or sparse-index
	Prefix    int64  `json:"prefix"`   // bytes in the prefix file
	SHA256    string `json:"sha256"`   // of the prefix bytes
	Extracted string `json:"extracted"`
}

// Manifest maps table names to their entries.
type Manifest map[string]ManifestEntry

// manifestLines counts the lines of the store's manifest (0 if absent).
func manifestLines(store string) int {
	b, err := sysread.StateFile(filepath.Join(store, ManifestName), sysread.StateLimit)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\n"))
}

// LoadManifest reads the store's manifest; a missing manifest is empty.
// Lines that do not decode (a crash while appending) are skipped.
func LoadManifest(store string) (Manifest, error) {
	path := filepath.Join(store, ManifestName)
	b, err := sysread.StateFile(path, sysread.StateLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return Manifest{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	m := Manifest{}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e ManifestEntry
		if err := json.Unmarshal(line, &e); err != nil || e.Name == "" {
			// A torn append from a crash: the prefix it described has no
			// entry, so extract redoes it and verify reports it unrecorded.
			continue
		}
		m[e.Name] = e
	}
	return m, nil
}

// manifestLog appends entries durably.
type manifestLog struct {
	f *os.File
	w *bufio.Writer
}

// appendDurably writes the entries' lines and fsyncs them, all or none:
// when a write or the fsync fails (a full store: the buffer has already
// flushed some of the lines), the manifest is cut back to its length
// before the call, so that it records no entry the run reports as not
// recorded (the next extract redoes those, as the report says).
func (m *manifestLog) appendDurably(es []ManifestEntry) error {
	start, err := m.f.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("append to manifest: %w", err)
	}
	for _, e := range es {
		if err = m.write(e); err != nil {
			break
		}
	}
	if err == nil {
		err = m.sync()
	}
	if err != nil {
		m.w.Reset(m.f) // drop what the buffer still holds
		if terr := m.f.Truncate(start); terr != nil {
			return fmt.Errorf("%w; and cutting the manifest %s back to its last whole batch failed too (%v): run prefix verify --full after the rerun", err, m.f.Name(), terr)
		}
	}
	return err
}

func openManifestLog(store string) (*manifestLog, error) {
	f, err := os.OpenFile(filepath.Join(store, ManifestName), os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open manifest: %w", err)
	}
	// A crash mid-append leaves a torn last line: start on a fresh line so it
	// cannot swallow the next entry.
	if _, torn, err := jsonlines.TornTail(f); err == nil && torn {
		if _, err := f.Write([]byte("\n")); err != nil {
			f.Close()
			return nil, fmt.Errorf("repair manifest: %w", err)
		}
	}
	return &manifestLog{f: f, w: bufio.NewWriter(f)}, nil
}

// write buffers one line; sync makes the written lines durable.
func (m *manifestLog) write(e ManifestEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode manifest entry: %w", err)
	}
	if _, err := m.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("append to manifest: %w", err)
	}
	return nil
}

func (m *manifestLog) sync() error {
	if err := m.w.Flush(); err != nil {
		return fmt.Errorf("append to manifest: %w", err)
	}
	if err := m.f.Sync(); err != nil {
		return fmt.Errorf("fsync manifest: %w", err)
	}
	return nil
}

func (m *manifestLog) close() error { return m.f.Close() }

// writeManifest replaces the manifest with m, atomically.
func writeManifest(store string, m Manifest) error {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	for _, n := range names {
		b, err := json.Marshal(m[n])
		if err != nil {
			return fmt.Errorf("encode manifest: %w", err)
		}
		buf.Write(append(b, '\n'))
	}
	return writeFileAtomic(store, ManifestName, buf.Bytes())
}

// writeFileAtomic writes data to dir/name through a temporary file
// (.<name>.<digits>.tmp, which extract removes and verify names as a
// leftover, as it does a prefix's), fsync, rename and a directory fsync.
func writeFileAtomic(dir, name string, data []byte) error {
	if err := atomicfile.WriteFile(filepath.Join(dir, name), data, atomicfile.Options{Temp: "." + name + ".*.tmp", Perm: 0o644}); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// syncDir fsyncs the store's directory, so that the renames into it are on
// disk before the manifest records them.
func syncDir(dir string) error { return atomicfile.SyncDir(dir) }

func mtimeNS(fi fs.FileInfo) int64 { return fi.ModTime().UnixNano() }

func formatNS(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }
