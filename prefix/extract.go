package prefix

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tbhost/tbhost/internal/filelock"
	"github.com/tbhost/tbhost/internal/sysread"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
)

// Batching of directory and manifest fsyncs (see Extract).
const (
	flushEntries = 256
	flushEvery   = time.Second
)

// ErrBusy: another extract is running on the store.
var ErrBusy = errors.New("store busy")

// ErrNoSpace: the store would not fit on its file system.
var ErrNoSpace = errors.New("not enough free space in the store")

// StoppedError is the error of a run that stopped part way: interrupted,
// or its prefixes could not be made durable or recorded in the store (a
// write error of the store's disk, a full file system). Extract's report
// then holds what the run did before it: Written counts only the prefixes
// recorded in the manifest, and every other table it renamed is in Failed
// (the next extract redoes it).
type StoppedError struct{ Err error }

func (e *StoppedError) Error() string { return e.Err.Error() }
func (e *StoppedError) Unwrap() error { return e.Err }

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
	// UptoByName overrides Upto per table (from a plan for a small store).
	UptoByName map[string]Upto
	Jobs       int  // parallel files, clamped to 1..MaxJobs
	Force      bool // rewrite prefixes that are already valid
	// Pause sleeps after each file: a test knob so a kill lands mid-run.
	Pause time.Duration
	// FreeSpace returns the bytes the store may use in dir; nil uses
	// Statfs (f_bavail, root's reserve not counted: see Writable).
	FreeSpace func(dir string) (int64, error)
	Progress  Progress // nil: silent
	// PhysicalFrom, when set, is the reading (ReadPhysical) that the
	// report's PhysicalBytesRead counts from: take it before the header
	// parse to include the parse's reads. Nil counts from Extract's start.
	PhysicalFrom *PhysicalReads
}

func (o ExtractOptions) uptoFor(name string) Upto {
	if u, ok := o.UptoByName[name]; ok {
		return u
	}
	return o.Upto
}

// Failure is a table that was reported and skipped.
type Failure struct {
	Name  string `json:"name"`
	Path  string `json:"path"`
	Error string `json:"error"`
}

// ExtractReport is what an extraction did.
type ExtractReport struct {
	Store     string    `json:"store"`
	Upto      string    `json:"upto"`
	Tables    int       `json:"tables"`  // tables found
	Written   int       `json:"written"` // prefixes written this run
	Skipped   int       `json:"skipped"` // already valid (resumed runs)
	Failed    []Failure `json:"failed"`
	BytesRead int64     `json:"bytes_read"` // from the tables (read() calls)
	// PhysicalBytesRead is what the disks delivered to this process during
	// the run (/proc/self/io read_bytes: readahead included, page-cache
	// hits not); -1 where the kernel does not count it.
	PhysicalBytesRead int64   `json:"physical_bytes_read"`
	BytesWritten      int64   `json:"bytes_written"` // prefix bytes into the store
	NeededBytes       int64   `json:"needed_bytes"`  // on-disk space the run needed
	FreeBytes         int64   `json:"free_bytes"`    // before the run
	Seconds           float64 `json:"seconds"`

	cut int // tables whose copy the cancelled run stopped (in Failed)
}

// finished: every table has its outcome (written, unchanged or failed)
// and none of them is a copy the cancellation cut short.
func (r *ExtractReport) finished() bool {
	return r.cut == 0 && r.Written+r.Skipped+len(r.Failed) == r.Tables
}

// Statfs returns the bytes tbhost lets a prefix store use on dir's file
// system: Writable of its statfs.
func Statfs(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return Writable(&st), nil
}

