package integrity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sync/errgroup"
)

// ScrubTarget is one device the scrub reads end to end: for an LVM RAID
// image, its dm-integrity device /dev/mapper/<vg>-<lv>_rimage_N.
type ScrubTarget struct {
	Name  string   `json:"name"`  // tables_rimage_0
	Path  string   `json:"path"`  // /dev/mapper/vg--hdd-tables_rimage_0
	Disks []string `json:"disks"` // /dev/sda: the disks under it
	// Serials are the serial numbers of the whole disks under Disks, in
	// the same order ("" where unknown), read from sysfs/udev under the
	// scrub's root; nil when none is known.
	Serials []string `json:"serials,omitempty"`
}

// DiskLabel names the disks under t for messages: "/dev/sdc (serial
// ZAD0A1B3)", several joined by "+"; "" when t names none.
func (t ScrubTarget) DiskLabel() string {
	var parts []string
	for i, d := range t.Disks {
		if i < len(t.Serials) && t.Serials[i] != "" {
			d += " (serial " + t.Serials[i] + ")"
		}
		parts = append(parts, d)
	}
	return strings.Join(parts, "+")
}

// ScrubOptions says what Scrub reads and how gently.
type ScrubOptions struct {
	Targets []ScrubTarget
	// Identity ties the state file to one array (the LV's UUID); a state
	// written for another identity is refused.
	Identity  string
	StatePath string // "" keeps no state (every run starts at 0)
	Chunk     int64  // bytes per read, default 4 MiB
	BlockSize int64  // bytes re-read one by one to locate a bad block, default 4096
	Rate      int64  // total bytes/s over all images, 0 unthrottled
	Parallel  int    // images read at once, default 1
	Deadline  time.Time
	// Slice is the time box the forecast assumes for every run (--budget);
	// 0 is the time from the start to Deadline.
	Slice  time.Duration
	Direct bool // O_DIRECT (falls back to buffered reads, with a note, where refused)
	Clock  Clock
	// Stats, when set with a Rate, drives the backoff every SampleEvery.
	Stats   DiskStatsSource
	Backoff BackoffRule
	// Foreground is the kernel name (dm-27) of the array's own device in
	// /proc/diskstats: the reads that come through the LV, never the
	// scrub's (which reads the images beneath it). With it, a member disk
	// the scrub is reading is judged by the foreground's r_await instead of
	// its own (see Load). ForegroundName names it for humans (vg-hdd/tables).
	Foreground, ForegroundName string
	SampleEvery                time.Duration // default 5s
	// CheckpointEvery bounds the work lost to a kill -9; default 5s.
	CheckpointEvery time.Duration
	Events          func(ScrubEvent) // progress, backoff and findings, as they happen

	// open replaces openScrub in tests (to inject read errors).
	open func(path string, direct bool) (blockReader, bool, string, error)
}

// ScrubEvent kinds are below; an event about one image names it (Image)
// and the disks under it (Disks, and Disk for humans: "/dev/sdc (serial
// ZAD0A1B3)"), known before the first read.

// blockReader is what the read loop needs of an open device.
type blockReader interface {
	io.ReaderAt
	io.Closer
}

// ScrubEvent kinds.
const (
	EventStart    = "start"    // an image begins (Offset: where it resumes)
	EventProgress = "progress" // bytes read (Bytes)
	EventBackoff  = "backoff"  // the rate changed (Rate, Message)
	EventBad      = "bad"      // a block could not be read (Offset, Message)
	EventDone     = "done"     // an image finished
	EventNote     = "note"     // something the user should know (Message)
	EventForecast = "forecast" // before the first read: the pass's forecast (Forecast, Message)
)

// ScrubEvent is reported while Scrub runs.
type ScrubEvent struct {
	Kind    string
	Image   string
	Disks   []string // the disks under Image
	Disk    string   // Disks for messages, with serials where known
	Offset  int64
	Size    int64
	Bytes   int64
	Rate    int64
	Message string
	// Forecast is set on EventForecast.
	Forecast *ScrubForecast
}

