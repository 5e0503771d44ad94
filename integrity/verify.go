package integrity

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tbhost/tbhost/internal/tablewalk"
	"golang.org/x/sync/errgroup"
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
	Algo         Algo         `json:"algo,omitempty"`
	ChecksumList string       `json:"checksum_list,omitempty"`
	SizeCheck    bool         `json:"size_check"`
	TrailerCheck bool         `json:"trailer_check"`
	Files        []FileResult `json:"files"`
	OK           int          `json:"ok"`
	Mismatches   int          `json:"mismatches"`
	Unreadable   int          `json:"unreadable"`
	Unlisted     int          `json:"unlisted"`
	// UnlistedTables are the unlisted files with a table's name (.rtbw,
	// .rtbz): tables the run could not verify, a problem (exit 1). Other
	// unlisted files (a README, the list itself) are only reported.
	UnlistedTables int      `json:"unlisted_tables"`
	Missing        []string `json:"missing_on_disk"` // listed, not found in the directories
	Complete       bool     `json:"complete_required"`
	Resumed        int      `json:"resumed_from_state"`
	BytesHashed    int64    `json:"bytes_hashed"`
	Seconds        float64  `json:"seconds"`
	Interrupted    bool     `json:"interrupted,omitempty"`
	StateFile      string   `json:"state_file,omitempty"`
	// NothingChecked: the lists name files but not one file in the
	// directories was checked against them (a problem: exit 1).
	NothingChecked bool `json:"nothing_checked"`
	ProblemsFound  bool `json:"problems_found"`
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

// MaxJobs bounds VerifyOptions.Jobs: each job holds a 1 MiB read buffer,
// and more parallel readers than this only make a RAID array seek.
const MaxJobs = 64

// ErrTooManyJobs is returned for Jobs above MaxJobs.
var ErrTooManyJobs = fmt.Errorf("more than %d parallel jobs", MaxJobs)

// ErrNoTables is returned when the directories hold no table file at all
// (no .rtbw or .rtbz file and no file the lists name): nothing to work on,
// as prefix's commands say for the same directory (exit 3 in the CLI).
var ErrNoTables = errors.New("no table file")

// ErrVerifyBusy is returned when another verify-tables holds the lock of
// the same --state.
var ErrVerifyBusy = errors.New("another tbhost integrity verify-tables is running on this state file")

// Verify checks the table files in opts.Dirs. Mismatches are reported, not
// returned as errors; an error means Verify could not do its job. When ctx
// is cancelled it saves its state and returns the partial report with
// Interrupted set, together with ctx's error.
//
// The steps: find the files (internal/tablewalk, the walker prefix uses
// too), load the resume state, run the cheap checks and pick the files to
// hash, hash them in parallel, keep or drop the state, then give each file
// its verdict and the report its totals.
func Verify(ctx context.Context, opts VerifyOptions) (VerifyReport, error) {
	if err := opts.normalize(); err != nil {
		return VerifyReport{}, err
	}
	v := &verifier{opts: opts, start: opts.Clock.Now(), byContent: contentIndex(opts)}
	v.rep = VerifyReport{SizeCheck: opts.Sizes != nil, TrailerCheck: opts.Trailers != nil, Complete: opts.Complete, StateFile: opts.StatePath, Missing: []string{}}
	if opts.Checksums != nil {
		v.rep.Algo, v.rep.ChecksumList = opts.Checksums.Algo, opts.Checksums.Source
	}
	files, err := findFiles(opts.Dirs, opts.StatePath)
	if err != nil {
		return v.rep, err
	}
	v.files = dropStrayLinks(files, opts)
	if !anyTable(v.files, opts) {
		return v.rep, fmt.Errorf("%w under %s (no .rtbw or .rtbz file, and no file the lists name): wrong directory, or the array is not mounted?", ErrNoTables, strings.Join(opts.Dirs, ", "))
	}
	if opts.Checksums != nil { // only then is there a state to share
		unlock, err := lockVerifyState(opts.StatePath)
		if err != nil {
			return v.rep, err
		}
		defer unlock()
		removeStateTemps(opts.StatePath)
	}
	if err := v.loadState(); err != nil {
		return v.rep, err
	}
	v.planChecks()
	v.hashAll(ctx)
	interrupted := ctx.Err() != nil
	v.finishState(interrupted)
	v.tally(interrupted)
	if interrupted {
		return v.rep, fmt.Errorf("verify interrupted after %d bytes (rerun with the same --state to continue): %w", v.hashed, ctx.Err())
	}
	return v.rep, v.saveErr
}

