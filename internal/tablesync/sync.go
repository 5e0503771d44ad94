package tablesync

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tbhost/tbhost/integrity"
	"github.com/tbhost/tbhost/internal/atomicfile"
	"github.com/tbhost/tbhost/internal/capacity"
	"github.com/tbhost/tbhost/internal/filelock"
	"github.com/tbhost/tbhost/internal/procgroup"
	"github.com/tbhost/tbhost/internal/sysread"
	"github.com/tbhost/tbhost/prefix"
)

// Lists are the published lists a landed file is checked against; a nil
// map or list skips that check.
type Lists struct {
	Dir       string
	Sizes     map[string]int64  // bytes.tsv
	Trailers  map[string]string // tbcheck.txt
	Checksums *integrity.ChecksumList
	Warnings  []string
}

// digestLists are the digest lists looked for in a lists directory, the
// strongest first (the names syzygy-tables.info publishes them under).
var digestLists = []string{"sha256", "sha512", "sha1", "md5"}

// LoadLists reads the published lists in dir: bytes.tsv, tbcheck.txt and
// the first digest list found (sha256, sha512, sha1, md5). At least one of
// them must be there.
func LoadLists(dir string) (Lists, error) {
	l := Lists{Dir: dir}
	st, err := os.Stat(dir)
	if err != nil {
		return l, fmt.Errorf("--checksums %s: %w", dir, err)
	}
	if !st.IsDir() {
		return l, fmt.Errorf("--checksums %s: not a directory (give the directory holding bytes.tsv, tbcheck.txt and sha256)", dir)
	}
	if p := filepath.Join(dir, "bytes.tsv"); exists(p) {
		sizes, warn, err := integrity.ReadSizes(p)
		if err != nil {
			return l, fmt.Errorf("--checksums: %w", err)
		}
		l.Sizes, l.Warnings = sizes, append(l.Warnings, warn...)
	}
	if p := filepath.Join(dir, "tbcheck.txt"); exists(p) {
		tr, warn, err := integrity.ReadTrailers(p)
		if err != nil {
			return l, fmt.Errorf("--checksums: %w", err)
		}
		l.Trailers, l.Warnings = tr, append(l.Warnings, warn...)
	}
	for _, name := range digestLists {
		p := filepath.Join(dir, name)
		if !exists(p) {
			continue
		}
		algo, err := integrity.ParseAlgo(name)
		if err != nil {
			return l, err
		}
		cl, err := integrity.ReadChecksumList(p, algo)
		if err != nil {
			return l, fmt.Errorf("--checksums: %w", err)
		}
		l.Checksums, l.Warnings = &cl, append(l.Warnings, cl.Warnings...)
		break
	}
	if l.Sizes == nil && l.Trailers == nil && l.Checksums == nil {
		return l, fmt.Errorf("--checksums %s: none of bytes.tsv, tbcheck.txt, %s there (the lists syzygy-tables.info publishes)", dir, strings.Join(digestLists, ", "))
	}
	return l, nil
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// names is every table name the lists hold.
func (l Lists) names() []string {
	set := map[string]bool{}
	for n := range l.Sizes {
		set[n] = true
	}
	for n := range l.Trailers {
		set[n] = true
	}
	if l.Checksums != nil {
		for n := range l.Checksums.Digests {
			set[n] = true
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		if IsTableName(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func (l Lists) empty() bool { return l.Sizes == nil && l.Trailers == nil && l.Checksums == nil }

// Options of a sync.
type Options struct {
	From    string   // rsync source: rsync://host/module/dir, host::module/dir, host:/dir (ssh) or a local directory
	To      string   // destination directory
	Set     PieceSet // piece counts to copy
	Lists   Lists    // published lists; empty: structure checks only
	BWLimit int64    // bytes/s for rsync --bwlimit; 0 unlimited
	Rsync   string   // the rsync binary (default "rsync")
	Timeout time.Duration
	// Progress, if set, is called with the transfer's state (from the
	// transfer's and the verifier's goroutines: it must be safe for that).
	Progress func(Progress)
	// Event, if set, is called once per file verified or refused.
	Event func(FileEvent)
}

// Progress is the transfer's state as rsync reports it.
type Progress struct {
	Bytes, TotalBytes int64 // transferred in this run / to transfer
	Files, TotalFiles int   // verified in this run / to transfer
}

// FileEvent is one file verified (OK) or refused.
type FileEvent struct {
	Name, Rel string
	OK        bool
	Problems  []string
}

// Refusal is a file that failed verification: it is not in the
// destination; the copy is kept under .tbhost-sync/refused (KeptAt), or
// there is none (KeptAt empty: the file is unreadable on the source, a
// dangling symlink).
type Refusal struct {
	Name     string   `json:"name"`
	Rel      string   `json:"path"`
	Problems []string `json:"problems"`
	KeptAt   string   `json:"kept_at"`
}

// Report is the outcome of a sync.
type Report struct {
	From            string    `json:"from"`
	To              string    `json:"to"`
	Set             string    `json:"set"`
	Lists           string    `json:"lists,omitempty"`
	Checks          []string  `json:"checks"` // structure, size, trailer, sha256
	Selected        int       `json:"selected"`
	OnSource        int       `json:"on_source"`
	AlreadyVerified int       `json:"already_verified"`
	Landed          int       `json:"landed"`
	Refused         []Refusal `json:"refused"`
	// Missing are files of the selected set that the source does not have
	// (names from the lists; without lists, only MissingCount is known).
	Missing      []string `json:"missing"`
	MissingCount int      `json:"missing_count"`
	// Unlisted are table files of the set's piece counts on the source that
	// the lists do not name (not copied).
	Unlisted    []string `json:"unlisted"`
	Bytes       int64    `json:"bytes_transferred"`
	Seconds     float64  `json:"seconds"`
	Complete    bool     `json:"complete"`
	Interrupted bool     `json:"interrupted,omitempty"`
	Warnings    []string `json:"warnings"`
	StateFile   string   `json:"state_file"`
}

// ProblemsFound: refused files, or files of the set still missing.
func (r Report) ProblemsFound() bool { return len(r.Refused) > 0 || r.MissingCount > 0 }

// state is what the sync verified, keyed by table name.
type state struct {
	Version int                   `json:"version"`
	Files   map[string]stateEntry `json:"files"`
}

// stateEntry is a file that passed verification. The state is outside
// input (an earlier run with other lists or none, an edit by hand): an
// entry only spares the digest, and only when its digest is the one the
// current list publishes (verifiedBefore).
type stateEntry struct {
	Rel     string `json:"path"`
	Size    int64  `json:"size"`
	MtimeNs int64  `json:"mtime_ns"`
	// Algo and Digest: the file's digest, when the run that verified it
	// had a digest list (older states hold the digest without its algo).
	Algo   string `json:"algo,omitempty"`
	Digest string `json:"digest,omitempty"`
}

type syncer struct {
	opts                    Options
	work, incoming, partial string
	refused, statePath      string
	verifier                *integrity.FileVerifier
	cheap                   *integrity.FileVerifier // size and trailer only: no digest
	rechecked               int                     // recorded files verified again from disk
	mu                      sync.Mutex
	st                      state
	rep                     Report
	byRel                   map[string]SourceFile
	handled                 map[string]bool
	bytes                   int64
	totalBytes              int64
	totalFiles, doneFiles   int
	saved                   time.Time // last state write
	dirty, saveFailed       bool
}

// Sync copies the selected tables from opts.From to opts.To, verifying
// each as it lands. The error is for a sync that could not run (rsync
// missing or failing, the destination not writable, interrupted); refused
// and missing files are in the report (ProblemsFound).
func Sync(ctx context.Context, opts Options) (Report, error) {
	start := time.Now()
	if opts.Rsync == "" {
		opts.Rsync = "rsync"
	}
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Minute
	}
	s := &syncer{opts: opts, handled: map[string]bool{}}
	s.rep = Report{From: opts.From, To: opts.To, Set: opts.Set.String(), Lists: opts.Lists.Dir,
		Refused: []Refusal{}, Missing: []string{}, Unlisted: []string{}, Warnings: append([]string{}, opts.Lists.Warnings...)}
	s.rep.Checks = []string{"structure"}
	if opts.Lists.Sizes != nil {
		s.rep.Checks = append(s.rep.Checks, "size")
	}
	if opts.Lists.Trailers != nil {
		s.rep.Checks = append(s.rep.Checks, "trailer")
	}
	if opts.Lists.Checksums != nil {
		s.rep.Checks = append(s.rep.Checks, string(opts.Lists.Checksums.Algo))
	}
	if opts.Lists.empty() {
		s.rep.Warnings = append(s.rep.Warnings, "no published lists (--checksums DIR): files are checked for a valid table structure only, and missing files are counted, not named")
	}
	unlock, err := s.prepare()
	if err != nil {
		return s.rep, err
	}
	defer unlock()
	err = s.run(ctx)
	s.mu.Lock()
	if s.dirty {
		s.save(true)
	}
	s.mu.Unlock()
	s.rep.Bytes = s.bytes
	s.rep.Seconds = time.Since(start).Seconds()
	if ctx.Err() != nil {
		s.rep.Interrupted = true
	}
	s.rep.Complete = err == nil && !s.rep.ProblemsFound() && s.rep.AlreadyVerified+s.rep.Landed == s.rep.OnSource
	return s.rep, err
}

// prepare checks the destination, makes the work directories in it, takes
// the lock and loads the state.
func (s *syncer) prepare() (func(), error) {
	to, err := filepath.Abs(s.opts.To)
	if err != nil {
		return nil, fmt.Errorf("destination %s: %w", s.opts.To, err)
	}
	if err := checkDestination(to); err != nil {
		return nil, err
	}
	s.work = filepath.Join(to, ".tbhost-sync")
	s.incoming, s.partial, s.refused = filepath.Join(s.work, "incoming"), filepath.Join(s.work, "partial"), filepath.Join(s.work, "refused")
	s.statePath = filepath.Join(s.work, "state.json")
	s.rep.StateFile = s.statePath
	for _, d := range []string{s.work, s.incoming, s.partial, s.refused} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("destination %s: %w", d, err)
		}
	}
	lockPath := filepath.Join(s.work, "lock")
	lock, err := filelock.Exclusive(lockPath, 0o644)
	switch {
	case errors.Is(err, filelock.ErrHeld):
		return nil, fmt.Errorf("another tbhost tables sync is running into %s (lock %s held)", to, lockPath)
	case err != nil:
		return nil, fmt.Errorf("lock: %w", err)
	}
	// a run killed while it saved the state left its temporary; the
	// lock's holder is the state's only writer
	atomicfile.RemoveTemps(s.statePath, atomicfile.Options{})
	os.Remove(s.statePath + ".tmp") // the one name tbhost before atomicfile used
	s.st = state{Version: 1, Files: map[string]stateEntry{}}
	b, err := sysread.StateFile(s.statePath, sysread.StateLimit)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		lock.Unlock()
		return nil, fmt.Errorf("state %s: %w", s.statePath, err)
	}
	if err == nil {
		var st state
		if err := json.Unmarshal(b, &st); err != nil || st.Version != 1 || st.Files == nil {
			lock.Unlock()
			return nil, fmt.Errorf("state %s is not a tbhost tables sync state (%v): move it away to start over (verified files are then checked again)", s.statePath, err)
		}
		s.st = st
	}
	s.stopOrphans()
	s.verifier = integrity.NewFileVerifier(integrity.VerifyOptions{Sizes: s.opts.Lists.Sizes, Trailers: s.opts.Lists.Trailers, Checksums: s.opts.Lists.Checksums})
	s.cheap = integrity.NewFileVerifier(integrity.VerifyOptions{Sizes: s.opts.Lists.Sizes, Trailers: s.opts.Lists.Trailers})
	return lock.Unlock, nil
}

// checkDestination refuses a destination that is not an existing
// directory. It is never created: a tables file system that is not mounted
// would otherwise have the set (17 TiB) copied onto the root file system
// (prefix extract refuses a missing store for the same reason).
func checkDestination(to string) error {
	return sysread.ExistingDir(to, "destination", "--to", fmt.Sprintf("mount the tables file system there, or create the directory if it is meant to be a plain directory: mkdir -p %s; tables sync does not create it, so an unmounted array is not filled in on the root file system", to))
}

func (s *syncer) run(ctx context.Context) error {
	listing, dangling, err := s.list(ctx)
	if err != nil {
		return err
	}
	files, warn, err := ParseListing(listing)
	if err != nil {
		return fmt.Errorf("source %s: %w", s.opts.From, err)
	}
	s.rep.Warnings = append(s.rep.Warnings, warn...)
	toCopy := s.select_(files, resolveLinks(dangling, s.opts.From, listing))
	var transfer []SourceFile
	for _, f := range toCopy {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch done, err := s.alreadyThere(ctx, f); {
		case err != nil:
			return err
		case done:
			continue
		}
		transfer = append(transfer, f)
	}
	if s.rechecked > 0 {
		s.rep.Warnings = append(s.rep.Warnings, fmt.Sprintf("%d files the state records as verified were read and checked again from disk: their earlier verification does not cover this run's checks (no digest or another one, other sizes or trailers)", s.rechecked))
	}
	s.byRel = map[string]SourceFile{}
	for _, f := range transfer {
		s.byRel[f.Rel] = f
		s.totalBytes += f.Size
	}
	s.totalFiles = len(transfer)
	s.progress()
	if len(transfer) == 0 {
		return nil
	}
	runErr := s.transfer(ctx, transfer)
	// what rsync finished but was not handled yet (the last files, or all of
	// them when its output was lost)
	for _, f := range transfer {
		if !s.isHandled(f.Rel) {
			if st, err := os.Stat(filepath.Join(s.incoming, f.Rel)); err == nil && st.Size() == f.Size {
				if err := s.land(ctx, f); err != nil {
					return err
				}
			}
		}
	}
	if runErr != nil {
		return runErr
	}
	for _, f := range transfer {
		if !s.isHandled(f.Rel) {
			return fmt.Errorf("rsync finished but %s did not arrive in %s: run tbhost tables sync again", f.Rel, s.incoming)
		}
	}
	return nil
}

// list runs rsync --list-only on the source. A dangling symlink there does
// not stop the sync: rsync names it and ends with exit code 23, and when
// its stderr holds nothing but such names, the listing is used and the
// paths rsync printed are returned (select_ refuses them by name). Any
// other error, exit 23 included, fails the listing.
func (s *syncer) list(ctx context.Context) (listing string, dangling []string, err error) {
	args := []string{"--list-only", "-r", "--copy-links", "--no-human-readable", "--timeout=" + strconv.Itoa(int(s.opts.Timeout.Seconds())), source(s.opts.From)}
	cmd := s.command(ctx, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", nil, fmt.Errorf("rsync is not installed (Debian: apt install rsync), on this host and the old one: %w", err)
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == rsyncPartial && ctx.Err() == nil {
			if paths, ok := danglingLinks(errb.String()); ok {
				return out.String(), paths, nil
			}
		}
		return "", nil, fmt.Errorf("listing the source %s (%s %s): %w: %s", s.opts.From, s.opts.Rsync, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil, nil
}

// source is the rsync source with a trailing slash: its contents, not the
// directory itself.
func source(from string) string {
	if strings.HasSuffix(from, "/") || strings.HasSuffix(from, "::") {
		return from
	}
	return from + "/"
}

func (s *syncer) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, s.opts.Rsync, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	// its own process group (Ctrl-C reaches tbhost, which stops rsync), and
	// killed with tbhost if tbhost dies (SIGKILL): no rsync writes on alone
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// select_ picks the source files of the set, and records what is missing
// or unlisted. A table of the set that is a dangling symlink on the
// source is on the source but unreadable: refused and named, not copied,
// not missing; a dangling link with another name is a warning.
func (s *syncer) select_(files []SourceFile, broken []brokenLink) []SourceFile {
	onSource := map[string]bool{}
	var out []SourceFile
	lists := !s.opts.Lists.empty()
	for _, f := range files {
		if !s.opts.Set.Has(Pieces(f.Name)) {
			continue
		}
		if lists && !s.verifier.Listed(f.Name) {
			s.rep.Unlisted = append(s.rep.Unlisted, f.Rel)
			continue
		}
		onSource[f.Name] = true
		out = append(out, f)
	}
	s.rep.OnSource = len(out)
	for _, b := range broken {
		name := path.Base(b.Rel)
		switch {
		case strings.HasPrefix(b.Rel, ".") || strings.Contains(b.Rel, "/."):
			continue // in a dot directory, as ParseListing
		case !IsTableName(name):
			s.rep.Warnings = append(s.rep.Warnings, fmt.Sprintf("source %s: %s is a symlink with no referent (rsync: %q), not a table: skipped (if it stood for a directory of tables, its files are missing)", s.opts.From, b.Rel, b.Printed))
			continue
		case !s.opts.Set.Has(Pieces(name)):
			continue
		case lists && !s.verifier.Listed(name):
			s.rep.Unlisted = append(s.rep.Unlisted, b.Rel)
			continue
		case onSource[name]:
			s.rep.Warnings = append(s.rep.Warnings, fmt.Sprintf("source %s: %s is a symlink with no referent (rsync: %q); %s is copied from another path", s.opts.From, b.Rel, b.Printed, name))
			continue
		}
		onSource[name] = true
		s.rep.OnSource++
		s.rep.Refused = append(s.rep.Refused, Refusal{Name: name, Rel: b.Rel, Problems: []string{
			fmt.Sprintf("unreadable on the source: a symlink with no referent (rsync: symlink has no referent: %q): point it at the table or put the file there on the old host, then rerun", b.Printed)}})
	}
	if lists {
		for _, n := range s.opts.Lists.names() {
			if !s.opts.Set.Has(Pieces(n)) {
				continue
			}
			s.rep.Selected++
			if !onSource[n] {
				s.rep.Missing = append(s.rep.Missing, n)
			}
		}
		s.rep.MissingCount = len(s.rep.Missing)
		return out
	}
	for _, p := range capacity.PublishedSet() {
		if s.opts.Set.Has(p.Pieces) {
			s.rep.Selected += p.Files
		}
	}
	if s.rep.Selected > len(out) {
		s.rep.MissingCount = s.rep.Selected - len(out)
	}
	return out
}

// alreadyThere reports whether f needs no transfer: in the destination
// and verified before with this run's checks (verifiedBefore), or verified
// now from disk, or complete in incoming/ (a run stopped before verifying
// it) and now verified or refused. A file in the destination that fails
// this run's checks (one an earlier run accepted with fewer checks or other
// lists, or one put there by hand) is moved out of the destination to
// refused/ and copied again: only a copy that passes takes its place.
func (s *syncer) alreadyThere(ctx context.Context, f SourceFile) (bool, error) {
	dest := filepath.Join(s.opts.To, f.Rel)
	st, err := os.Stat(dest)
	if err == nil && st.Mode().IsRegular() {
		e, recorded := s.st.Files[f.Name]
		recorded = recorded && e.Rel == f.Rel && e.Size == st.Size() && e.MtimeNs == st.ModTime().UnixNano()
		if recorded {
			ok, err := s.verifiedBefore(ctx, dest, f, e)
			if err != nil {
				return false, err
			}
			if ok {
				s.rep.AlreadyVerified++
				return true, nil
			}
			s.rechecked++
		}
		// a recorded file is checked on its own (the source's copy may have
		// changed since it landed); a file found there, also against the
		// source's size
		r, err := s.check(ctx, dest, f, !recorded)
		if err != nil {
			return false, err
		}
		if len(r.Problems) == 0 {
			s.record(f, st, r.Actual)
			s.rep.AlreadyVerified++
			return true, nil
		}
		if err := s.setAside(f, dest, r.Problems, recorded); err != nil {
			return false, err
		}
	}
	if st, err := os.Stat(filepath.Join(s.incoming, f.Rel)); err == nil && st.Size() == f.Size {
		return true, s.land(ctx, f)
	}
	return false, nil
}

// verifiedBefore reports whether a file the state records (same path, size
// and mtime) passes this run's checks without being read: its structure
// was checked when it was recorded; its size and embedded trailer are
// compared with this run's lists (a stat and 16 bytes read); its digest is
// the state's, which must be the one this run's digest list publishes, in
// the same algorithm. A state without the digest, in another algorithm or
// with another value does not spare it: the caller verifies the file from
// disk.
func (s *syncer) verifiedBefore(ctx context.Context, dest string, f SourceFile, e stateEntry) (bool, error) {
	if cl := s.opts.Lists.Checksums; cl != nil {
		want, listed := cl.Digests[f.Name]
		if listed && (e.Digest != want || (e.Algo != "" && e.Algo != string(cl.Algo))) {
			if e.Algo == string(cl.Algo) || (e.Algo == "" && len(e.Digest) == cl.Algo.HexLen()) {
				// a digest the list disagrees with is a finding, never a pass
				s.rep.Warnings = append(s.rep.Warnings, fmt.Sprintf("state %s records %s %s for %s, %s publishes %s: checking the file again from disk",
					s.statePath, cl.Algo, e.Digest, f.Rel, cl.Source, want))
			}
			return false, nil
		}
	}
	if s.opts.Lists.Sizes == nil && s.opts.Lists.Trailers == nil {
		return true, nil
	}
	r, err := s.cheap.Check(ctx, dest, f.Name)
	if err != nil {
		return false, err
	}
	return len(r.Problems) == 0, nil
}

// setAside moves a file of the destination that fails this run's checks
// to refused/ (out of the destination, kept for a look) and forgets it in
// the state: the transfer copies it again, and the copy lands only if it
// passes (else it is refused and named like any other).
func (s *syncer) setAside(f SourceFile, dest string, problems []string, recorded bool) error {
	kept := filepath.Join(s.refused, f.Rel)
	if err := os.MkdirAll(filepath.Dir(kept), 0o755); err != nil {
		return fmt.Errorf("moving %s aside: %w", dest, err)
	}
	if err := os.Rename(dest, kept); err != nil {
		return fmt.Errorf("moving %s, which does not verify, out of the destination to %s: %w", dest, kept, err)
	}
	was := "was in the destination"
	s.mu.Lock()
	if recorded {
		was = "was verified by an earlier run (with fewer checks or other lists)"
		delete(s.st.Files, f.Name)
		s.save(true)
	}
	s.mu.Unlock()
	s.rep.Warnings = append(s.rep.Warnings, fmt.Sprintf("%s %s but does not verify now (%s): moved to %s, copying it again from the source",
		dest, was, strings.Join(problems, "; "), kept))
	return nil
}

// check verifies a file: its table structure (a header tbhost can parse),
// the published lists and, againstSource, the size the source listed.
func (s *syncer) check(ctx context.Context, path string, f SourceFile, againstSource bool) (integrity.FileResult, error) {
	r, err := s.verifier.Check(ctx, path, f.Name)
	if err != nil {
		return r, err
	}
	if r.Verdict == integrity.VerdictUnlisted && s.opts.Lists.empty() {
		r.Verdict = integrity.VerdictOK
	}
	if againstSource && r.Size != f.Size {
		r.Problems = append(r.Problems, fmt.Sprintf("%d bytes, the source listed %d", r.Size, f.Size))
	}
	if _, err := prefix.ParseFile(path); err != nil {
		r.Problems = append(r.Problems, fmt.Sprintf("not a valid table: %v", err))
	}
	return r, nil
}

// land verifies a file rsync put in incoming/ and moves it into the
// destination, or into refused/.
func (s *syncer) land(ctx context.Context, f SourceFile) error {
	s.markHandled(f.Rel)
	in := filepath.Join(s.incoming, f.Rel)
	r, err := s.check(ctx, in, f, true)
	if err != nil {
		return err
	}
	ev := FileEvent{Name: f.Name, Rel: f.Rel, OK: len(r.Problems) == 0, Problems: r.Problems}
	if ev.OK {
		dest := filepath.Join(s.opts.To, f.Rel)
		if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
			return err
		}
		// on disk before it is in place and recorded as verified: rsync
		// does not fsync, and a power loss after the rename and the state's
		// save could otherwise leave an empty or zero-filled file that the
		// state vouches for (same size and mtime)
		if err := atomicfile.SyncFile(in); err != nil {
			fix := "the disk under it failed a write: see dmesg"
			if errors.Is(err, syscall.ENOSPC) {
				fix = "the destination is full: make room on its file system, then rerun tbhost tables sync (verified files stay)"
			}
			return fmt.Errorf("writing verified %s to disk before moving it into place (%s): %w", f.Rel, fix, err)
		}
		if err := os.Rename(in, dest); err != nil {
			return fmt.Errorf("moving verified %s into place: %w", f.Rel, err)
		}
		if err := atomicfile.SyncDir(filepath.Dir(dest)); err != nil {
			return fmt.Errorf("moving verified %s into place: %w", f.Rel, err)
		}
		st, err := os.Stat(dest)
		if err != nil {
			return err
		}
		s.record(f, st, r.Actual)
		s.mu.Lock()
		s.rep.Landed++
		s.mu.Unlock()
	} else {
		kept := filepath.Join(s.refused, f.Rel)
		if err := os.MkdirAll(filepath.Dir(kept), 0o755); err != nil {
			return err
		}
		if err := os.Rename(in, kept); err != nil {
			return fmt.Errorf("moving refused %s aside: %w", f.Rel, err)
		}
		s.mu.Lock()
		s.rep.Refused = append(s.rep.Refused, Refusal{Name: f.Name, Rel: f.Rel, Problems: r.Problems, KeptAt: kept})
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.doneFiles++
	s.mu.Unlock()
	if s.opts.Event != nil {
		s.opts.Event(ev)
	}
	s.progress()
	return nil
}

// record notes a verified file in the state, written atomically.
func (s *syncer) record(f SourceFile, st os.FileInfo, digest string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := stateEntry{Rel: f.Rel, Size: st.Size(), MtimeNs: st.ModTime().UnixNano()}
	if digest != "" && s.opts.Lists.Checksums != nil {
		e.Algo, e.Digest = string(s.opts.Lists.Checksums.Algo), digest
	}
	s.st.Files[f.Name] = e
	s.save(false)
}

// save writes the state atomically, at most once a second unless force
// (3022 files would otherwise rewrite and fsync a growing file 3022 times).
// A record lost to a kill is only a file verified again by the next run.
// The caller holds s.mu.
func (s *syncer) save(force bool) {
	if !force && time.Since(s.saved) < time.Second {
		s.dirty = true
		return
	}
	s.saved, s.dirty = time.Now(), false
	b, _ := json.MarshalIndent(s.st, "", " ")
	err := atomicfile.WriteFile(s.statePath, b, atomicfile.Options{Perm: 0o644})
	if err != nil && !s.saveFailed {
		s.saveFailed = true
		s.rep.Warnings = append(s.rep.Warnings, fmt.Sprintf("state %s not written (%v): a rerun verifies the files again", s.statePath, err))
	}
}

func (s *syncer) markHandled(rel string) { s.mu.Lock(); s.handled[rel] = true; s.mu.Unlock() }
func (s *syncer) isHandled(rel string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.handled[rel]
}

func (s *syncer) progress() {
	if s.opts.Progress == nil {
		return
	}
	s.mu.Lock()
	p := Progress{Bytes: s.bytes, TotalBytes: s.totalBytes, Files: s.doneFiles, TotalFiles: s.totalFiles}
	s.mu.Unlock()
	s.opts.Progress(p)
}

// landedMark starts the line rsync prints for every file it finished.
const landedMark = "TBHOST-LANDED "

// transfer runs rsync for the files and verifies each as rsync reports it
// done.
func (s *syncer) transfer(ctx context.Context, files []SourceFile) error {
	list := filepath.Join(s.work, "files-from")
	var b strings.Builder
	for _, f := range files {
		b.WriteString(f.Rel)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(list, []byte(b.String()), 0o644); err != nil {
		return err
	}
	args := []string{"--files-from=" + list, "--copy-links", "--times", "--partial", "--partial-dir=" + s.partial,
		"--no-human-readable", "--info=progress2", "--no-inc-recursive", "--out-format=" + landedMark + "%b %n",
		"--timeout=" + strconv.Itoa(int(s.opts.Timeout.Seconds()))}
	if s.opts.BWLimit > 0 {
		kib := s.opts.BWLimit / 1024
		if kib < 1 {
			kib = 1
		}
		args = append(args, "--bwlimit="+strconv.FormatInt(kib, 10))
	}
	args = append(args, source(s.opts.From), s.incoming+"/")
	cmd := s.command(ctx, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return fmt.Errorf("rsync is not installed (Debian: apt install rsync): %w", err)
		}
		return err
	}
	// a rerun after tbhost was killed stops the rsync it left behind
	os.WriteFile(s.pidFile(), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
	defer os.Remove(s.pidFile())
	landed := make(chan SourceFile, len(files))
	exited := make(chan struct{}) // closed once rsync has exited
	verr := make(chan error, 1)
	go func() {
		var first error
		for f := range landed {
			if first != nil || s.isHandled(f.Rel) {
				continue
			}
			if err := s.waitComplete(ctx, f, exited); err != nil {
				continue // left for the pass after rsync exits
			}
			if err := s.land(ctx, f); err != nil && first == nil {
				first = err
			}
		}
		verr <- first
	}()
	s.readOutput(stdout, landed)
	close(landed)
	runErr := cmd.Wait()
	// On an error (a full disk) rsync exits without waiting for the
	// receiver it forked for a local SRC, which may still hold files in
	// incoming/ open: returning now would let the next step (a rerun, an
	// umount of the destination) meet a busy file system.
	procgroup.WaitGone(cmd.Process.Pid, 5*time.Second)
	close(exited)
	if err := <-verr; err != nil {
		return err
	}
	if runErr != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		msg := strings.TrimSpace(errb.String())
		if strings.Contains(msg, "No space left on device") { // rsync runs with LC_ALL=C (command)
			return fmt.Errorf("destination %s is full: make room on its file system (df -h %s; an array too small for the set: see tbhost lvm plan), then rerun tbhost tables sync (verified files stay, partial ones resume); rsync from %s: %w: %s",
				s.opts.To, s.opts.To, s.opts.From, runErr, msg)
		}
		return fmt.Errorf("rsync from %s: %w: %s (rerun tbhost tables sync: verified files stay, partial ones resume)", s.opts.From, runErr, msg)
	}
	return nil
}

// readOutput parses rsync's stdout: progress2 lines (separated by \r) and
// the landed marks.
func (s *syncer) readOutput(r io.Reader, landed chan<- SourceFile) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		for i, c := range data {
			if c == '\n' || c == '\r' {
				return i + 1, data[:i], nil
			}
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, landedMark); ok {
			_, rel, _ := strings.Cut(rest, " ")
			if f, ok := s.byRel[rel]; ok {
				landed <- f
			}
			continue
		}
		if n, ok := parseProgress2(line); ok {
			s.mu.Lock()
			s.bytes = n
			s.mu.Unlock()
			s.progress()
		}
	}
}

func (s *syncer) pidFile() string { return filepath.Join(s.work, "rsync.pid") }

// stopOrphans kills the rsync process group a killed tbhost left behind
// (SIGKILL gives tbhost no chance to stop it; Pdeathsig does not reach the
// receiver rsync forks): it would go on writing into incoming/ beside the
// new run. Only a process whose command line names this sync's incoming/
// directory is killed (a pid may have been reused).
func (s *syncer) stopOrphans() {
	b, err := os.ReadFile(s.pidFile())
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return
	}
	if len(s.groupMembers(pid)) == 0 {
		return
	}
	syscall.Kill(-pid, syscall.SIGKILL)
	for i := 0; i < 50 && len(s.groupMembers(pid)) > 0; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	s.rep.Warnings = append(s.rep.Warnings, fmt.Sprintf("stopped rsync %d left running by an interrupted sync", pid))
}