// ScrubState is the checkpoint file.
type ScrubState struct {
	Version     int                    `json:"version"`
	Identity    string                 `json:"identity"`
	Pass        int                    `json:"pass"` // the pass in progress, from 1
	PassStarted time.Time              `json:"pass_started"`
	Passes      []PassRecord           `json:"passes_completed"`
	Images      map[string]*ImageState `json:"images"`
	Updated     time.Time              `json:"updated"`
	// ReadingImages and ReadingDisks are what a running scrub reads right
	// now: the images in its read loop and the disks under them (as lvs
	// names them, /dev/sdc), written whenever the set changes and with every
	// checkpoint. A run clears them when it ends; one killed with -9 leaves
	// them, so readers trust them only while Updated is recent and PID runs
	// (ScrubActivity does).
	ReadingImages []string `json:"reading_images,omitempty"`
	ReadingDisks  []string `json:"reading_disks,omitempty"`
	// PID is the running scrub's process id (0 when none runs).
	PID int `json:"pid,omitempty"`
	// Runs are the latest runs, newest last (at most maxRecentRuns): the
	// forecast's measured rate comes from them.
	Runs []RunRecord `json:"recent_runs,omitempty"`
}

// RunRecord is one run's reading: the achieved rate of a nightly slice.
type RunRecord struct {
	Ended   time.Time `json:"ended"`
	Seconds float64   `json:"seconds"`
	Bytes   int64     `json:"bytes"`
	RateCap int64     `json:"rate_cap"` // the --rate it ran with (0 unthrottled)
}

const maxRecentRuns = 10

// recordRun keeps run among the latest runs (runs that read nothing, or
// too briefly to measure, are not kept).
func (st *ScrubState) recordRun(run RunRecord) {
	if run.Bytes <= 0 || run.Seconds < 1 {
		return
	}
	st.Runs = append(st.Runs, run)
	if n := len(st.Runs); n > maxRecentRuns {
		st.Runs = append([]RunRecord{}, st.Runs[n-maxRecentRuns:]...)
	}
}

// setReading writes the set of images being read into the state.
func (st *ScrubState) setReading(reading map[string]ScrubTarget) {
	st.ReadingImages, st.ReadingDisks = nil, nil
	seen := map[string]bool{}
	for name, t := range reading {
		st.ReadingImages = append(st.ReadingImages, name)
		for _, d := range t.Disks {
			if !seen[d] {
				seen[d] = true
				st.ReadingDisks = append(st.ReadingDisks, d)
			}
		}
	}
	sort.Strings(st.ReadingImages)
	sort.Strings(st.ReadingDisks)
}

// ImageState is one image's position in the current pass.
type ImageState struct {
	Path      string  `json:"path"`
	Size      int64   `json:"size"`
	Offset    int64   `json:"offset"` // everything before it has been read this pass
	Done      bool    `json:"done"`
	BadBlocks []int64 `json:"bad_blocks,omitempty"` // byte offsets found this pass
}

// PassRecord is a completed full pass.
type PassRecord struct {
	Pass      int       `json:"pass"`
	Started   time.Time `json:"started"`
	Completed time.Time `json:"completed"`
	Bytes     int64     `json:"bytes"`
	BadBlocks int       `json:"bad_blocks"`
}

// ImageResult is what one run did on one image.
type ImageResult struct {
	ScrubTarget
	Size      int64   `json:"size"`
	Start     int64   `json:"start_offset"`
	End       int64   `json:"end_offset"`
	BytesRead int64   `json:"bytes_read"`
	Done      bool    `json:"done"`
	BadBlocks []int64 `json:"bad_blocks"` // byte offsets found this pass (this run and earlier ones)
	Direct    bool    `json:"direct"`
	Note      string  `json:"note,omitempty"`
}

// ScrubResult is what one run did.
type ScrubResult struct {
	Pass          int           `json:"pass"`
	PassCompleted bool          `json:"pass_completed"`
	Stopped       string        `json:"stopped,omitempty"` // "budget", "interrupted"
	Images        []ImageResult `json:"images"`
	Bytes         int64         `json:"bytes_read"`
	Seconds       float64       `json:"seconds"`
	Backoffs      int           `json:"backoffs"`
	FinalRate     int64         `json:"final_rate"`
	Passes        []PassRecord  `json:"passes_completed"`
	StateFile     string        `json:"state_file,omitempty"`
	// Forecast is what a full pass takes at this run's rate and slice,
	// computed before the first read.
	Forecast *ScrubForecast `json:"forecast,omitempty"`
}

