package integritycmd

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/tbhost/tbhost/integrity"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/sizes"
	"github.com/tbhost/tbhost/lvm"
	"github.com/urfave/cli/v2"
)

func scrubCommand() *cli.Command {
	return &cli.Command{
		Name:      "scrub",
		Usage:     "read every block of every RAID image through dm-integrity: throttled, time-boxed, resumable",
		ArgsUsage: "VG/LV",
		Description: `Reads each image's dm-integrity device (/dev/mapper/<vg>-<lv>_rimage_N) end to end with
   O_DIRECT in large sequential chunks, so every block is verified against its checksum: cold data
   and parity included, which normal reads never touch. It only reads.

   Gentle under load: the total read rate is capped by --rate, and every 5 s the member disks'
   r_await (from /proc/diskstats) is checked: above --max-await the rate is halved, below half of
   it the rate grows back by --rate/8 (AIMD); each change is printed. A disk the scrub is reading
   is judged by the reads through the LV instead (its own r_await counts the scrub's reads).

   Before it starts it prints its forecast: the bytes of a full pass, the rate it assumes (the
   last runs' measured rate at this --rate, else --rate), the slice per night and the nights a
   full pass needs, with a WARNING above 14 nights.

   Time-boxed and resumable: --budget 2h or --until 06:00 stops the run, the position of every
   image is checkpointed to --state (atomically, every 5 s and at the end; a kill -9 loses at
   most 5 s), and the next run continues there. When all images are read, the pass is recorded
   with its completion time and the following run starts a new pass. A second scrub on the
   same --state while one runs is refused (exit 3; the lock is --state's FILE.lock). Nightly cron:
     0 1 * * *  tbhost integrity scrub --until 06:00 vg-hdd/tables

   Findings: unreadable blocks per image naming the disk and its serial, the integrity counters before and after,
   new kernel log lines. Each bad data block is then read through the LV so the RAID layer
   rebuilds it from the other disks and rewrites it (raid1, raid5); the image is re-read to
   confirm. Parity blocks need --syncaction.

   --syncaction instead runs the kernel's scrub (lvchange --syncaction check, never repair, which
   LVM refuses on integrity LVs), capped with --maxrecoveryrate, waits with progress and reports
   raid_mismatch_count and the per-image counters. It cannot resume: a check stopped waiting for
   by --budget/--until goes on in the kernel, but with --maxrecoveryrate tbhost stops the check
   (dmsetup message VG-LV 0 idle) to put the LV's rate back, and the next one starts from 0.
   For a check longer than a night, set the LV's rate once (lvchange --maxrecoveryrate) instead.
   Before capping, the LV's own rate is recorded (--state); a run killed while capped (kill -9,
   a reboot) has it put back by the next --syncaction run.

   Exit 0 clean (also when stopped by the budget), 1 mismatches found or refused, 3 could not run.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "rate", Value: "100MiB/s", Usage: "total read rate cap over all images (0: unthrottled, no backoff)"},
			&cli.DurationFlag{Name: "budget", Usage: "stop after this long, e.g. 2h (resume next run)"},
			&cli.StringFlag{Name: "until", Usage: "stop at this local time, e.g. 06:00 (the next occurrence)"},
			&cli.StringFlag{Name: "state", Usage: "checkpoint `FILE` (default /var/lib/tbhost/scrub-<vg>-<lv>.json; with --syncaction the LV's own rate while capped, default /var/lib/tbhost/syncaction-rate-<vg>-<lv>.json)"},
			&cli.IntFlag{Name: "parallel", Usage: "images read at once (default: all; each image sits on its own disk)"},
			&cli.StringFlag{Name: "chunk", Value: "4MiB", Usage: "bytes per read"},
			&cli.DurationFlag{Name: "max-await", Value: integrity.DefaultMaxAwait, Usage: "member disk r_await above which the scrub backs off"},
			&cli.BoolFlag{Name: "no-backoff", Usage: "keep --rate fixed, do not watch the member disks"},
			&cli.BoolFlag{Name: "no-direct", Usage: "buffered reads instead of O_DIRECT (not recommended: cached blocks are not re-read)"},
			&cli.BoolFlag{Name: "no-repair-reads", Usage: "do not read bad blocks through the LV (leave them for --syncaction)"},
			&cli.BoolFlag{Name: "syncaction", Usage: "run lvchange --syncaction check instead of reading the images"},
			&cli.StringFlag{Name: "maxrecoveryrate", Usage: "with --syncaction: per-device cap, e.g. 50MiB/s (default: the LV's setting)"},
			cliutil.JSONFlag(),
		},
		Action: runScrub,
	}
}

func parseVGLV(c *cli.Context) (string, string, error) {
	if c.NArg() != 1 {
		return "", "", cliutil.Usagef("scrub: give exactly one VG/LV, e.g. tbhost integrity scrub vg-hdd/tables")
	}
	arg := strings.TrimPrefix(c.Args().First(), "/dev/")
	vg, lv, ok := strings.Cut(arg, "/")
	if !ok || vg == "" || lv == "" || strings.Contains(lv, "/") {
		return "", "", cliutil.Usagef("scrub: %q is not VG/LV (e.g. vg-hdd/tables)", c.Args().First())
	}
	return vg, lv, nil
}

// deadline turns --budget / --until into a time (zero: none).
func deadline(c *cli.Context, now time.Time) (time.Time, error) {
	b, u := c.Duration("budget"), c.String("until")
	switch {
	case b != 0 && u != "":
		return time.Time{}, cliutil.Usagef("--budget and --until: give one of them")
	case b < 0:
		return time.Time{}, cliutil.Usagef("--budget %v: must be positive", b)
	case b > 0:
		return now.Add(b), nil
	case u != "":
		return untilTime(u, now)
	}
	return time.Time{}, nil
}

func untilTime(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	hm, err := time.ParseInLocation("15:04", s, now.Location())
	if err != nil {
		return time.Time{}, cliutil.Usagef("--until %q: want HH:MM (local time) or an RFC 3339 time", s)
	}
	t := time.Date(now.Year(), now.Month(), now.Day(), hm.Hour(), hm.Minute(), 0, 0, now.Location())
	if !t.After(now) {
		t = t.AddDate(0, 0, 1)
	}
	return t, nil
}

func runScrub(c *cli.Context) error {
	g := cliutil.Get(c)
	vg, lv, err := parseVGLV(c)
	if err != nil {
		return err
	}
	now := time.Now()
	dl, err := deadline(c, now)
	if err != nil {
		return err
	}
	ctx, stop := cliutil.SignalContext(c)
	defer stop()
	if c.Bool("syncaction") {
		return runSyncCheck(c, g, vg, lv, dl)
	}
	so, err := scrubOptions(c, vg, lv, dl, now)
	if err != nil {
		return err
	}
	p := &scrubPrinter{g: g}
	so.Events = p.event
	if !g.JSON {
		budget := "no time limit"
		if !dl.IsZero() {
			budget = "until " + dl.Format("2006-01-02 15:04 MST")
		}
		rateS := "unthrottled"
		if so.Rate > 0 {
			rateS = sizes.Format(so.Rate) + "/s"
		}
		fmt.Fprintf(g.Stderr, "scrub %s/%s: rate %s, %s, state %s\n", vg, lv, rateS, budget, so.StatePath)
	}
	rep, err := integrity.ScrubLV(ctx, integrity.LVScrubOptions{
		VG: vg, LV: lv, Root: g.Root, Runner: g.Runner, NoBackoff: c.Bool("no-backoff"), RepairReads: !c.Bool("no-repair-reads"),
		Scrub: so,
	})
	p.finish()
	if errors.Is(err, integrity.ErrStateNotWritten) {
		// the scrub ran: its findings are reported, then the state's error;
		// findings keep their exit code 1 (a health check's CRITICAL ranks
		// above the UNKNOWN of exit 3)
		if oerr := g.Output(rep, func(w io.Writer) error { return printScrub(w, rep) }); oerr != nil {
			return oerr
		}
		if len(rep.Problems) > 0 {
			return cliutil.WithCode(cliutil.ExitProblem, err)
		}
		return cliutil.CannotRun(err)
	}
	if err != nil {
		if errors.Is(err, integrity.ErrStateMismatch) || errors.Is(err, integrity.ErrStateInvalid) || errors.Is(err, integrity.ErrNothingToScrub) || errors.Is(err, integrity.ErrDegraded) {
			return cliutil.Problem(err) // refused
		}
		return cliutil.CannotRun(err)
	}
	if err := g.Output(rep, func(w io.Writer) error { return printScrub(w, rep) }); err != nil {
		return err
	}
	if len(rep.Problems) > 0 {
		return cliutil.WithCode(cliutil.ExitProblem, nil)
	}
	return nil
}

// scrubOptions maps the flags onto integrity's scrub policy (which owns
// the defaults and the checks) and returns the read loop's options.
func scrubOptions(c *cli.Context, vg, lv string, dl, now time.Time) (integrity.ScrubOptions, error) {
	rate, err := sizes.ParseRate(c.String("rate"))
	if err != nil {
		return integrity.ScrubOptions{}, cliutil.Usage(fmt.Errorf("--rate: %w", err))
	}
	chunk, err := sizes.Parse(c.String("chunk"))
	if err != nil {
		return integrity.ScrubOptions{}, cliutil.Usagef("--chunk %q: want a multiple of 4KiB, at least 64KiB (e.g. 4MiB)", c.String("chunk"))
	}
	pol := integrity.ScrubPolicy{Rate: rate, Chunk: chunk, Parallel: c.Int("parallel"), MaxAwait: c.Duration("max-await"),
		Deadline: dl, StatePath: c.String("state"), Direct: !c.Bool("no-direct")}
	if !dl.IsZero() { // the slice a run gets: --budget, or the time to --until
		pol.Slice = max(dl.Sub(now), time.Second)
	}
	if pol.Parallel < 0 { // the flag always meant "all" for any value below 1
		pol.Parallel = integrity.AllImages
	}
	if chunk == 0 { // the policy's zero is its default; --chunk 0 was always refused
		pol.Chunk = -1
	}
	so, err := pol.Options(vg, lv)
	var pe *integrity.PolicyError
	if errors.As(err, &pe) {
		return so, cliutil.Usagef("--%s %q: %s", pe.Field, c.String(pe.Field), pe.Want)
	}
	return so, err
}

// scrubPrinter shows the scrub's events as they happen: a progress bar on
// a terminal, and a line per backoff, bad block, finished image and note
// on stderr (nothing with --json). Events come from several goroutines.
type scrubPrinter struct {
	g   *cliutil.Globals
	mu  sync.Mutex
	bar *progressbar.ProgressBar
}

func (p *scrubPrinter) say(format string, a ...any) {
	if p.g.JSON {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Clear()
	}
	fmt.Fprintf(p.g.Stderr, format+"\n", a...)
}

// on names an image with the disks under it, "tables_rimage_2 on /dev/sdc
// (serial ZAD0A1B3)": the scrub knows them before its first read.
func on(e integrity.ScrubEvent) string {
	if e.Disk == "" {
		return e.Image
	}
	return e.Image + " on " + e.Disk
}

func (p *scrubPrinter) event(e integrity.ScrubEvent) {
	switch e.Kind {
	case integrity.EventForecast:
		p.say("%s", e.Message)
		if e.Forecast != nil && e.Forecast.Warning != "" {
			p.say("WARNING: %s", e.Forecast.Warning)
		}
	case integrity.EventStart:
		p.mu.Lock()
		if p.bar == nil {
			p.bar = progressBar(p.g, "scrub", e.Size-e.Offset)
		} else {
			p.bar.ChangeMax64(p.bar.GetMax64() + e.Size - e.Offset)
		}
		p.mu.Unlock()
		if e.Offset > 0 {
			p.say("%s: resuming at %s of %s (%.1f%%)", e.Image, sizes.Format(e.Offset), sizes.Format(e.Size), 100*float64(e.Offset)/float64(e.Size))
		}
	case integrity.EventProgress:
		p.mu.Lock()
		if p.bar != nil {
			p.bar.Add64(e.Bytes)
		}
		p.mu.Unlock()
	case integrity.EventBackoff:
		p.say("backoff: %s -> %s/s", e.Message, sizes.Format(e.Rate))
	case integrity.EventBad:
		p.say("BAD %s at image byte %d: %s", on(e), e.Offset, e.Message)
	case integrity.EventDone:
		p.say("%s: read to the end (%s)", e.Image, sizes.Format(e.Size))
	case integrity.EventNote:
		p.say("note: %s %s", e.Image, e.Message)
	}
}

func (p *scrubPrinter) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Finish()
	}
}

func printScrub(w io.Writer, rep integrity.LVScrubReport) error {
	r := rep.Result
	var total, pos int64
	for _, im := range r.Images {
		total += im.Size
		pos += im.End
	}
	switch {
	case r.PassCompleted:
		fmt.Fprintf(w, "%s: pass %d complete; read %s this run in %s\n", rep.Plan.LV, r.Pass, sizes.Format(r.Bytes), time.Duration(r.Seconds*float64(time.Second)).Round(time.Second))
	default:
		why := "stopped"
		switch r.Stopped {
		case "budget":
			why = "stopped at the time budget"
		case "interrupted":
			why = "interrupted"
		}
		pct := 0.0
		if total > 0 {
			pct = 100 * float64(pos) / float64(total)
		}
		fmt.Fprintf(w, "%s: pass %d %s at %.1f%% (read %s this run); the next run resumes from %s\n", rep.Plan.LV, r.Pass, why, pct, sizes.Format(r.Bytes), r.StateFile)
	}
	if r.Backoffs > 0 {
		fmt.Fprintf(w, "backed off %d times; final rate %s/s\n", r.Backoffs, sizes.Format(r.FinalRate))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tDISK\tREAD THIS RUN\tPOSITION\tUNREADABLE\tMISMATCHES BEFORE->AFTER\tIO")
	for i, im := range r.Images {
		var c integrity.ImageCounters
		if i < len(rep.Images) {
			c = rep.Images[i]
		}
		io := "O_DIRECT"
		if !im.Direct {
			io = "buffered"
		}
		pos := "done"
		if !im.Done {
			pos = fmt.Sprintf("%s of %s", sizes.Format(im.End), sizes.Format(im.Size))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d -> %d\t%s\n", im.Name, strings.Join(im.Disks, "+"), sizes.Format(im.BytesRead), pos, len(im.BadBlocks), c.Before, c.After, io)
	}
	tw.Flush()
	for _, b := range rep.BadBlocks {
		what := b.Note
		if b.Repaired {
			what = fmt.Sprintf("repaired by the RAID layer (LV byte %d read, rebuilt from the other disks; the image now reads clean)", b.LVOffset)
		}
		if what == "" {
			what = "not repaired (--no-repair-reads): run tbhost integrity scrub --syncaction " + rep.Plan.LV
		}
		fmt.Fprintf(w, "bad block: %s on %s, image byte %d: %s\n", b.Image, strings.Join(b.Disks, "+"), b.ImageOffset, what)
	}
	for _, l := range rep.KernelLines {
		fmt.Fprintf(w, "kernel: %s\n", l)
	}
	if n := len(r.Passes); n > 0 {
		last := r.Passes[n-1]
		fmt.Fprintf(w, "passes completed: %d; last: pass %d, %s -> %s, %d unreadable blocks\n", n, last.Pass,
			last.Started.Local().Format("2006-01-02 15:04"), last.Completed.Local().Format("2006-01-02 15:04"), last.BadBlocks)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "PROBLEM: %s\n", p)
	}
	return nil
}

func runSyncCheck(c *cli.Context, g *cliutil.Globals, vg, lv string, dl time.Time) error {
	var maxRate int64
	if s := c.String("maxrecoveryrate"); s != "" {
		v, err := sizes.ParseRate(s)
		if err != nil {
			return cliutil.Usage(fmt.Errorf("--maxrecoveryrate: %w", err))
		}
		maxRate = v
	}
	ctx, stop := cliutil.SignalContext(c)
	defer stop()
	var bar *progressbar.ProgressBar
	if !g.JSON && g.Terminal() {
		bar = progressbar.NewOptions(10000, progressbar.OptionSetWriter(g.Stderr), progressbar.OptionSetDescription("syncaction check"), progressbar.OptionSetWidth(30))
	}
	record := c.String("state")
	if record == "" {
		record = integrity.DefaultRateRecordPath(vg, lv)
	}
	rep, err := integrity.SyncCheck(ctx, integrity.SyncCheckOptions{VG: vg, LV: lv, Runner: g.Runner, MaxRecoveryRate: maxRate, Deadline: dl, RateRecord: record,
		Progress: func(action string, pct float64) {
			switch {
			case bar != nil && pct >= 0:
				bar.Set(int(pct * 100))
			case !g.JSON && bar == nil:
				fmt.Fprintf(g.Stderr, "%s/%s: %s %.2f%%\n", vg, lv, action, pct)
			}
		}})
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		var ce *execx.CommandError
		if errors.As(err, &ce) || errors.Is(err, lvm.ErrNotFound) {
			return cliutil.CannotRun(err)
		}
		return cliutil.Problem(err)
	}
	if err := g.Output(rep, func(w io.Writer) error {
		state := "finished"
		switch {
		case rep.CheckStopped:
			state = "stopped (" + rep.Stopped + ")"
		case !rep.Finished:
			state = "still running (" + rep.Stopped + ")"
		}
		fmt.Fprintf(w, "%s: syncaction check %s; raid_mismatch_count %d\n", rep.LV, state, rep.RaidMismatchCount)
		for _, cmd := range rep.Commands {
			fmt.Fprintf(w, "ran: %s\n", execx.Quote(cmd))
		}
		for _, im := range rep.Images {
			fmt.Fprintf(w, "  %s on %s: integrity mismatches %d -> %d\n", im.Name, strings.Join(im.Disks, "+"), im.Before, im.After)
		}
		for _, n := range rep.Notes {
			fmt.Fprintf(w, "note: %s\n", n)
		}
		for _, p := range rep.Problems {
			fmt.Fprintf(w, "PROBLEM: %s\n", p)
		}
		return nil
	}); err != nil {
		return err
	}
	if len(rep.Problems) > 0 {
		return cliutil.WithCode(cliutil.ExitProblem, nil)
	}
	return nil
}