// Writable is the space a store may count on: f_bavail (the blocks an
// ordinary user can write) in units of f_frsize (f_bsize on kernels that
// leave the fragment size 0), for root too. The blocks between f_bavail
// and f_bfree are ext4's root reserve (-m): root could write them, but a
// store that only fits by eating the reserve fills the file system and
// leaves root nothing to repair it with, so neither extract nor plan
// counts them, whoever runs them (make the store's ext4 with -m 0, as
// provision-host does, instead).
func Writable(st *unix.Statfs_t) int64 {
	unit := st.Frsize
	if unit <= 0 {
		unit = st.Bsize
	}
	if unit <= 0 || st.Bavail > math.MaxInt64/uint64(unit) {
		return 0
	}
	return int64(st.Bavail) * unit
}

// StoreUsable is the space the whole store can take in dir: Writable plus
// the blocks the store's own files (prefixes, temporary files, manifest)
// already hold, since a rerun keeps or rewrites them. A missing dir is an
// error (the store's mount point must exist).
func StoreUsable(dir string) (int64, error) {
	free, err := Statfs(dir)
	if err != nil {
		return 0, err
	}
	own, err := storeFilesBytes(dir)
	if err != nil {
		return 0, err
	}
	return free + own, nil
}

// storeFilesBytes is the space allocated to the store's own files in dir:
// prefixes, their temporary files and the manifest (regular files only).
func storeFilesBytes(dir string) (int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("read store %s: %w", dir, err)
	}
	var n int64
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, PrefixSuffix) && !strings.HasSuffix(name, PrefixSuffix+".tmp") && name != ManifestName {
			continue
		}
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		}
	}
	return n, nil
}

// PrefixPath is where a table's prefix lives in a store.
func PrefixPath(store, table string) string { return filepath.Join(store, table+PrefixSuffix) }

// MaxJobs bounds the parallel files of Extract and Verify: each running
// copy holds digestChunks chunks of digestChunk bytes (3 MiB), so memory
// stays below MaxJobs*3 MiB whatever the caller asks. More jobs than this
// only queue on the disks. Jobs above it are clamped; the CLI refuses them.
const MaxJobs = 32

// clampJobs is the number of parallel files for a requested count: 1 to MaxJobs.
func clampJobs(n int) int { return min(max(n, 1), MaxJobs) }