// BadBlockCount is the number of unreadable blocks found this pass.
func (r ScrubResult) BadBlockCount() int {
	n := 0
	for _, i := range r.Images {
		n += len(i.BadBlocks)
	}
	return n
}

// ErrStateNotWritten is returned with the whole result of a scrub that ran
// but could not write its state file (its file system filled up, say): the
// result (bad blocks included) stands; the next run resumes from the last
// checkpoint that was written.
var ErrStateNotWritten = errors.New("scrub state not written")

// ErrScrubBusy is returned when another scrub holds the state file's lock.
var ErrScrubBusy = errors.New("another tbhost integrity scrub is running on this state file")

// ErrStateMismatch is returned when the state file belongs to another array.
var ErrStateMismatch = errors.New("state file belongs to another array")

const maxBadPerImage = 10000

// Scrub reads every target from its checkpoint to the end (one pass), then
// records the pass; the next run starts a new pass. It stops at the
// deadline or when ctx is cancelled, saving the checkpoint, and returns the
// result with Stopped set (no error). Unreadable blocks are findings in the
// result, not errors.
//
// The steps, in order: fill in the defaults, measure the images and load
// the checkpoint (startScrub), forecast the pass, read the images, a few at a time, while the
// backoff watches the member disks (readImages), then record what was
// read and, when every image is done, the pass (finish).
func Scrub(ctx context.Context, o ScrubOptions) (ScrubResult, error) {
	o, err := o.withDefaults()
	if err != nil {
		return ScrubResult{}, err
	}
	unlock, err := lockScrubState(o.StatePath)
	if err != nil {
		return ScrubResult{StateFile: o.StatePath}, err
	}
	defer unlock()
	removeStateTemps(o.StatePath)
	run, err := startScrub(o)
	if err != nil {
		return run.res, err
	}
	run.forecast()
	readErr := run.readImages(ctx)
	return run.finish(ctx, readErr)
}

// withDefaults checks o and fills in its defaults.
func (o ScrubOptions) withDefaults() (ScrubOptions, error) {
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.Chunk <= 0 {
		o.Chunk = DefaultScrubChunk
	}
	if o.BlockSize <= 0 {
		o.BlockSize = 4096
	}
	if o.Chunk%o.BlockSize != 0 || o.BlockSize%512 != 0 {
		return o, fmt.Errorf("chunk %d must be a multiple of the block size %d, itself a multiple of 512", o.Chunk, o.BlockSize)
	}
	if o.Parallel < 1 {
		o.Parallel = 1
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = 5 * time.Second
	}
	if o.CheckpointEvery <= 0 {
		o.CheckpointEvery = 5 * time.Second
	}
	if o.open == nil {
		o.open = openScrub
	}
	if len(o.Targets) == 0 {
		return o, errors.New("nothing to scrub: no targets")
	}
	return o, nil
}

// scrubRun is one Scrub call: the checkpoint it keeps, the throttle its
// readers share and what they have done so far.
type scrubRun struct {
	o        ScrubOptions
	start    time.Time
	throttle *Throttle
	// budgetHit: a chunk could not be read before the deadline.
	budgetHit atomic.Bool

	mu       sync.Mutex // guards everything below
	st       *ScrubState
	res      ScrubResult
	results  []ImageResult
	lastSave time.Time
	saveErr  error
	// reading are the images whose read loop runs now; touched also keeps
	// those that ended since the backoff last asked (scrubbedDisks).
	reading map[string]ScrubTarget
	touched map[string]ScrubTarget
}