// groupMembers lists the live processes of process group pgid whose
// command line names this sync's incoming/ directory (the rsync it
// started: the first may be gone while the receiver it forked runs on).
func (s *syncer) groupMembers(pgid int) []int {
	var pids []int
	for _, pid := range procgroup.Live(pgid) {
		if cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline")); err == nil && strings.Contains(string(cmdline), s.incoming) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// parseProgress2 reads the bytes transferred so far from a progress2 line:
// "      1234567  45%   10.23MB/s    0:00:12 (xfr#3, to-chk=10/20)".
func parseProgress2(line string) (int64, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasSuffix(f[1], "%") {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(f[0], ",", ""), 10, 64)
	return n, err == nil && n >= 0
}

// waitComplete waits (briefly) until rsync has renamed the finished file
// into incoming/: it reports a file done just before the rename (from a
// local directory, the sender reports it even before the receiver has
// written it). Once rsync has exited (exited is closed) a file not there
// never comes: it is not waited for (a full destination stops rsync with
// the marks of the files in flight already printed, and each of them
// used to hold the run for the whole wait).
func (s *syncer) waitComplete(ctx context.Context, f SourceFile, exited <-chan struct{}) error {
	p := filepath.Join(s.incoming, f.Rel)
	deadline := time.Now().Add(30 * time.Second)
	there := func() bool { st, err := os.Stat(p); return err == nil && st.Size() == f.Size }
	for {
		if there() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear", p)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			if there() {
				return nil
			}
			return fmt.Errorf("%s did not appear before rsync exited", p)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