func (o *VerifyOptions) normalize() error {
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.Jobs < 1 {
		o.Jobs = 1
	}
	if o.Jobs > MaxJobs {
		return fmt.Errorf("%d jobs: %w (each holds a 1 MiB buffer; 2-8 saturate a RAID array)", o.Jobs, ErrTooManyJobs)
	}
	if o.Checksums == nil && o.Sizes == nil && o.Trailers == nil {
		return errors.New("nothing to check against: give a checksum list, a sizes list (bytes.tsv) or a trailer list (tbcheck.txt)")
	}
	return nil
}

// verifier is one Verify run's working state.
type verifier struct {
	opts    VerifyOptions
	start   time.Time
	rep     VerifyReport
	files   []tablewalk.File
	results []FileResult
	toHash  []int // indexes into files, largest first
	st      verifyState
	// byContent names the table a published digest or trailer belongs to.
	byContent contentByValue

	mu       sync.Mutex // guards results, st, hashed, lastSave, saveErr while hashing
	hashed   int64
	lastSave time.Time
	saveErr  error
}

// loadState reads the resume state of an interrupted run, if any.
func (v *verifier) loadState() error {
	v.st = verifyState{Version: 1, Files: map[string]verifyStateEntry{}}
	if v.opts.StatePath == "" || v.opts.Checksums == nil {
		return nil
	}
	var old verifyState
	found, err := readJSON(v.opts.StatePath, &old)
	if err != nil {
		return err
	}
	if found && old.Algo == v.opts.Checksums.Algo && old.Files != nil {
		v.st.Files = old.Files
	}
	v.st.Algo, v.st.List = v.opts.Checksums.Algo, v.opts.Checksums.Source
	return nil
}

// planChecks runs the cheap checks on every file and picks the files to
// hash (listed, readable, not already hashed in the interrupted run).
func (v *verifier) planChecks() {
	v.results = make([]FileResult, len(v.files))
	var total int64
	for i, f := range v.files {
		r := &v.results[i]
		*r = FileResult{Name: f.Name, Path: f.Path, Size: f.Size}
		if f.Err != nil { // a table there by name only (a dangling link)
			r.Verdict = VerdictUnreadable
			r.Problems = append(r.Problems, f.Err.Error())
			continue
		}
		cheapChecks(r, v.opts, v.byContent)
		if v.opts.Checksums == nil || r.Verdict == VerdictUnreadable {
			continue
		}
		want, listed := v.opts.Checksums.Digests[r.Name]
		if !listed {
			continue
		}
		r.Expected = want
		if e, ok := v.st.Files[f.Path]; ok && e.Size == f.Size && e.MtimeNs == f.ModTime.UnixNano() && e.Digest != "" {
			r.Actual, r.Resumed = e.Digest, true
			v.rep.Resumed++
			continue
		}
		v.toHash = append(v.toHash, i)
		total += f.Size
	}
	// Hash the largest files first so the workers finish together.
	sort.SliceStable(v.toHash, func(a, b int) bool { return v.files[v.toHash[a]].Size > v.files[v.toHash[b]].Size })
	if v.opts.Total != nil {
		v.opts.Total(total)
	}
}