// startScrub measures the images, loads (or starts) the checkpoint and
// writes it, so a new pass is on disk before the first read.
func startScrub(o ScrubOptions) (*scrubRun, error) {
	r := &scrubRun{o: o, start: o.Clock.Now(), reading: map[string]ScrubTarget{}, touched: map[string]ScrubTarget{}}
	sizes := map[string]int64{}
	for _, t := range o.Targets {
		sz, err := deviceSize(t.Path)
		if err != nil {
			return r, fmt.Errorf("%s: %w", t.Name, err)
		}
		sizes[t.Name] = sz
	}
	st, err := loadScrubState(o, sizes, r.start)
	if err != nil {
		return r, err
	}
	r.st = st
	r.res = ScrubResult{Pass: st.Pass, StateFile: o.StatePath}
	r.results = make([]ImageResult, len(o.Targets))
	r.lastSave = r.start
	r.mu.Lock()
	r.st.PID = os.Getpid()
	r.checkpointLocked(true)
	r.mu.Unlock()
	if r.saveErr != nil {
		return r, fmt.Errorf("%w (pass a writable --state FILE, or run as root for the default)", r.saveErr)
	}
	r.throttle = NewThrottle(o.Rate, o.Clock)
	return r, nil
}

// checkpointLocked writes the state file (at most every CheckpointEvery
// unless forced); r.mu must be held. The first write error is kept.
func (r *scrubRun) checkpointLocked(force bool) {
	if r.o.StatePath == "" {
		return
	}
	now := r.o.Clock.Now()
	if !force && now.Sub(r.lastSave) < r.o.CheckpointEvery {
		return
	}
	r.lastSave = now
	r.st.Updated = now
	r.st.setReading(r.reading)
	if err := writeJSONAtomic(r.o.StatePath, r.st); err != nil && r.saveErr == nil {
		r.saveErr = err
	}
}

// forecast reports what a full pass takes at this run's rate and slice.
func (r *scrubRun) forecast() {
	r.mu.Lock()
	in := forecastInput{Rate: r.o.Rate, Parallel: r.o.Parallel, Runs: r.st.Runs}
	for _, t := range r.o.Targets {
		is := r.st.Images[t.Name]
		in.Sizes = append(in.Sizes, is.Size)
		if !is.Done {
			in.Left += is.Size - is.Offset
		}
	}
	switch {
	case r.o.Slice > 0:
		in.Slice = r.o.Slice
	case !r.o.Deadline.IsZero():
		in.Slice = r.o.Deadline.Sub(r.start).Round(time.Second)
	}
	f := forecastScrub(in)
	r.res.Forecast = &f
	r.mu.Unlock()
	r.emit(ScrubEvent{Kind: EventForecast, Message: f.String(), Forecast: &f})
}

func (r *scrubRun) emit(e ScrubEvent) {
	if r.o.Events != nil {
		r.o.Events(e)
	}
}

// emitFor reports an event about target t, naming the disks under it.
func (r *scrubRun) emitFor(t ScrubTarget, e ScrubEvent) {
	e.Image, e.Disks, e.Disk = t.Name, t.Disks, t.DiskLabel()
	r.emit(e)
}

// stopped says why the run must stop ("" : it need not): ctx is the
// caller's context (cancelled: "interrupted"), or the deadline has come.
func (r *scrubRun) stopped(ctx context.Context) string {
	if ctx.Err() != nil {
		return "interrupted"
	}
	if r.budgetHit.Load() || !r.o.Deadline.IsZero() && !r.o.Clock.Now().Before(r.o.Deadline) {
		return "budget"
	}
	return ""
}

// readImages reads the images, Parallel at a time (errgroup), while the
// backoff adjusts the shared throttle. The first read error stops the
// others and is returned.
func (r *scrubRun) readImages(ctx context.Context) error {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	backoffDone := r.startBackoff(runCtx)
	g, gctx := errgroup.WithContext(runCtx)
	g.SetLimit(r.o.Parallel)
	for i := range r.o.Targets {
		if r.stopped(ctx) != "" || gctx.Err() != nil {
			break
		}
		g.Go(func() error { return r.readTarget(ctx, gctx, i) })
	}
	err := g.Wait()
	cancel()
	backoffDone()
	return err
}

