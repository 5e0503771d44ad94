package integrity

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// VerifyOptions says what Verify checks and how.
type VerifyOptions struct {
	Dirs []string // table directories, walked recursively (dot files skipped)
	// Checksums is the published digest list; nil checks only sizes and trailers.
	Checksums *ChecksumList
	Sizes     map[string]int64  // bytes.tsv; nil: no size check
	Trailers  map[string]string // tbcheck.txt; nil: no trailer check
	Jobs      int               // files hashed in parallel (default 1)
	Rate      int64             // total read rate in bytes/s, 0 unthrottled
	StatePath string            // resume state; "" none
	Complete  bool              // listed files missing on disk are an error
	Clock     Clock
	// Progress, if set, is called (from several goroutines) with every
	// batch of bytes hashed.
	Progress func(n int64)
	// Total, if set, is called once before hashing with the bytes to hash.
	Total func(n int64)
}

// Check verdicts.
const (
	VerdictOK         = "ok"
	VerdictMismatch   = "mismatch"
	VerdictUnlisted   = "unlisted"
	VerdictUnreadable = "unreadable"
)

// FileResult is what Verify found about one file.
type FileResult struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	Verdict string `json:"verdict"`
	// Problems says what failed, one line each (size, trailer, digest, read error).
	Problems []string `json:"problems,omitempty"`

	SizeExpected    *int64 `json:"size_expected,omitempty"`
	TrailerExpected string `json:"trailer_expected,omitempty"`
	TrailerActual   string `json:"trailer_actual,omitempty"`
	Expected        string `json:"expected,omitempty"` // published digest
	Actual          string `json:"actual,omitempty"`   // digest of the file
	Resumed         bool   `json:"resumed,omitempty"`  // digest taken from the state file
}

// VerifyReport is the outcome of Verify.
type VerifyReport struct {
	Algo          Algo         `json:"algo,omitempty"`
	ChecksumList  string       `json:"checksum_list,omitempty"`
	SizeCheck     bool         `json:"size_check"`
	TrailerCheck  bool         `json:"trailer_check"`
	Files         []FileResult `json:"files"`
	OK            int          `json:"ok"`
	Mismatches    int          `json:"mismatches"`
	Unreadable    int          `json:"unreadable"`
	Unlisted      int          `json:"unlisted"`
	Missing       []string     `json:"missing_on_disk"` // listed, not found in the directories
	Complete      bool         `json:"complete_required"`
	Resumed       int          `json:"resumed_from_state"`
	BytesHashed   int64        `json:"bytes_hashed"`
	Seconds       float64      `json:"seconds"`
	Interrupted   bool         `json:"interrupted,omitempty"`
	StateFile     string       `json:"state_file,omitempty"`
	ProblemsFound bool         `json:"problems_found"`
}

// verifyState is the resume file: digests of files already hashed in an
// unfinished run, keyed by path, valid while size and mtime are unchanged.
type verifyState struct {
	Version int                         `json:"version"`
	Algo    Algo                        `json:"algo"`
	List    string                      `json:"list"`
	Files   map[string]verifyStateEntry `json:"files"`
	Updated time.Time                   `json:"updated"`
}

type verifyStateEntry struct {
	Size    int64  `json:"size"`
	MtimeNs int64  `json:"mtime_ns"`
	Digest  string `json:"digest"`
}

