package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// WatchOptions are monitor watch's knobs.
type WatchOptions struct {
	Names      []string
	Interval   time.Duration
	Count      int  // refreshes; 0 = until ctx is done (Ctrl-C)
	Terminal   bool // redraw a table in place; otherwise append plain lines
	JSON       bool // one JSON object (the check --json shape) per refresh
	Thresholds Thresholds
	// ScrubStates: as CheckOptions.ScrubStates (re-read every refresh).
	ScrubStates []string
}

// Watch samples every interval and shows each array's members: a table
// redrawn in place on a terminal, plain lines (or JSON lines) when piped.
// Each refresh judges the last interval alone, so flags are a hint; use
// check for a verdict over a window.
func Watch(ctx context.Context, e Env, w io.Writer, o WatchOptions) error {
	topo, err := e.Discover(ctx, o.Names)
	if err != nil {
		return err
	}
	if len(topo.Arrays) == 0 {
		return errors.New("no RAID arrays found (no LVM RAID LV, no md device)")
	}
	src, clock, note, err := e.Source(o.Interval)
	if err != nil {
		return err
	}
	prev, err := src.Sample(ctx)
	if err != nil {
		return fmt.Errorf("sampling: %w", err)
	}
	for i := 0; o.Count == 0 || i < o.Count; i++ {
		if err := clock.Sleep(ctx, o.Interval); err != nil {
			return nil // Ctrl-C: a normal end
		}
		cur, err := src.Sample(ctx)
		if errors.Is(err, io.EOF) && i == 0 {
			// a replayed snapshot with one sample: nothing was shown, which
			// is no success (watch needs two samples for a rate)
			return fmt.Errorf("nothing to show: %s (save two or more samples as proc/diskstats.0, .1, ... under --root)", note)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("sampling: %w", err)
		}
		th, scrubNotes := e.withScrubSkip(topo.Arrays, o.ScrubStates, o.Thresholds)
		r := Evaluate(topo.Arrays, []Sample{prev, cur}, th)
		r.Notes = scrubNotes
		switch {
		case o.JSON:
			b, err := json.Marshal(r.JSON())
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
				return err
			}
		case o.Terminal:
			if err := drawTable(w, r, cur.Time, o.Interval); err != nil {
				return err
			}
		default:
			if err := plainLines(w, r, cur.Time); err != nil {
				return err
			}
		}
		prev = cur
	}
	return nil
}

func drawTable(w io.Writer, r Report, t time.Time, every time.Duration) error {
	ew := &errWriter{w: w}
	fmt.Fprint(ew, "\x1b[H\x1b[2J") // home, clear screen
	fmt.Fprintf(ew, "tbhost monitor watch  every %s  %s  (Ctrl-C to stop)\n", every, t.Format("15:04:05"))
	for _, a := range r.Arrays {
		fmt.Fprintln(ew)
		writeArrayTable(ew, a, true)
		for _, p := range a.Problems {
			fmt.Fprintf(ew, "  %s: %s\n", p.Severity, p.Text)
		}
		if a.Note != "" {
			fmt.Fprintf(ew, "  note: %s\n", a.Note)
		}
		for _, n := range a.Notes {
			fmt.Fprintf(ew, "  note: %s\n", n)
		}
	}
	return ew.err
}

func plainLines(w io.Writer, r Report, t time.Time) error {
	ew := &errWriter{w: w}
	ts := t.UTC().Format(time.RFC3339)
	for _, a := range r.Arrays {
		for _, m := range a.Members {
			fmt.Fprintf(ew, "%s %s disk=%s id=%s image=%s r/s=%.1f rMB/s=%.2f r_await=%.1f x_sib=%.1f util=%.1f aqu=%.2f share=%.3f flag=%s\n",
				ts, a.Name, m.Label(), orDefault(m.ID, "-"), orDefault(m.ImageLabel(), "-"), m.Rates.ReadsPerS,
				m.Rates.ReadBytesPerS/1e6, m.Rates.RAwaitMS, m.AwaitRatio, m.Rates.UtilPercent, m.Rates.QueueSize, m.Share, m.Flag)
		}
	}
	return ew.err
}