// readTarget reads target i from its checkpoint on, unless it is done or
// the run is stopping, and records its result.
func (r *scrubRun) readTarget(parent, ctx context.Context, i int) error {
	t := r.o.Targets[i]
	r.mu.Lock()
	is := r.st.Images[t.Name]
	res := ImageResult{ScrubTarget: t, Size: is.Size, Start: is.Offset, End: is.Offset, Done: is.Done}
	r.mu.Unlock()
	var err error
	if !res.Done && r.stopped(parent) == "" && ctx.Err() == nil {
		r.beginReading(t)
		err = r.scrubImage(parent, ctx, t, is, &res)
		r.endReading(t)
	}
	r.mu.Lock()
	res.BadBlocks = append([]int64{}, is.BadBlocks...)
	r.results[i] = res
	r.mu.Unlock()
	return err
}

// beginReading and endReading keep the set of images being read (for the
// backoff and for the state file's reading_disks), checkpointing when it
// changes so a reader of the state file sees it at once.
func (r *scrubRun) beginReading(t ScrubTarget) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reading[t.Name] = t
	r.touched[t.Name] = t
	r.checkpointLocked(true)
}

func (r *scrubRun) endReading(t ScrubTarget) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.reading, t.Name)
	r.checkpointLocked(true)
}

// scrubbedDisks are the disks (kernel names, as /proc/diskstats has them)
// the scrub read from since the last call: the images being read now and
// those that ended in between.
func (r *scrubRun) scrubbedDisks() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]bool{}
	for _, t := range r.touched {
		for _, d := range t.Disks {
			out[filepath.Base(d)] = true
		}
	}
	r.touched = map[string]ScrubTarget{}
	for n, t := range r.reading {
		r.touched[n] = t
	}
	r.checkpointLocked(false) // a heartbeat: Updated stays recent while the throttle holds the readers back
	return out
}

// startBackoff samples the member disks every SampleEvery and adjusts the
// throttle (when there is a rate to adjust and a diskstats source); the
// returned function waits for it to end after ctx is cancelled.
func (r *scrubRun) startBackoff(ctx context.Context) (wait func()) {
	if r.o.Stats == nil || r.o.Rate <= 0 {
		return func() {}
	}
	rule := r.o.Backoff
	if rule.MaxRate <= 0 {
		rule.MaxRate = r.o.Rate
	}
	if rule.MaxAwait <= 0 {
		rule.MaxAwait = DefaultMaxAwait
	}
	var members []string
	for _, t := range r.o.Targets {
		for _, d := range t.Disks {
			members = append(members, filepath.Base(d))
		}
	}
	load := func() Load {
		return Load{Members: members, Scrubbing: r.scrubbedDisks(), Foreground: r.o.Foreground, ForegroundName: r.o.ForegroundName}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runBackoffWith(ctx, rule, r.o.Stats, r.throttle, r.o.Clock, r.o.SampleEvery, load, func(d BackoffDecision) {
			r.mu.Lock()
			r.res.Backoffs++
			r.mu.Unlock()
			r.emit(ScrubEvent{Kind: EventBackoff, Rate: d.Rate, Message: d.Reason})
		}, func(msg string) { r.emit(ScrubEvent{Kind: EventNote, Message: msg}) })
	}()
	return func() { <-done }
}

// finish completes the result: images never started this run, totals, why
// it stopped; records a completed pass (the next run starts a new one) and
// this run (for the forecast), and writes the final checkpoint.
func (r *scrubRun) finish(ctx context.Context, readErr error) (ScrubResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, t := range r.o.Targets { // images never started this run
		if r.results[i].Name == "" {
			is := r.st.Images[t.Name]
			r.results[i] = ImageResult{ScrubTarget: t, Size: is.Size, Start: is.Offset, End: is.Offset, Done: is.Done, BadBlocks: append([]int64{}, is.BadBlocks...)}
		}
	}
	res := &r.res
	res.Images = r.results
	for _, im := range r.results {
		res.Bytes += im.BytesRead
	}
	res.Stopped = r.stopped(ctx)
	res.FinalRate = r.throttle.Rate()
	r.st.PID = 0
	if readErr != nil {
		r.checkpointLocked(true)
		return *res, readErr
	}
	if r.st.allDone() {
		res.PassCompleted = true
		res.Stopped = ""
		r.st.completePass(r.o.Clock.Now())
	}
	res.Passes = append([]PassRecord{}, r.st.Passes...)
	end := r.o.Clock.Now()
	res.Seconds = end.Sub(r.start).Seconds()
	r.st.recordRun(RunRecord{Ended: end, Seconds: res.Seconds, Bytes: res.Bytes, RateCap: r.o.Rate})
	r.checkpointLocked(true)
	if r.saveErr != nil {
		return *res, fmt.Errorf("%w: %w (free space on its file system, or pass --state FILE elsewhere; the next run resumes from the last checkpoint written and reads again what this run read after it)", ErrStateNotWritten, r.saveErr)
	}
	return *res, nil
}