// Extract writes each parsed table's prefix into the store. Refused tables
// (Parsed.Err) and tables that fail while copying are reported in the
// report's Failed list and skipped; the error return is for the run itself
// (store missing, not enough space, manifest unwritable, cancelled).
// opt.Jobs is clamped to 1..MaxJobs.
func Extract(ctx context.Context, parsed []Parsed, opt ExtractOptions) (*ExtractReport, error) {
	start := time.Now()
	phys := ReadPhysical()
	if opt.PhysicalFrom != nil {
		phys = *opt.PhysicalFrom
	}
	rep := &ExtractReport{Store: opt.Store, Upto: opt.Upto.String(), Tables: len(parsed), Failed: []Failure{}, PhysicalBytesRead: -1}
	defer func() { rep.PhysicalBytesRead = phys.Since() }()
	if len(opt.UptoByName) > 0 {
		rep.Upto = "per plan"
	}
	man, unlock, err := openStore(opt.Store)
	if err != nil {
		return rep, err
	}
	defer unlock()
	todo := selectWork(parsed, opt, man, rep)
	if err := checkSpace(todo, opt, man, rep); err != nil {
		return rep, err
	}
	log, err := openManifestLog(opt.Store)
	if err != nil {
		return rep, err
	}
	defer log.close()

	prog := opt.Progress
	if prog == nil {
		prog = nopProgress{}
	}
	var total int64
	for _, p := range todo {
		total += p.Layout.PrefixLen(opt.uptoFor(p.Name))
	}
	prog.Begin(len(todo), total)
	defer prog.End()

	logErr := record(extractAll(ctx, todo, opt, prog), opt.Store, log, man, rep, prog)
	rep.Seconds = time.Since(start).Seconds()
	if logErr != nil {
		return rep, &StoppedError{fmt.Errorf("store %s: %d of this run's prefixes are recorded; the rest could not be made durable and recorded (named as failed; the next extract redoes them): fix the store's file system (for an I/O error see the kernel log, dmesg, for its disk), then rerun extract and verify --full: %w",
			opt.Store, rep.Written, logErr)}
	}
	if err := ctx.Err(); err != nil && !rep.finished() { // a signal after the last table changes nothing
		return rep, &StoppedError{fmt.Errorf("extract interrupted after %d prefixes (rerun to finish; finished prefixes are kept): %w", rep.Written, err)}
	}
	// Compact the log once superseded lines make up half of it.
	if manifestLines(opt.Store) > 2*len(man) {
		if err := writeManifest(opt.Store, man); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// openStore checks the store is a directory, locks it against a second
// extract, removes the temporary files of an interrupted run and loads the
// manifest. unlock releases the lock.
func openStore(store string) (man Manifest, unlock func(), err error) {
	if err := checkStoreDir(store, "mount the NVMe array there, or create the directory"); err != nil {
		return nil, nil, err
	}
	if unlock, err = lockStore(store); err != nil {
		return nil, nil, err
	}
	if err = removeTemps(store); err == nil {
		man, err = LoadManifest(store)
	}
	if err != nil {
		unlock()
		return nil, nil, err
	}
	return man, unlock, nil
}

// checkStoreDir says why store cannot be the store directory
// (sysread.ExistingDir; missingFix is what the command's user does about a
// missing one).
func checkStoreDir(store, missingFix string) error {
	return sysread.ExistingDir(store, "store directory", "--store", missingFix)
}

// selectWork returns the tables to extract: refused tables go to the
// report's Failed list, prefixes the manifest shows valid are counted as
// skipped (unless opt.Force).
func selectWork(parsed []Parsed, opt ExtractOptions, man Manifest, rep *ExtractReport) []Parsed {
	var todo []Parsed
	for _, p := range parsed {
		if p.Err != nil {
			rep.Failed = append(rep.Failed, Failure{Name: p.Name, Path: p.Path, Error: p.Err.Error()})
			continue
		}
		if !opt.Force && upToDate(opt.Store, p, opt.uptoFor(p.Name), man) {
			rep.Skipped++
			continue
		}
		todo = append(todo, p)
	}
	return todo
}

// checkSpace refuses a run whose prefixes (in file-system blocks) and
// manifest would not fit in the store's free space.
func checkSpace(todo []Parsed, opt ExtractOptions, man Manifest, rep *ExtractReport) error {
	var need int64
	for _, p := range todo {
		need += OnDisk(p.Layout.PrefixLen(opt.uptoFor(p.Name)))
	}
	need += int64(2 * 400 * (len(man) + len(todo))) // the manifest log and its compacted copy
	rep.NeededBytes = need
	free := opt.FreeSpace
	if free == nil {
		free = Statfs
	}
	var err error
	if rep.FreeBytes, err = free(opt.Store); err != nil {
		return err
	}
	if len(todo) > 0 && need > rep.FreeBytes {
		return fmt.Errorf("%w: %s needs %d bytes for %d prefixes but has %d free; free space, use a larger store, or extract --upto sparse-index (see tbhost prefix plan)",
			ErrNoSpace, opt.Store, need, len(todo), rep.FreeBytes)
	}
	return nil
}

// extractResult is one table's outcome.
type extractResult struct {
	p     Parsed
	entry ManifestEntry
	read  int64
	err   error
}

// extractAll copies the prefixes with opt.Jobs (clamped) in parallel and
// sends each outcome on the returned channel, closed when all are done. A
// cancelled context stops the dispatch of further tables. Each copy hands
// its prefix to the finisher (finishBatches: durability, check, rename) and
// goes on with the next table, so the disk writes of one prefix overlap the
// copy of the next, as `cp` followed by `sync` would.
func extractAll(ctx context.Context, todo []Parsed, opt ExtractOptions, prog Progress) <-chan extractResult {
	results := make(chan extractResult)
	go func() {
		defer close(results)
		env := newCopyEnv(opt.Store)
		syncBatch, closeSync := storeSyncfs(opt.Store)
		defer closeSync()
		// room for a whole batch: the copies go on while one is synced
		done := make(chan *copied, batchFiles)
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			finishBatches(ctx, done, results, opt.Pause, syncBatch)
		}()
		var copies errgroup.Group
		copies.SetLimit(clampJobs(opt.Jobs))
		for _, p := range todo {
			if ctx.Err() != nil {
				break
			}
			copies.Go(func() error {
				bufs := chunkPool.Get().(*chunks)
				c, n, err := copyPrefix(ctx, p, env, opt.uptoFor(p.Name), bufs, prog)
				chunkPool.Put(bufs)
				if err != nil {
					results <- extractResult{p: p, read: n, err: err}
					return nil // a table's failure is reported, not fatal to the run
				}
				done <- c
				return nil
			})
		}
		copies.Wait()
		close(done)
		<-finished
	}()
	return results
}

// batchFiles is the most copied prefixes made durable together. Each holds
// two open files until its rename, so with the channel's room as much
// again the finisher keeps at most 4*batchFiles descriptors open.
const batchFiles = 32

// storeSyncfs returns the syncfs(2) of the store's file system that
// finishBatches makes a batch durable with, or nil (an fsync a prefix)
// where syncfs cannot be trusted to report a failed write: before Linux
// 5.8 it did not report writeback errors at all. It calls syncfs through
// a descriptor of the store opened now, before the run writes anything:
// syncfs reports the errors since its descriptor was opened, so one opened
// later could miss a prefix's failed write. Once an error was seen, every
// later batch falls back to an fsync each (failedOnce).
func storeSyncfs(store string) (syncBatch func() error, closeFn func()) {
	if !syncfsTrusted() {
		return nil, func() {}
	}
	d, err := os.Open(store)
	if err != nil {
		return nil, func() {}
	}
	return failedOnce(func() error { return unix.Syncfs(int(d.Fd())) }), func() { d.Close() }
}

// failedOnce returns sync, except that once sync failed every later call
// fails too, without calling it. syncfs reports a write error once and
// then moves its descriptor past it: an error on a prefix of the next
// batch (already written back while this batch synced) can be reported
// to this batch's call, whose fsyncs do not find it in this batch's
// files; the next batch's syncfs would then succeed and that prefix be
// renamed unsynced. After a failure, only an fsync of each prefix, which
// sees that prefix's own errors, is trusted.
func failedOnce(sync func() error) func() error {
	var failed error
	return func() error {
		if failed != nil {
			return fmt.Errorf("an earlier syncfs of this run failed: %w", failed)
		}
		failed = sync()
		return failed
	}
}

// syncfsTrusted: the running kernel's syncfs reports writeback errors.
func syncfsTrusted() bool {
	var u unix.Utsname
	return unix.Uname(&u) == nil && syncfsReportsErrors(unix.ByteSliceToString(u.Release[:]))
}

// syncfsReportsErrors: a kernel release ("6.1.0-18-amd64") of Linux 5.8 or
// later, whose syncfs returns writeback errors.
func syncfsReportsErrors(release string) bool {
	var major, minor int
	if _, err := fmt.Sscanf(release, "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 5 || major == 5 && minor >= 8
}

// finishBatches makes the copied prefixes durable and renames them into
// place, a group commit: it takes every copy that is ready (up to
// batchFiles), makes them durable with one syncfs(2) of the store's file
// system instead of an fsync each (one journal commit and disk cache flush
// for the batch: on 200 small prefixes the fsyncs were most of extract's
// time), and only then checks and renames each. While a batch is synced
// the next copies queue, so batches grow when the copies outpace the disk
// and shrink to a prefix at a time when the copies are the slow part (a
// cold read from the HDD array). A prefix is renamed only once its bytes
// are on disk, as before. Where syncBatch fails (a writeback error anywhere
// on that file system during the run, or a sandbox without syncfs) or is
// nil (storeSyncfs), each prefix of the batch is fsynced on its own, so an
// error is reported for the prefix it belongs to.
func finishBatches(ctx context.Context, done <-chan *copied, results chan<- extractResult, pause time.Duration, syncBatch func() error) {
	batch := make([]*copied, 0, batchFiles)
	for first := range done {
		batch = append(batch[:0], first)
	more:
		for len(batch) < batchFiles {
			select {
			case c, ok := <-done:
				if !ok {
					break more
				}
				batch = append(batch, c)
			default:
				break more
			}
		}
		synced := syncBatch != nil && syncBatch() == nil
		for _, c := range batch {
			e, n, err := c.finish(synced)
			results <- extractResult{p: c.p, entry: e, read: n, err: err}
			if pause > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(pause):
				}
			}
		}
	}
}

