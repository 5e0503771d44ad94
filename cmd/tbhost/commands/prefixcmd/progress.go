package prefixcmd

import (
	"fmt"
	"io"
	"sync"

	"github.com/schollz/progressbar/v3"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/sizes"
)

// newProgress returns a progress bar on a terminal, plain lines otherwise.
func newProgress(g *cliutil.Globals) progressSink {
	if g.Terminal() {
		return &barProgress{w: g.Stderr}
	}
	return &lineProgress{w: g.Stderr}
}

// terminalProgress returns a progress bar on a terminal and nil otherwise
// (for checks that cron runs: silent unless something is found).
func terminalProgress(g *cliutil.Globals) progressSink {
	if g.Terminal() {
		return &barProgress{w: g.Stderr}
	}
	return nil
}

type progressSink interface {
	Begin(files int, bytes int64)
	Advance(bytes int64)
	Done(name string, bytes int64, err error)
	End()
}

// barProgress draws bytes, files, rate and ETA.
type barProgress struct {
	w     io.Writer
	mu    sync.Mutex
	bar   *progressbar.ProgressBar
	files int
	done  int
	ended bool
}

func (p *barProgress) Begin(files int, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.files = files
	p.bar = progressbar.NewOptions64(bytes,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionShowBytes(true),
		progressbar.OptionUseIECUnits(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionFullWidth(),
		progressbar.OptionThrottle(100_000_000),
		progressbar.OptionSetDescription(fmt.Sprintf("files 0/%d", files)),
	)
}

func (p *barProgress) Advance(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.bar.Add64(n)
}

func (p *barProgress) Done(name string, _ int64, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if p.ended {
		return
	}
	p.bar.Describe(fmt.Sprintf("files %d/%d", p.done, p.files))
	if err != nil {
		_ = p.bar.Clear()
		fmt.Fprintf(p.w, "FAILED %s: %v\n", name, err)
	}
}

// End removes the bar from the terminal: the summary line that follows
// starts at column 0 (issue 18: "...| (5.8 MiB/s) [0s]extract into ...").
func (p *barProgress) End() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar == nil || p.ended {
		return
	}
	p.ended = true
	_ = p.bar.Finish()
	_ = p.bar.Clear()
	fmt.Fprint(p.w, "\r\033[K") // also what Clear's width missed
}

// lineProgress prints one line per finished file (logs, cron, pipes).
type lineProgress struct {
	w     io.Writer
	mu    sync.Mutex
	files int
	done  int
	total int64
	bytes int64
}

func (p *lineProgress) Begin(files int, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.files, p.total = files, bytes
	fmt.Fprintf(p.w, "extract: %d prefixes to write, %s\n", files, sizes.Format(bytes))
}

func (p *lineProgress) Advance(n int64) {}

func (p *lineProgress) Done(name string, n int64, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	p.bytes += n
	if err != nil {
		fmt.Fprintf(p.w, "extract: [%d/%d] FAILED %s: %v\n", p.done, p.files, name, err)
		return
	}
	fmt.Fprintf(p.w, "extract: [%d/%d] %s %s (%s of %s)\n", p.done, p.files, name, sizes.Format(n), sizes.Format(p.bytes), sizes.Format(p.total))
}

func (p *lineProgress) End() {}