// allDone says every image has been read to its end this pass.
func (st *ScrubState) allDone() bool {
	for _, is := range st.Images {
		if !is.Done {
			return false
		}
	}
	return true
}

// completePass records the pass in progress as completed at now and resets
// every image, so the next run starts pass N+1 from the beginning.
func (st *ScrubState) completePass(now time.Time) {
	var total int64
	bad := 0
	for _, is := range st.Images {
		total += is.Size
		bad += len(is.BadBlocks)
	}
	st.Passes = append(st.Passes, PassRecord{Pass: st.Pass, Started: st.PassStarted, Completed: now, Bytes: total, BadBlocks: bad})
	st.Pass++
	st.PassStarted = time.Time{}
	for _, is := range st.Images {
		is.Offset, is.Done, is.BadBlocks = 0, false, nil
	}
}

// ErrStateInvalid is returned when the state file holds what no scrub
// writes (an offset outside its image or not on a block boundary, a
// missing entry): resuming from it would read the wrong places.
var ErrStateInvalid = errors.New("not a state file a scrub wrote")

// check validates a state read from a file: positions inside the images
// and on block boundaries (O_DIRECT reads there), bad blocks inside them.
func (st *ScrubState) check(blockSize int64) error {
	if len(st.Images) > maxScrubImages {
		return fmt.Errorf("%d images (at most %d)", len(st.Images), maxScrubImages)
	}
	for name, is := range st.Images {
		switch {
		case is == nil:
			return fmt.Errorf("image %q has no entry", name)
		case is.Size < 0 || is.Offset < 0 || is.Offset > is.Size:
			return fmt.Errorf("image %s: offset %d outside its %d bytes", name, is.Offset, is.Size)
		case is.Offset%blockSize != 0 && is.Offset != is.Size:
			return fmt.Errorf("image %s: offset %d is not a multiple of the block size %d", name, is.Offset, blockSize)
		case is.Size > 0 && is.Done != (is.Offset == is.Size):
			return fmt.Errorf("image %s: done %v at offset %d of %d", name, is.Done, is.Offset, is.Size)
		case len(is.BadBlocks) > maxBadPerImage:
			return fmt.Errorf("image %s: %d bad blocks (at most %d are kept)", name, len(is.BadBlocks), maxBadPerImage)
		}
		for _, b := range is.BadBlocks {
			if b < 0 || b >= is.Offset {
				return fmt.Errorf("image %s: bad block at %d, not in the %d bytes read this pass", name, b, is.Offset)
			}
		}
	}
	return nil
}

// maxScrubImages bounds the images a state file may name (a RAID LV has at
// most 64 images: LVM's limit).
const maxScrubImages = 64