// record takes the outcomes into the report and the manifest. Durability,
// batched: each prefix is made durable before its rename (finishBatches:
// its batch's syncfs, or an fsync of its own); the renames are made
// durable by one directory fsync per batch, and only then are the batch's
// manifest lines written and fsynced. A crash can lose a batch's lines
// (those prefixes are redone), never record a prefix whose rename is not on
// disk. It returns the first manifest error (and keeps draining results);
// after one, no further line is written, and the prefixes renamed but not
// recorded are moved from Written to Failed (notRecorded).
func record(results <-chan extractResult, store string, log *manifestLog, man Manifest, rep *ExtractReport, prog Progress) (logErr error) {
	var pending []ManifestEntry
	defer func() {
		if logErr != nil {
			logErr = withDiskHint(logErr) // a full store: say so, and what to do
			notRecorded(rep, pending, logErr)
		}
	}()
	lastFlush := time.Now()
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		if err := syncDir(store); err != nil {
			return err
		}
		if err := log.appendDurably(pending); err != nil {
			return err
		}
		pending = pending[:0]
		lastFlush = time.Now()
		return nil
	}
	for r := range results {
		rep.BytesRead += r.read
		if r.err != nil {
			if errors.Is(r.err, context.Canceled) {
				rep.cut++
			}
			r.err = withDiskHint(r.err)
			rep.Failed = append(rep.Failed, Failure{Name: r.p.Name, Path: r.p.Path, Error: r.err.Error()})
			prog.Done(r.p.Name, 0, r.err)
			continue
		}
		pending = append(pending, r.entry)
		if logErr == nil && (len(pending) >= flushEntries || time.Since(lastFlush) >= flushEvery) {
			logErr = flush()
		}
		man[r.entry.Name] = r.entry
		rep.Written++
		rep.BytesWritten += r.entry.Prefix
		prog.Done(r.p.Name, r.entry.Prefix, nil)
	}
	if logErr == nil {
		logErr = flush()
	}
	return logErr
}