// Verify checks the table files in opts.Dirs. Mismatches are reported, not
// returned as errors; an error means Verify could not do its job. When ctx
// is cancelled it saves its state and returns the partial report with
// Interrupted set, together with ctx's error.
func Verify(ctx context.Context, opts VerifyOptions) (VerifyReport, error) {
	if opts.Clock == nil {
		opts.Clock = RealClock{}
	}
	if opts.Jobs < 1 {
		opts.Jobs = 1
	}
	start := opts.Clock.Now()
	rep := VerifyReport{SizeCheck: opts.Sizes != nil, TrailerCheck: opts.Trailers != nil, Complete: opts.Complete, StateFile: opts.StatePath, Missing: []string{}}
	if opts.Checksums != nil {
		rep.Algo, rep.ChecksumList = opts.Checksums.Algo, opts.Checksums.Source
	}
	if opts.Checksums == nil && opts.Sizes == nil && opts.Trailers == nil {
		return rep, errors.New("nothing to check against: give a checksum list, a sizes list (bytes.tsv) or a trailer list (tbcheck.txt)")
	}
	files, err := findFiles(opts.Dirs, opts.StatePath)
	if err != nil {
		return rep, err
	}
	st := verifyState{Version: 1, Files: map[string]verifyStateEntry{}}
	if opts.StatePath != "" && opts.Checksums != nil {
		var old verifyState
		found, err := readJSON(opts.StatePath, &old)
		if err != nil {
			return rep, err
		}
		if found && old.Algo == opts.Checksums.Algo && old.Files != nil {
			st.Files = old.Files
		}
		st.Algo, st.List = opts.Checksums.Algo, opts.Checksums.Source
	}

	results := make([]FileResult, len(files))
	var toHash []int
	var total int64
	for i, f := range files {
		r := &results[i]
		*r = FileResult{Name: filepath.Base(f.path), Path: f.path, Size: f.size}
		cheapChecks(r, opts)
		if opts.Checksums == nil || r.Verdict == VerdictUnreadable {
			continue
		}
		want, listed := opts.Checksums.Digests[r.Name]
		if !listed {
			continue
		}
		r.Expected = want
		if e, ok := st.Files[f.path]; ok && e.Size == f.size && e.MtimeNs == f.mtimeNs && e.Digest != "" {
			r.Actual, r.Resumed = e.Digest, true
			rep.Resumed++
			continue
		}
		toHash = append(toHash, i)
		total += f.size
	}
	if opts.Total != nil {
		opts.Total(total)
	}

	// Hash the largest files first so the workers finish together.
	sort.SliceStable(toHash, func(a, b int) bool { return files[toHash[a]].size > files[toHash[b]].size })
	throttle := NewThrottle(opts.Rate, opts.Clock)
	var (
		mu       sync.Mutex
		lastSave time.Time
		saveErr  error
		hashed   int64
	)
	save := func(force bool) {
		if opts.StatePath == "" || opts.Checksums == nil {
			return
		}
		now := opts.Clock.Now()
		if !force && now.Sub(lastSave) < time.Second {
			return
		}
		lastSave = now
		st.Updated = now
		if err := writeJSONAtomic(opts.StatePath, st); err != nil && saveErr == nil {
			saveErr = err
		}
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < opts.Jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1<<20)
			for i := range jobs {
				f := files[i]
				sum, n, err := hashFile(ctx, f.path, opts.Checksums.Algo, buf, throttle, opts.Progress)
				mu.Lock()
				hashed += n
				r := &results[i]
				switch {
				case ctx.Err() != nil:
					// interrupted: leave it unhashed, the next run does it
				case err != nil:
					r.Verdict = VerdictUnreadable
					r.Problems = append(r.Problems, err.Error())
				default:
					r.Actual = sum
					st.Files[f.path] = verifyStateEntry{Size: f.size, MtimeNs: f.mtimeNs, Digest: sum}
					save(false)
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, i := range toHash {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	rep.BytesHashed = hashed

	interrupted := ctx.Err() != nil
	if interrupted {
		rep.Interrupted = true
		save(true)
	} else if opts.StatePath != "" && opts.Checksums != nil {
		// A finished run starts afresh next time: the state only bridges an
		// interruption, it is not a cache that would hide later corruption.
		if err := os.Remove(opts.StatePath); err != nil && !errors.Is(err, os.ErrNotExist) {
			saveErr = fmt.Errorf("state %s: %w", opts.StatePath, err)
		}
	}

	onDisk := map[string]bool{}
	for i := range results {
		r := &results[i]
		onDisk[r.Name] = true
		if r.Expected != "" && r.Actual != "" && r.Actual != r.Expected {
			r.Problems = append(r.Problems, fmt.Sprintf("%s differs: published %s, file %s", opts.Checksums.Algo, r.Expected, r.Actual))
		}
		if r.Verdict == "" {
			switch {
			case len(r.Problems) > 0:
				r.Verdict = VerdictMismatch
			case !listedAnywhere(r.Name, opts):
				r.Verdict = VerdictUnlisted
			case interrupted && r.Expected != "" && r.Actual == "":
				r.Verdict = "" // not finished
			default:
				r.Verdict = VerdictOK
			}
		}
		switch r.Verdict {
		case VerdictOK:
			rep.OK++
		case VerdictMismatch:
			rep.Mismatches++
		case VerdictUnlisted:
			rep.Unlisted++
		case VerdictUnreadable:
			rep.Unreadable++
		}
	}
	for _, n := range listedNames(opts) {
		if !onDisk[n] {
			rep.Missing = append(rep.Missing, n)
		}
	}
	rep.Files = results
	rep.Seconds = opts.Clock.Now().Sub(start).Seconds()
	rep.ProblemsFound = rep.Mismatches > 0 || rep.Unreadable > 0 || (opts.Complete && len(rep.Missing) > 0)
	if interrupted {
		return rep, fmt.Errorf("verify interrupted after %d bytes (rerun with the same --state to continue): %w", hashed, ctx.Err())
	}
	return rep, saveErr
}

// cheapChecks compares size and embedded trailer without hashing.
func cheapChecks(r *FileResult, opts VerifyOptions) {
	if opts.Sizes != nil {
		if want, ok := opts.Sizes[r.Name]; ok {
			w := want
			r.SizeExpected = &w
			if want != r.Size {
				r.Problems = append(r.Problems, fmt.Sprintf("size %d bytes, published %d", r.Size, want))
			}
		}
	}
	if opts.Trailers != nil {
		if want, ok := opts.Trailers[r.Name]; ok {
			r.TrailerExpected = want
			got, err := readTrailer(r.Path, r.Size)
			if err != nil {
				r.Verdict = VerdictUnreadable
				r.Problems = append(r.Problems, err.Error())
				return
			}
			r.TrailerActual = got
			if got != want {
				r.Problems = append(r.Problems, fmt.Sprintf("embedded checksum (last %d bytes) %s, published %s", TrailerSize, got, want))
			}
		}
	}
}

func readTrailer(path string, size int64) (string, error) {
	if size < TrailerSize {
		return "", fmt.Errorf("%s: %d bytes, too short for the %d-byte trailer", path, size, TrailerSize)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b := make([]byte, TrailerSize)
	if _, err := f.ReadAt(b, size-TrailerSize); err != nil {
		return "", fmt.Errorf("%s: read trailer: %w", path, err)
	}
	return hex.EncodeToString(b), nil
}

func listedAnywhere(name string, opts VerifyOptions) bool {
	if opts.Checksums != nil {
		_, ok := opts.Checksums.Digests[name]
		return ok
	}
	if opts.Sizes != nil {
		if _, ok := opts.Sizes[name]; ok {
			return true
		}
	}
	if opts.Trailers != nil {
		if _, ok := opts.Trailers[name]; ok {
			return true
		}
	}
	return false
}

// listedNames is the list that defines "expected on disk": the checksum
// list, else the sizes, else the trailers.
func listedNames(opts VerifyOptions) []string {
	var names []string
	switch {
	case opts.Checksums != nil:
		names = opts.Checksums.Names()
	case opts.Sizes != nil:
		for n := range opts.Sizes {
			names = append(names, n)
		}
	default:
		for n := range opts.Trailers {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

type foundFile struct {
	path    string
	size    int64
	mtimeNs int64
}

func findFiles(dirs []string, statePath string) ([]foundFile, error) {
	if len(dirs) == 0 {
		return nil, errors.New("no table directory given")
	}
	var out []foundFile
	skip := ""
	if statePath != "" {
		skip, _ = filepath.Abs(statePath)
	}
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil {
			return nil, fmt.Errorf("table directory: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("table directory %s: not a directory", d)
		}
		err = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if p != d && strings.HasPrefix(e.Name(), ".") {
				if e.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if !e.Type().IsRegular() {
				return nil
			}
			if abs, _ := filepath.Abs(p); abs == skip {
				return nil
			}
			info, err := e.Info()
			if err != nil {
				return err
			}
			out = append(out, foundFile{path: p, size: info.Size(), mtimeNs: info.ModTime().UnixNano()})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("table directory %s: %w", d, err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, nil
}

func hashFile(ctx context.Context, path string, algo Algo, buf []byte, t *Throttle, progress func(int64)) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := algo.New()
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return "", total, err
		}
		n, err := f.Read(buf)
		if n > 0 {
			if werr := t.Wait(ctx, int64(n)); werr != nil {
				return "", total, werr
			}
			h.Write(buf[:n])
			total += int64(n)
			if progress != nil {
				progress(int64(n))
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", total, fmt.Errorf("%s: read: %w", path, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), total, nil
}