// hashAll hashes the picked files, opts.Jobs at a time, until done or ctx
// is cancelled. A file that cannot be read is a finding, not an error.
func (v *verifier) hashAll(ctx context.Context) {
	if len(v.toHash) == 0 {
		return
	}
	throttle := NewThrottle(v.opts.Rate, v.opts.Clock)
	bufs := sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}
	var g errgroup.Group
	g.SetLimit(v.opts.Jobs)
	for _, i := range v.toHash {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			buf := bufs.Get().(*[]byte)
			defer bufs.Put(buf)
			f := v.files[i]
			sum, n, err := hashFile(ctx, f.Path, v.opts.Checksums.Algo, *buf, throttle, v.opts.Progress)
			v.mu.Lock()
			defer v.mu.Unlock()
			v.hashed += n
			r := &v.results[i]
			switch {
			case ctx.Err() != nil:
				// interrupted: leave it unhashed, the next run does it
			case err != nil:
				r.Verdict = VerdictUnreadable
				r.Problems = append(r.Problems, err.Error())
			default:
				r.Actual = sum
				v.st.Files[f.Path] = verifyStateEntry{Size: f.Size, MtimeNs: f.ModTime.UnixNano(), Digest: sum}
				v.save(false)
			}
			return nil
		})
	}
	g.Wait()
	v.rep.BytesHashed = v.hashed
}

// save writes the resume state at most once a second (always if force).
// The caller holds v.mu or is the only goroutine left.
func (v *verifier) save(force bool) {
	if v.opts.StatePath == "" || v.opts.Checksums == nil {
		return
	}
	now := v.opts.Clock.Now()
	if !force && now.Sub(v.lastSave) < time.Second {
		return
	}
	v.lastSave = now
	v.st.Updated = now
	if err := writeJSONAtomic(v.opts.StatePath, v.st); err != nil && v.saveErr == nil {
		v.saveErr = err
	}
}

// finishState saves the state of an interrupted run, or removes it after
// a finished one: the state only bridges an interruption, it is not a
// cache that would hide later corruption.
func (v *verifier) finishState(interrupted bool) {
	if interrupted {
		v.rep.Interrupted = true
		v.save(true)
		return
	}
	if v.opts.StatePath != "" && v.opts.Checksums != nil {
		if err := os.Remove(v.opts.StatePath); err != nil && !errors.Is(err, os.ErrNotExist) {
			v.saveErr = fmt.Errorf("state %s: %w", v.opts.StatePath, err)
		}
	}
}

// tally gives every file its verdict and the report its totals.
func (v *verifier) tally(interrupted bool) {
	opts, rep := v.opts, &v.rep
	byContent := v.byContent
	onDisk := map[string]bool{}
	for i := range v.results {
		r := &v.results[i]
		onDisk[r.Name] = true
		if r.Expected != "" && r.Actual != "" && r.Actual != r.Expected {
			r.Problems = append(r.Problems, fmt.Sprintf("%s differs: published %s, file %s", opts.Checksums.Algo, r.Expected, r.Actual))
			if other := byContent.digest[r.Actual]; other != "" {
				r.Problems = append(r.Problems, fmt.Sprintf("the file holds %s's bytes (its %s is the one published for %s)", other, opts.Checksums.Algo, other))
			}
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
			if tablewalk.IsTableName(r.Name) {
				rep.UnlistedTables++
			}
		case VerdictUnreadable:
			rep.Unreadable++
		}
	}
	listed := listedNames(opts)
	for _, n := range listed {
		if !onDisk[n] {
			rep.Missing = append(rep.Missing, n)
		}
	}
	rep.Files = v.results
	rep.Seconds = opts.Clock.Now().Sub(v.start).Seconds()
	// A run that checked nothing against a list that names files is a
	// failure: a cron check must not pass while checking nothing (a wrong
	// directory, an unmounted array, a symlink the walker did not follow).
	rep.NothingChecked = !interrupted && len(listed) > 0 && rep.OK+rep.Mismatches+rep.Unreadable == 0
	// An unlisted table is a problem too: the check could not verify it
	// (a list that names 1 of 30 tables must not pass as a clean run).
	rep.ProblemsFound = rep.Mismatches > 0 || rep.Unreadable > 0 || rep.UnlistedTables > 0 ||
		(opts.Complete && len(rep.Missing) > 0) || rep.NothingChecked
}