// notRecorded moves the prefixes the run renamed but could not record
// (pending: their directory fsync or manifest lines failed with logErr)
// from the report's Written to its Failed: they may not be in the store
// after a crash, and the next extract redoes them.
func notRecorded(rep *ExtractReport, pending []ManifestEntry, logErr error) {
	for _, e := range pending {
		rep.Written--
		rep.BytesWritten -= e.Prefix
		rep.Failed = append(rep.Failed, Failure{Name: e.Name, Path: e.Source,
			Error: fmt.Sprintf("renamed into the store but not made durable and recorded: %v", logErr)})
	}
}

// upToDate: the manifest says this table (same size and mtime) was extracted at this level,
// and a file of the recorded length is in place (renamed in only when whole).
func upToDate(store string, p Parsed, upto Upto, man Manifest) bool {
	e, ok := man[p.Name]
	if !ok || e.Upto != upto.String() || e.Prefix != p.Layout.PrefixLen(upto) || e.Size != p.Layout.Size {
		return false
	}
	// The path may differ (the set was remounted elsewhere): size and mtime
	// identify the table, as in verify.
	src, err := os.Stat(p.Path)
	if err != nil || mtimeNS(src) != e.MtimeNS || src.Size() != e.Size {
		return false
	}
	fi, err := os.Stat(PrefixPath(store, p.Name))
	return err == nil && fi.Mode().IsRegular() && fi.Size() == e.Prefix
}

