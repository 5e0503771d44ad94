package integrity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// ScrubTarget is one device the scrub reads end to end: for an LVM RAID
// image, its dm-integrity device /dev/mapper/<vg>-<lv>_rimage_N.
type ScrubTarget struct {
	Name  string   `json:"name"`  // tables_rimage_0
	Path  string   `json:"path"`  // /dev/mapper/vg--hdd-tables_rimage_0
	Disks []string `json:"disks"` // /dev/sda: the disks under it
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
	Direct    bool // O_DIRECT (falls back to buffered reads, with a note, where refused)
	Clock     Clock
	// Stats, when set with a Rate, drives the backoff every SampleEvery.
	Stats       DiskStatsSource
	Backoff     BackoffRule
	SampleEvery time.Duration // default 5s
	// CheckpointEvery bounds the work lost to a kill -9; default 5s.
	CheckpointEvery time.Duration
	Events          func(ScrubEvent) // progress, backoff and findings, as they happen

	// open replaces openScrub in tests (to inject read errors).
	open func(path string, direct bool) (blockReader, bool, string, error)
}

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
)

// ScrubEvent is reported while Scrub runs.
type ScrubEvent struct {
	Kind    string
	Image   string
	Offset  int64
	Size    int64
	Bytes   int64
	Rate    int64
	Message string
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
}

// BadBlockCount is the number of unreadable blocks found this pass.
func (r ScrubResult) BadBlockCount() int {
	n := 0
	for _, i := range r.Images {
		n += len(i.BadBlocks)
	}
	return n
}

// ErrStateMismatch is returned when the state file belongs to another array.
var ErrStateMismatch = errors.New("state file belongs to another array")

const maxBadPerImage = 10000

// Scrub reads every target from its checkpoint to the end (one pass), then
// records the pass; the next run starts a new pass. It stops at the
// deadline or when ctx is cancelled, saving the checkpoint, and returns the
// result with Stopped set (no error). Unreadable blocks are findings in the
// result, not errors.
func Scrub(ctx context.Context, o ScrubOptions) (ScrubResult, error) {
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.Chunk <= 0 {
		o.Chunk = 4 << 20
	}
	if o.BlockSize <= 0 {
		o.BlockSize = 4096
	}
	if o.Chunk%o.BlockSize != 0 || o.BlockSize%512 != 0 {
		return ScrubResult{}, fmt.Errorf("chunk %d must be a multiple of the block size %d, itself a multiple of 512", o.Chunk, o.BlockSize)
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
	if len(o.Targets) == 0 {
		return ScrubResult{}, errors.New("nothing to scrub: no targets")
	}
	emit := func(e ScrubEvent) {
		if o.Events != nil {
			o.Events(e)
		}
	}
	start := o.Clock.Now()

	sizes := map[string]int64{}
	for _, t := range o.Targets {
		sz, err := deviceSize(t.Path)
		if err != nil {
			return ScrubResult{}, fmt.Errorf("%s: %w", t.Name, err)
		}
		sizes[t.Name] = sz
	}
	st, err := loadScrubState(o, sizes, start)
	if err != nil {
		return ScrubResult{}, err
	}
	res := ScrubResult{Pass: st.Pass, StateFile: o.StatePath}

	var mu sync.Mutex // guards st, res and lastSave
	lastSave := start
	var saveErr error
	save := func(force bool) {
		if o.StatePath == "" {
			return
		}
		now := o.Clock.Now()
		if !force && now.Sub(lastSave) < o.CheckpointEvery {
			return
		}
		lastSave = now
		st.Updated = now
		if err := writeJSONAtomic(o.StatePath, st); err != nil && saveErr == nil {
			saveErr = err
		}
	}
	save(true) // a new pass is on disk before the first read
	if saveErr != nil {
		return res, fmt.Errorf("%w (pass a writable --state FILE, or run as root for the default)", saveErr)
	}

	throttle := NewThrottle(o.Rate, o.Clock)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var budgetHit atomic.Bool // a chunk could not be read before the deadline
	stopped := func() string {
		if ctx.Err() != nil {
			return "interrupted"
		}
		if budgetHit.Load() || !o.Deadline.IsZero() && !o.Clock.Now().Before(o.Deadline) {
			return "budget"
		}
		return ""
	}

	// Backoff: sample the member disks, adjust the throttle.
	var bgWG sync.WaitGroup
	if o.Stats != nil && o.Rate > 0 {
		rule := o.Backoff
		if rule.MaxRate <= 0 {
			rule.MaxRate = o.Rate
		}
		if rule.MaxAwait <= 0 {
			rule.MaxAwait = DefaultMaxAwait
		}
		var disks []string
		for _, t := range o.Targets {
			for _, d := range t.Disks {
				disks = append(disks, filepath.Base(d))
			}
		}
		bgWG.Add(1)
		go func() {
			defer bgWG.Done()
			runBackoff(runCtx, rule, o.Stats, throttle, o.Clock, o.SampleEvery, disks, func(d BackoffDecision) {
				mu.Lock()
				res.Backoffs++
				mu.Unlock()
				emit(ScrubEvent{Kind: EventBackoff, Rate: d.Rate, Message: d.Reason})
			}, func(msg string) { emit(ScrubEvent{Kind: EventNote, Message: msg}) })
		}()
	}

	results := make([]ImageResult, len(o.Targets))
	queue := make(chan int)
	var wg sync.WaitGroup
	var firstErr error
	for w := 0; w < o.Parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range queue {
				t := o.Targets[i]
				mu.Lock()
				is := st.Images[t.Name]
				r := ImageResult{ScrubTarget: t, Size: is.Size, Start: is.Offset, End: is.Offset, Done: is.Done}
				mu.Unlock()
				if !r.Done && stopped() == "" && runCtx.Err() == nil {
					err := scrubImage(runCtx, o, t, is, &r, throttle, &mu, save, stopped, emit, &budgetHit)
					if err != nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
						cancel()
					}
				}
				mu.Lock()
				r.BadBlocks = append([]int64{}, is.BadBlocks...)
				results[i] = r
				mu.Unlock()
			}
		}()
	}
	for i := range o.Targets {
		if stopped() != "" || runCtx.Err() != nil {
			break
		}
		queue <- i
	}
	close(queue)
	wg.Wait()
	cancel()
	bgWG.Wait()

	mu.Lock()
	defer mu.Unlock()
	for i, t := range o.Targets { // images never started this run
		if results[i].Name == "" {
			is := st.Images[t.Name]
			results[i] = ImageResult{ScrubTarget: t, Size: is.Size, Start: is.Offset, End: is.Offset, Done: is.Done, BadBlocks: append([]int64{}, is.BadBlocks...)}
		}
	}
	res.Images = results
	for _, r := range results {
		res.Bytes += r.BytesRead
	}
	res.Stopped = stopped()
	res.FinalRate = throttle.Rate()
	if firstErr != nil {
		save(true)
		return res, firstErr
	}
	all := true
	for _, is := range st.Images {
		all = all && is.Done
	}
	if all {
		res.PassCompleted = true
		res.Stopped = ""
		var total int64
		bad := 0
		for _, is := range st.Images {
			total += is.Size
			bad += len(is.BadBlocks)
		}
		st.Passes = append(st.Passes, PassRecord{Pass: st.Pass, Started: st.PassStarted, Completed: o.Clock.Now(), Bytes: total, BadBlocks: bad})
		// The next run starts a new pass from the beginning.
		st.Pass++
		st.PassStarted = time.Time{}
		for _, is := range st.Images {
			is.Offset, is.Done, is.BadBlocks = 0, false, nil
		}
	}
	res.Passes = append([]PassRecord{}, st.Passes...)
	save(true)
	res.Seconds = o.Clock.Now().Sub(start).Seconds()
	return res, saveErr
}

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
		d := rule.Next(th.Rate(), disks, prev, now)
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

