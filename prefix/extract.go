package prefix

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ErrNoSpace: the store would not fit on its file system.
var ErrNoSpace = errors.New("not enough free space in the store")

// Progress receives extraction progress; it must be safe for concurrent use.
type Progress interface {
	Begin(files int, bytes int64)
	Advance(bytes int64)                      // bytes copied into the store
	Done(name string, bytes int64, err error) // one table finished, or failed
	End()
}

// ExtractOptions configure Extract.
type ExtractOptions struct {
	Store string
	Upto  Upto
	Jobs  int  // parallel files; < 1 means 1
	Force bool // rewrite prefixes that are already valid
	// Pause sleeps after each file: a test knob so a kill lands mid-run.
	Pause time.Duration
	// FreeSpace returns the bytes available to an unprivileged writer in dir;
	// nil uses statfs.
	FreeSpace func(dir string) (int64, error)
	Progress  Progress // nil: silent
}

// Failure is a table that was reported and skipped.
type Failure struct {
	Name  string `json:"name"`
	Path  string `json:"path"`
	Error string `json:"error"`
}

// ExtractReport is what an extraction did.
type ExtractReport struct {
	Store        string    `json:"store"`
	Upto         string    `json:"upto"`
	Tables       int       `json:"tables"`  // tables found
	Written      int       `json:"written"` // prefixes written this run
	Skipped      int       `json:"skipped"` // already valid (resumed runs)
	Failed       []Failure `json:"failed"`
	BytesRead    int64     `json:"bytes_read"`    // from the tables
	BytesWritten int64     `json:"bytes_written"` // prefix bytes into the store
	NeededBytes  int64     `json:"needed_bytes"`  // on-disk space the run needed
	FreeBytes    int64     `json:"free_bytes"`    // before the run
	Seconds      float64   `json:"seconds"`
}

// Statfs returns the bytes available to unprivileged users on dir's file system.
func Statfs(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// PrefixPath is where a table's prefix lives in a store.
func PrefixPath(store, table string) string { return filepath.Join(store, table+PrefixSuffix) }

// Extract writes each parsed table's prefix into the store. Refused tables
// (Parsed.Err) and tables that fail while copying are reported in the
// report's Failed list and skipped; the error return is for the run itself
// (store missing, not enough space, manifest unwritable, cancelled).
func Extract(ctx context.Context, parsed []Parsed, opt ExtractOptions) (*ExtractReport, error) {
	start := time.Now()
	rep := &ExtractReport{Store: opt.Store, Upto: opt.Upto.String(), Tables: len(parsed), Failed: []Failure{}}
	st, err := os.Stat(opt.Store)
	if err != nil {
		return rep, fmt.Errorf("store directory %s: %w (mount the NVMe array there, or create the directory)", opt.Store, err)
	}
	if !st.IsDir() {
		return rep, fmt.Errorf("store %s is not a directory", opt.Store)
	}
	if err := removeTemps(opt.Store); err != nil {
		return rep, err
	}
	man, err := LoadManifest(opt.Store)
	if err != nil {
		return rep, err
	}

	var todo []Parsed
	var need int64
	for _, p := range parsed {
		if p.Err != nil {
			rep.Failed = append(rep.Failed, Failure{Name: p.Name, Path: p.Path, Error: p.Err.Error()})
			continue
		}
		if !opt.Force && upToDate(opt.Store, p, opt.Upto, man) {
			rep.Skipped++
			continue
		}
		todo = append(todo, p)
		need += OnDisk(p.Layout.PrefixLen(opt.Upto))
	}
	need += int64(2 * 400 * (len(man) + len(todo))) // the manifest log and its compacted copy
	rep.NeededBytes = need
	free := opt.FreeSpace
	if free == nil {
		free = Statfs
	}
	if rep.FreeBytes, err = free(opt.Store); err != nil {
		return rep, err
	}
	if len(todo) > 0 && need > rep.FreeBytes {
		return rep, fmt.Errorf("%w: %s needs %d bytes for %d prefixes but has %d free; free space, use a larger store, or extract --upto sparse-index (see tbhost prefix plan)",
			ErrNoSpace, opt.Store, need, len(todo), rep.FreeBytes)
	}

	log, err := openManifestLog(opt.Store)
	if err != nil {
		return rep, err
	}
	defer log.close()

	var total int64
	for _, p := range todo {
		total += p.Layout.PrefixLen(opt.Upto)
	}
	prog := opt.Progress
	if prog == nil {
		prog = nopProgress{}
	}
	prog.Begin(len(todo), total)
	defer prog.End()

	type result struct {
		p     Parsed
		entry ManifestEntry
		read  int64
		err   error
	}
	jobs := opt.Jobs
	if jobs < 1 {
		jobs = 1
	}
	work := make(chan Parsed)
	results := make(chan result)
	var wg sync.WaitGroup
	for w := 0; w < jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1<<20)
			for p := range work {
				e, n, err := extractOne(ctx, p, opt.Store, opt.Upto, buf, prog)
				results <- result{p: p, entry: e, read: n, err: err}
				if opt.Pause > 0 {
					select {
					case <-ctx.Done():
					case <-time.After(opt.Pause):
					}
				}
			}
		}()
	}
	go func() {
		defer close(work)
		for _, p := range todo {
			select {
			case <-ctx.Done():
				return
			case work <- p:
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()

	var logErr error
	for r := range results {
		rep.BytesRead += r.read
		if r.err != nil {
			rep.Failed = append(rep.Failed, Failure{Name: r.p.Name, Path: r.p.Path, Error: r.err.Error()})
			prog.Done(r.p.Name, 0, r.err)
			continue
		}
		if logErr == nil {
			logErr = log.append(r.entry)
		}
		man[r.entry.Name] = r.entry
		rep.Written++
		rep.BytesWritten += r.entry.Prefix
		prog.Done(r.p.Name, r.entry.Prefix, nil)
	}
	rep.Seconds = time.Since(start).Seconds()
	if logErr != nil {
		return rep, logErr
	}
	if err := ctx.Err(); err != nil {
		return rep, fmt.Errorf("extract interrupted after %d prefixes (rerun to finish; finished prefixes are kept): %w", rep.Written, err)
	}
	if err := writeManifest(opt.Store, man); err != nil {
		return rep, err
	}
	return rep, nil
}

// upToDate: the manifest says this exact source was extracted at this level,
// and a file of the recorded length is in place (renamed in only when whole).
func upToDate(store string, p Parsed, upto Upto, man Manifest) bool {
	e, ok := man[p.Name]
	if !ok || e.Upto != upto.String() || e.Prefix != p.Layout.PrefixLen(upto) || e.Size != p.Layout.Size {
		return false
	}
	src, err := os.Stat(p.Path)
	if err != nil || mtimeNS(src) != e.MtimeNS || src.Size() != e.Size {
		return false
	}
	abs, err := filepath.Abs(p.Path)
	if err != nil || abs != e.Source {
		return false
	}
	fi, err := os.Stat(PrefixPath(store, p.Name))
	return err == nil && fi.Mode().IsRegular() && fi.Size() == e.Prefix
}

// removeTemps deletes temporary files left by an interrupted run.
func removeTemps(store string) error {
	ents, err := os.ReadDir(store)
	if err != nil {
		return fmt.Errorf("read store %s: %w", store, err)
	}
	for _, e := range ents {
		if isTemp(e.Name()) {
			if err := os.Remove(filepath.Join(store, e.Name())); err != nil {
				return fmt.Errorf("remove leftover %s: %w", e.Name(), err)
			}
		}
	}
	return nil
}

func isTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp")
}

type countWriter struct {
	n    int64
	prog Progress
}

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	c.prog.Advance(int64(len(p)))
	return len(p), nil
}