// LockName is the lock file that keeps two extracts out of one store.
const LockName = ".tbhost-prefix.lock"

// lockStore takes an exclusive flock on the store's lock file, or refuses.
func lockStore(store string) (func(), error) {
	path := filepath.Join(store, LockName)
	l, err := filelock.Exclusive(path, 0o644)
	switch {
	case errors.Is(err, filelock.ErrHeld):
		return nil, fmt.Errorf("%w: another tbhost prefix extract, or a prefix verify, holds %s; wait for it to finish", ErrBusy, path)
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("lock store: %w (extract writes into the store: run it as the store's owner, or as root)", err)
	case errors.Is(err, unix.EROFS):
		return nil, fmt.Errorf("lock store: %w (the store's file system is mounted read-only: remount it read-write for extract)", err)
	case err != nil:
		return nil, fmt.Errorf("lock store: %w", err)
	}
	return l.Unlock, nil
}

// shareStore takes a shared flock on the store's lock file for a verify:
// while an extract writes the store, its temporary files and the prefixes
// it renamed but has not recorded yet are no findings (verify used to
// report them as left by an interrupted extract, exit 1), so verify is
// refused until the extract ends, and no extract starts while verify reads.
// A store without the lock file (no extract ever ran there) is not locked,
// nor one whose lock verify cannot open or flock (a read-only copy, a file
// system without locks): verify then runs as before.
func shareStore(store string) (func(), error) {
	path := filepath.Join(store, LockName)
	l, err := filelock.Shared(path)
	switch {
	case errors.Is(err, filelock.ErrHeld):
		return nil, fmt.Errorf("%w: a tbhost prefix extract is writing the store (it holds %s); verify once it has finished", ErrBusy, path)
	case err != nil:
		return func() {}, nil
	}
	return l.Unlock, nil
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

// copied is a prefix streamed into its temporary file and checked, not yet
// durable: finish makes it so and renames it into place.
type copied struct {
	env        *copyEnv
	p          Parsed
	upto       Upto
	src, out   *os.File
	tmp, final string
	before     os.FileInfo
	n          int64
	sum        []byte
}

// copyEnv is what every copy of one extract shares: the store, the working
// directory (for the manifest's absolute source paths) and the readahead of
// the tables' devices, each looked up once rather than once a table.
type copyEnv struct {
	store      string
	cwd        string
	cwdErr     error
	readaheads readaheads
}

func newCopyEnv(store string) *copyEnv {
	cwd, err := os.Getwd()
	return &copyEnv{store: store, cwd: cwd, cwdErr: err}
}

// abs is filepath.Abs(path) with the working directory read once.
func (e *copyEnv) abs(path string) (string, error) {
	if filepath.IsAbs(path) {
		return filepath.Clean(path), nil
	}
	if e.cwdErr != nil {
		return "", fmt.Errorf("absolute path of %s: %w", path, e.cwdErr)
	}
	return filepath.Join(e.cwd, path), nil
}

// copyPrefix copies one prefix into the store's temporary file, checking it
// against the header as it streams. On error nothing is left behind; it
// returns the bytes read either way.
func copyPrefix(ctx context.Context, p Parsed, env *copyEnv, upto Upto, bufs *chunks, prog Progress) (*copied, int64, error) {
	store := env.store
	l := p.Layout
	plen := l.PrefixLen(upto)
	final := PrefixPath(store, p.Name)
	if err := checkReplaceable(final); err != nil {
		return nil, 0, err
	}
	src, err := openFile(p.Path, os.O_RDONLY, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("open table: %w", err)
	}
	before, err := src.Stat()
	if err != nil {
		src.Close()
		return nil, 0, fmt.Errorf("stat table: %w", err)
	}
	if before.Size() != l.Size {
		src.Close()
		return nil, 0, fmt.Errorf("table changed since its header was read (size %d, now %d)", l.Size, before.Size())
	}
	tmp := filepath.Join(store, tmpName(p.Name))
	out, err := openFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		src.Close()
		return nil, 0, fmt.Errorf("create %s: %w", tmp, err)
	}
	fail := func(n int64, err error) (*copied, int64, error) {
		src.Close()
		out.Close()
		os.Remove(tmp)
		return nil, n, err
	}
	h := sha256.New()
	check := l.NewChecker()
	cw := &countWriter{prog: prog}
	// the prefix range, nothing past it
	rr := newRangeReader(src, plen).streamHead(env.readaheads.of(before))
	n, err := copyAndDigest(ctx, &writebackFile{f: out}, rr, io.MultiWriter(h, check, cw), bufs)
	rr.Close()
	if err != nil {
		return fail(n, fmt.Errorf("copy prefix of %s: %w", p.Path, err))
	}
	if n != plen {
		return fail(n, fmt.Errorf("%w: read %d of %d prefix bytes", ErrTruncated, n, plen))
	}
	if err := check.Close(); err != nil {
		return fail(n, err)
	}
	return &copied{env: env, p: p, upto: upto, src: src, out: out, tmp: tmp, final: final, before: before, n: n, sum: h.Sum(nil)}, n, nil
}