// contentByValue maps published values back to the file they belong to, to
// name the table whose bytes a file holds (KvKR.rtbw holding KRvK.rtbw's).
type contentByValue struct {
	digest  map[string]string
	trailer map[string]string
}

func contentIndex(opts VerifyOptions) contentByValue {
	c := contentByValue{digest: map[string]string{}, trailer: map[string]string{}}
	if opts.Checksums != nil {
		for n, d := range opts.Checksums.Digests {
			c.digest[d] = n
		}
	}
	for n, t := range opts.Trailers {
		c.trailer[t] = n
	}
	return c
}

// cheapChecks compares size and embedded trailer without hashing. A file
// whose trailer is the one published for another table (KvKR.rtbw holding
// KRvK.rtbw's bytes) is a mismatch, listed under its own name or not.
func cheapChecks(r *FileResult, opts VerifyOptions, byContent contentByValue) {
	if opts.Sizes != nil {
		if want, ok := opts.Sizes[r.Name]; ok {
			w := want
			r.SizeExpected = &w
			if want != r.Size {
				r.Problems = append(r.Problems, fmt.Sprintf("size %d bytes, published %d", r.Size, want))
			}
		}
	}
	if opts.Trailers == nil {
		return
	}
	want, listed := opts.Trailers[r.Name]
	if !listed && r.Size < TrailerSize {
		return // an unlisted small file (a README): nothing to compare
	}
	got, err := readTrailer(r.Path, r.Size)
	if err != nil {
		if listed {
			r.Verdict = VerdictUnreadable
			r.Problems = append(r.Problems, err.Error())
		}
		return
	}
	if listed {
		r.TrailerExpected, r.TrailerActual = want, got
		if got != want {
			r.Problems = append(r.Problems, fmt.Sprintf("embedded checksum (last %d bytes) %s, published %s", TrailerSize, got, want))
		}
	}
	if other := byContent.trailer[got]; other != "" && other != r.Name && !(listed && got == want) {
		r.TrailerActual = got
		r.Problems = append(r.Problems, fmt.Sprintf("the file holds %s's bytes: its embedded checksum %s is the one published for %s (renamed or copied over?)", other, got, other))
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

// findFiles walks the table directories with the walker prefix uses too
// (symlinked roots, files and subdirectories followed; loops refused;
// dangling links returned with Err set), skipping dot files and
// directories and the state file.
func findFiles(dirs []string, statePath string) ([]tablewalk.File, error) {
	files, err := tablewalk.Walk(dirs, tablewalk.Options{Keep: func(name string, dir bool) bool {
		return !strings.HasPrefix(name, ".")
	}})
	if err != nil {
		return nil, err
	}
	if statePath == "" {
		return files, nil
	}
	skip, _ := filepath.Abs(statePath)
	out := files[:0]
	for _, f := range files {
		if abs, _ := filepath.Abs(f.Path); abs != skip {
			out = append(out, f)
		}
	}
	return out, nil
}

// dropStrayLinks leaves out the symlinks the walker could not follow
// whose name is neither a table's nor listed (notes.txt pointing nowhere):
// they cannot be a table this check is about. A dangling link with a
// table's or a listed name stays, to be reported unreadable.
func dropStrayLinks(files []tablewalk.File, opts VerifyOptions) []tablewalk.File {
	out := files[:0]
	for _, f := range files {
		if f.Err == nil || f.MaybeDir || isTable(f.Name, opts) {
			out = append(out, f)
		}
	}
	return out
}

// anyTable reports whether files hold a table: a file with a table's name
// or one the lists name.
func anyTable(files []tablewalk.File, opts VerifyOptions) bool {
	for _, f := range files {
		if isTable(f.Name, opts) || f.MaybeDir { // a lost directory of tables is reported, not "no table"
			return true
		}
	}
	return false
}

func isTable(name string, opts VerifyOptions) bool {
	return tablewalk.IsTableName(name) || listedAnywhere(name, opts)
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