// extractOne copies one prefix into the store through a temporary file,
// checking it against the header as it streams. It returns the bytes read.
func extractOne(ctx context.Context, p Parsed, store string, upto Upto, buf []byte, prog Progress) (ManifestEntry, int64, error) {
	l := p.Layout
	plen := l.PrefixLen(upto)
	src, err := os.Open(p.Path)
	if err != nil {
		return ManifestEntry{}, 0, fmt.Errorf("open table: %w", err)
	}
	defer src.Close()
	before, err := src.Stat()
	if err != nil {
		return ManifestEntry{}, 0, fmt.Errorf("stat table: %w", err)
	}
	if before.Size() != l.Size {
		return ManifestEntry{}, 0, fmt.Errorf("table changed since its header was read (size %d, now %d)", l.Size, before.Size())
	}
	tmp := filepath.Join(store, tmpName(p.Name))
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return ManifestEntry{}, 0, fmt.Errorf("create %s: %w", tmp, err)
	}
	fail := func(err error) (ManifestEntry, int64, error) {
		out.Close()
		os.Remove(tmp)
		return ManifestEntry{}, 0, err
	}
	h := sha256.New()
	check := l.NewChecker()
	cw := &countWriter{prog: prog}
	r := io.NewSectionReader(src, 0, plen)
	n, err := io.CopyBuffer(io.MultiWriter(out, h, check, cw), ctxReader{ctx, r}, buf)
	if err != nil {
		return fail(fmt.Errorf("copy prefix of %s: %w", p.Path, err))
	}
	if n != plen {
		return fail(fmt.Errorf("%w: read %d of %d prefix bytes", ErrTruncated, n, plen))
	}
	if err := check.Close(); err != nil {
		return fail(err)
	}
	if err := out.Sync(); err != nil {
		return fail(fmt.Errorf("fsync %s: %w", tmp, err))
	}
	if err := out.Close(); err != nil {
		os.Remove(tmp)
		return ManifestEntry{}, n, fmt.Errorf("close %s: %w", tmp, err)
	}
	after, err := src.Stat()
	if err != nil || after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) {
		os.Remove(tmp)
		return ManifestEntry{}, n, fmt.Errorf("table changed while its prefix was copied; rerun extract")
	}
	final := PrefixPath(store, p.Name)
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return ManifestEntry{}, n, fmt.Errorf("rename into %s: %w", final, err)
	}
	if err := syncDir(store); err != nil {
		return ManifestEntry{}, n, err
	}
	abs, err := filepath.Abs(p.Path)
	if err != nil {
		return ManifestEntry{}, n, fmt.Errorf("absolute path of %s: %w", p.Path, err)
	}
	return ManifestEntry{
		Name: p.Name, Source: abs, Size: before.Size(), MtimeNS: mtimeNS(before),
		Upto: upto.String(), Prefix: plen, SHA256: hex.EncodeToString(h.Sum(nil)),
		Extracted: time.Now().UTC().Format(time.RFC3339),
	}, n, nil
}

// ctxReader stops a long copy when the context is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

type nopProgress struct{}

func (nopProgress) Begin(int, int64)          {}
func (nopProgress) Advance(int64)             {}
func (nopProgress) Done(string, int64, error) {}
func (nopProgress) End()                      {}