// finish fsyncs the temporary file (unless synced: its batch's syncfs
// made it durable, see finishBatches), checks the table did not change
// while it was copied, and renames the prefix into place. It runs apart
// from the copy, so one batch's writes to disk overlap the next copies.
func (c *copied) finish(synced bool) (ManifestEntry, int64, error) {
	defer c.src.Close()
	n := c.n
	if !synced {
		if err := c.out.Sync(); err != nil {
			c.out.Close()
			os.Remove(c.tmp)
			return ManifestEntry{}, n, fmt.Errorf("fsync %s: %w", c.tmp, err)
		}
	}
	if err := c.out.Close(); err != nil {
		os.Remove(c.tmp)
		return ManifestEntry{}, n, fmt.Errorf("close %s: %w", c.tmp, err)
	}
	after, err := c.src.Stat()
	if err != nil || after.Size() != c.before.Size() || !after.ModTime().Equal(c.before.ModTime()) {
		os.Remove(c.tmp)
		return ManifestEntry{}, n, fmt.Errorf("table changed while its prefix was copied; rerun extract")
	}
	if err := os.Rename(c.tmp, c.final); err != nil {
		os.Remove(c.tmp)
		return ManifestEntry{}, n, fmt.Errorf("rename into %s: %w", c.final, err)
	}
	abs, err := c.env.abs(c.p.Path)
	if err != nil {
		return ManifestEntry{}, n, err
	}
	return ManifestEntry{
		Name: c.p.Name, Source: abs, Size: c.before.Size(), MtimeNS: mtimeNS(c.before),
		Upto: c.upto.String(), Prefix: n, SHA256: hex.EncodeToString(c.sum),
		Extracted: time.Now().UTC().Format(time.RFC3339),
	}, n, nil
}

// checkReplaceable refuses to extract over something that is not a prefix
// file: the rename could not replace a directory, and what is in it is not
// tbhost's to delete. Anything else at the name (a file, a symlink, a FIFO)
// is replaced atomically by the rename, without being opened.
func checkReplaceable(final string) error {
	st, err := os.Lstat(final)
	if err != nil || !st.IsDir() {
		return nil // absent, or replaced by the rename; other errors surface there
	}
	return fmt.Errorf("%w: %s is a directory, not a prefix file; nothing was written: move it away (rm -r it if it is junk) and rerun extract", ErrNotRegular, final)
}

type nopProgress struct{}

func (nopProgress) Begin(int, int64)          {}
func (nopProgress) Advance(int64)             {}
func (nopProgress) Done(string, int64, error) {}
func (nopProgress) End()                      {}