func loadScrubState(o ScrubOptions, sizes map[string]int64, now time.Time) (*ScrubState, error) {
	st := &ScrubState{Version: 1, Identity: o.Identity, Pass: 1}
	if o.StatePath != "" {
		found, err := readJSON(o.StatePath, st)
		if err != nil {
			return nil, err
		}
		if found {
			if st.Identity != o.Identity {
				return nil, fmt.Errorf("%s: %w (written for %q, this is %q); pass another --state or move the file away", o.StatePath, ErrStateMismatch, st.Identity, o.Identity)
			}
			if err := st.check(o.BlockSize); err != nil {
				return nil, fmt.Errorf("%s: %w: %v; move the file away to start over", o.StatePath, ErrStateInvalid, err)
			}
			for name, is := range st.Images {
				sz, ok := sizes[name]
				if !ok {
					return nil, fmt.Errorf("%s: %w: it has image %s, which the array no longer has; move the file away to start over", o.StatePath, ErrStateMismatch, name)
				}
				if sz != is.Size {
					return nil, fmt.Errorf("%s: %w: %s was %d bytes, now %d (resized?); move the file away to start over", o.StatePath, ErrStateMismatch, name, is.Size, sz)
				}
			}
		}
	}
	if st.Images == nil {
		st.Images = map[string]*ImageState{}
	}
	if st.Pass < 1 {
		st.Pass = 1
	}
	for _, t := range o.Targets {
		if _, ok := st.Images[t.Name]; !ok {
			st.Images[t.Name] = &ImageState{Path: t.Path, Size: sizes[t.Name]}
		}
		st.Images[t.Name].Path = t.Path
	}
	if st.PassStarted.IsZero() {
		st.PassStarted = now
	}
	return st, nil
}

// runBackoff samples the member disks every interval until ctx is done and
// applies rule to the throttle, calling changed on every rate change.
func runBackoff(ctx context.Context, rule BackoffRule, stats DiskStatsSource, th *Throttle, clock Clock,
	every time.Duration, disks []string, changed func(BackoffDecision), note func(string)) {
	runBackoffWith(ctx, rule, stats, th, clock, every, func() Load { return Load{Members: disks} }, changed, note)
}

// runBackoffWith is runBackoff with the load of every interval asked from
// load (which disks the scrub read from meanwhile).
func runBackoffWith(ctx context.Context, rule BackoffRule, stats DiskStatsSource, th *Throttle, clock Clock,
	every time.Duration, load func() Load, changed func(BackoffDecision), note func(string)) {
	load() // starts the first interval
	prev, err := stats.Sample(ctx)
	if err != nil {
		note(fmt.Sprintf("backoff disabled: %v", err))
		return
	}
	for clock.Sleep(ctx, every) == nil {
		now, err := stats.Sample(ctx)
		if err != nil {
			note(fmt.Sprintf("backoff: %v", err))
			continue
		}
		d := rule.Decide(th.Rate(), load(), prev, now)
		prev = now
		if d.Changed {
			th.SetRate(d.Rate)
			changed(d)
		}
	}
}

// deviceSize works for block devices (whose stat size is 0) and files.
func deviceSize(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, fmt.Errorf("size: %w", err)
	}
	return n, nil
}

// openScrub opens path for reading with O_DIRECT when asked and possible.
func openScrub(path string, direct bool) (blockReader, bool, string, error) {
	return openScrubWith(path, direct, os.OpenFile)
}

func openScrubWith(path string, direct bool, openFile func(string, int, os.FileMode) (*os.File, error)) (blockReader, bool, string, error) {
	if direct {
		f, err := openFile(path, os.O_RDONLY|syscall.O_DIRECT, 0)
		if err == nil {
			return f, true, "", nil
		}
		if !errors.Is(err, syscall.EINVAL) {
			return nil, false, "", err
		}
		note := "O_DIRECT refused here (tmpfs or similar): buffered reads, so cached blocks may be served from memory"
		f, err = openFile(path, os.O_RDONLY, 0)
		if err != nil {
			return nil, false, "", err
		}
		return f, false, note, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false, "", err
	}
	return f, false, "", nil
}

// alignedBuffer returns n bytes aligned to 4096, as O_DIRECT wants.
func alignedBuffer(n int64) []byte {
	const align = 4096
	b := make([]byte, n+align)
	off := int(align-uintptr(unsafe.Pointer(&b[0]))%align) % align
	return b[off : off+int(n)]
}