func scrubImage(ctx context.Context, o ScrubOptions, t ScrubTarget, is *ImageState, r *ImageResult, th *Throttle,
	mu *sync.Mutex, save func(bool), stopped func() string, emit func(ScrubEvent), budgetHit *atomic.Bool) error {
	open := o.open
	if open == nil {
		open = openScrub
	}
	f, direct, note, err := open(t.Path, o.Direct)
	if err != nil {
		return fmt.Errorf("%s: open %s: %w", t.Name, t.Path, err)
	}
	defer f.Close()
	r.Direct, r.Note = direct, note
	if note != "" {
		emit(ScrubEvent{Kind: EventNote, Image: t.Name, Message: note})
	}
	buf := alignedBuffer(o.Chunk)
	mu.Lock()
	off, size := is.Offset, is.Size
	mu.Unlock()
	emit(ScrubEvent{Kind: EventStart, Image: t.Name, Offset: off, Size: size})
	for off < size {
		if stopped() != "" || ctx.Err() != nil {
			break
		}
		n := o.Chunk
		if size-off < n {
			n = size - off
		}
		if err := th.WaitUntil(ctx, n, o.Deadline); err != nil {
			if errors.Is(err, ErrPastDeadline) {
				budgetHit.Store(true) // the budget ends before this chunk may be read
			}
			break
		}
		got, rerr := readFull(f, buf[:roundUp(n, o.BlockSize)], off)
		var bad []int64
		if rerr != nil || int64(got) < n {
			// Find the unreadable blocks one by one (dm-integrity answers a
			// checksum failure with EILSEQ for that block only). The budget
			// and cancellation hold here too: a chunk whose location is cut
			// short is not marked read, so the next run starts it again.
			cut := false
			for b := off; b < off+n; b += o.BlockSize {
				if ctx.Err() != nil || !o.Deadline.IsZero() && !o.Clock.Now().Before(o.Deadline) {
					cut = true
					break
				}
				if _, err := readFull(f, buf[:o.BlockSize], b); err != nil {
					bad = append(bad, b)
					emit(ScrubEvent{Kind: EventBad, Image: t.Name, Offset: b, Message: describeReadError(err)})
				}
			}
			if cut {
				if ctx.Err() == nil {
					budgetHit.Store(true)
				}
				break
			}
		}
		off += n
		mu.Lock()
		is.Offset = off
		r.End = off
		r.BytesRead += n
		if len(is.BadBlocks)+len(bad) <= maxBadPerImage {
			is.BadBlocks = append(is.BadBlocks, bad...)
		}
		if off >= size {
			is.Done, r.Done = true, true
		}
		save(false)
		mu.Unlock()
		emit(ScrubEvent{Kind: EventProgress, Image: t.Name, Offset: off, Size: size, Bytes: n})
	}
	if r.Done {
		emit(ScrubEvent{Kind: EventDone, Image: t.Name, Offset: off, Size: size})
	}
	return nil
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