// scrubImage reads t from its checkpoint to the end, chunk by chunk at the
// throttle's pace, locating the unreadable blocks of a chunk that fails. It
// stops when the run stops (parent cancelled, the deadline) or ctx ends.
func (r *scrubRun) scrubImage(parent, ctx context.Context, t ScrubTarget, is *ImageState, res *ImageResult) error {
	f, direct, note, err := r.o.open(t.Path, r.o.Direct)
	if err != nil {
		return fmt.Errorf("%s: open %s: %w", t.Name, t.Path, err)
	}
	defer f.Close()
	res.Direct, res.Note = direct, note
	if note != "" {
		r.emitFor(t, ScrubEvent{Kind: EventNote, Message: note})
	}
	buf := alignedBuffer(r.o.Chunk)
	r.mu.Lock()
	off, size := is.Offset, is.Size
	r.mu.Unlock()
	r.emitFor(t, ScrubEvent{Kind: EventStart, Offset: off, Size: size})
	for off < size && r.stopped(parent) == "" && ctx.Err() == nil {
		n := min(r.o.Chunk, size-off)
		if err := r.throttle.WaitUntil(ctx, n, r.o.Deadline); err != nil {
			if errors.Is(err, ErrPastDeadline) {
				r.budgetHit.Store(true) // the budget ends before this chunk may be read
			}
			break
		}
		var bad []int64
		if got, err := readFull(f, buf[:roundUp(n, r.o.BlockSize)], off); err != nil || int64(got) < n {
			var cut bool
			if bad, cut = r.locateBad(ctx, t, f, buf, off, n); cut {
				break
			}
		}
		off += n
		r.chunkRead(is, res, off, n, bad)
		r.emitFor(t, ScrubEvent{Kind: EventProgress, Offset: off, Size: size, Bytes: n})
	}
	if res.Done {
		r.emitFor(t, ScrubEvent{Kind: EventDone, Offset: off, Size: size})
	}
	return nil
}

// locateBad re-reads the failed chunk [off, off+n) block by block to find
// the unreadable blocks (dm-integrity answers a checksum failure with
// EILSEQ for that block only), reporting each. The budget and cancellation
// hold here too: cut says the search was cut short, and then the chunk is
// not marked read, so the next run starts it again.
func (r *scrubRun) locateBad(ctx context.Context, t ScrubTarget, f io.ReaderAt, buf []byte, off, n int64) (bad []int64, cut bool) {
	bs := r.o.BlockSize
	for b := off; b < off+n; b += bs {
		if ctx.Err() != nil {
			return bad, true
		}
		if !r.o.Deadline.IsZero() && !r.o.Clock.Now().Before(r.o.Deadline) {
			r.budgetHit.Store(true)
			return bad, true
		}
		if _, err := readFull(f, buf[:bs], b); err != nil {
			bad = append(bad, b)
			r.emitFor(t, ScrubEvent{Kind: EventBad, Offset: b, Message: describeReadError(err)})
		}
	}
	return bad, false
}

// chunkRead records a chunk read up to off (n bytes, bad the unreadable
// blocks in it) in the checkpoint and the image's result.
func (r *scrubRun) chunkRead(is *ImageState, res *ImageResult, off, n int64, bad []int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	is.Offset = off
	res.End = off
	res.BytesRead += n
	if len(is.BadBlocks)+len(bad) <= maxBadPerImage {
		is.BadBlocks = append(is.BadBlocks, bad...)
	}
	if off >= is.Size {
		is.Done, res.Done = true, true
	}
	r.checkpointLocked(false)
}

// describeReadError names what a failed read means on an integrity image.
func describeReadError(err error) string {
	switch {
	case errors.Is(err, syscall.EILSEQ):
		return "checksum mismatch: dm-integrity refused the block (EILSEQ)"
	case errors.Is(err, syscall.EIO):
		return "I/O error from the disk (EIO): see the kernel log and the disk's SMART data"
	}
	return err.Error()
}

func roundUp(n, to int64) int64 { return (n + to - 1) / to * to }

// readFull reads len(b) bytes at off; a short read at the end of the device
// is not an error (the last chunk is rounded up for O_DIRECT).
func readFull(f io.ReaderAt, b []byte, off int64) (int, error) {
	total := 0
	for total < len(b) {
		n, err := f.ReadAt(b[total:], off+int64(total))
		total += n
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		if n == 0 {
			return total, nil
		}
	}
	return total, nil
}

// SortedBad returns the image's bad offsets in order (for reports).
func SortedBad(b []int64) []int64 {
	out := append([]int64(nil), b...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
