// Package tablescmd is `tbhost tables`: moving the table set between hosts.
package tablescmd

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/sizes"
	"github.com/tbhost/tbhost/internal/tablesync"
	"github.com/urfave/cli/v2"
)

// Command is the tables command group.
func Command() *cli.Command {
	return &cli.Command{
		Name:        "tables",
		Usage:       "move the table set between hosts (sync from the old host, verified as it lands)",
		Action:      cliutil.GroupAction,
		Subcommands: []*cli.Command{syncCommand()},
	}
}

func syncCommand() *cli.Command {
	return &cli.Command{
		Name:  "sync",
		Usage: "copy the tables from the old host with rsync, verifying every file as it lands (exit 1 if any is refused or missing)",
		Description: `Copies the Syzygy tables of the selected piece counts from SRC to DIR with rsync and checks
   each file as it lands: a valid table structure, and against the published lists in
   --checksums DIR (syzygy-tables.info's bytes.tsv, tbcheck.txt and sha256): the size, the
   16-byte checksum the generator embeds, and the digest. Only a file that passes moves into DIR;
   one that fails is refused, named with what differs, and kept under DIR/.tbhost-sync/refused.

   SRC is what rsync takes: rsync://old-host/tables (an rsync daemon), old-host:/srv/syzygy
   (over ssh) or a local directory. Symlinks on the source are followed; a table that is a
   dangling symlink there is refused and named (exit 1), the rest is copied.

   Resumable: interrupted at any point (Ctrl-C, SIGKILL, a lost connection), run the same
   command again: verified files stay and are never replaced by different ones, rsync resumes
   partial ones (DIR/.tbhost-sync/ holds the work and state.json). A file an earlier run
   verified with fewer checks or other lists is checked again against this run's lists; one
   that fails them is moved out of DIR to DIR/.tbhost-sync/refused and copied again. At the end
   it lists the files of the set the source does not have (named from the lists; counted
   without them).

   Exit codes: 0 every file of the set is in DIR and verified; 1 files refused or missing;
   2 usage; 3 could not run (rsync missing or failing, DIR missing or not writable). DIR must
   exist (it is never created: an unmounted tables array is not filled on the root file system).

   Example:
     tbhost tables sync --from rsync://old-host/syzygy --to /srv/syzygy \
        --checksums /root/lists/syzygy-tables.info --bwlimit 100MiB/s --set 3-7`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "from", Usage: "rsync `SRC` of the old host's tables (rsync://host/module, host:/dir, or a directory)"},
			&cli.StringFlag{Name: "to", Usage: "destination `DIR` (the new host's tables filesystem; must exist)"},
			&cli.StringFlag{Name: "checksums", Usage: "`DIR` of the published lists (bytes.tsv, tbcheck.txt, sha256): check each file against them and name the missing ones"},
			&cli.StringFlag{Name: "set", Value: "3-7", Usage: "piece counts to copy: a range or list within 3-7 (3-5, 6-7, 3,4,7)"},
			&cli.StringFlag{Name: "bwlimit", Usage: "bandwidth limit, e.g. 100MiB/s (rsync --bwlimit; default unlimited)"},
			&cli.DurationFlag{Name: "timeout", Value: 5 * time.Minute, Usage: "give up when no data moves for this long (rsync --timeout)"},
			&cli.StringFlag{Name: "rsync", Value: "rsync", Usage: "the rsync `PROGRAM`", Hidden: true},
			cliutil.JSONFlag(),
		},
		Action: runSync,
	}
}

func runSync(c *cli.Context) error {
	g := cliutil.Get(c)
	if c.String("from") == "" || c.String("to") == "" {
		return cliutil.Usagef("tables sync needs --from SRC (the old host's tables, e.g. rsync://old-host/syzygy) and --to DIR")
	}
	set, err := tablesync.ParseSet(c.String("set"))
	if err != nil {
		return cliutil.Usage(fmt.Errorf("--set: %w", err))
	}
	opts := tablesync.Options{From: c.String("from"), To: c.String("to"), Set: set, Rsync: c.String("rsync"), Timeout: c.Duration("timeout")}
	if opts.Timeout < time.Second {
		return cliutil.Usagef("--timeout %s: at least 1s", opts.Timeout)
	}
	if b := c.String("bwlimit"); b != "" {
		if opts.BWLimit, err = sizes.ParseRate(b); err != nil || opts.BWLimit <= 0 {
			return cliutil.Usagef("--bwlimit %q: give a rate such as 100MiB/s", b)
		}
	}
	if d := c.String("checksums"); d != "" {
		if opts.Lists, err = tablesync.LoadLists(d); err != nil {
			return cliutil.CannotRun(err)
		}
	}
	var bar *progressbar.ProgressBar
	var mu sync.Mutex // Progress and Event come from the transfer and the verifier
	lastLine := time.Now()
	opts.Progress = func(p tablesync.Progress) {
		if g.JSON {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if g.Terminal() {
			if bar == nil && p.TotalBytes > 0 {
				bar = progressbar.NewOptions64(p.TotalBytes, progressbar.OptionSetWriter(g.Stderr),
					progressbar.OptionShowBytes(true), progressbar.OptionUseIECUnits(true), progressbar.OptionSetWidth(30),
					progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish())
			}
			if bar != nil {
				bar.Describe(fmt.Sprintf("files %d/%d", p.Files, p.TotalFiles))
				bar.Set64(p.Bytes)
			}
			return
		}
		if time.Since(lastLine) >= 30*time.Second && p.TotalBytes > 0 {
			lastLine = time.Now()
			fmt.Fprintf(g.Stderr, "tables sync: %s of %s (%.0f %%), %d of %d files verified\n",
				sizes.Format(p.Bytes), sizes.Format(p.TotalBytes), 100*float64(p.Bytes)/float64(p.TotalBytes), p.Files, p.TotalFiles)
		}
	}
	opts.Event = func(e tablesync.FileEvent) {
		if g.JSON || e.OK || !g.Terminal() {
			return // the summary lists every refused file; live lines for a watching operator
		}
		mu.Lock()
		defer mu.Unlock()
		if bar != nil {
			bar.Clear()
		}
		fmt.Fprintf(g.Stderr, "REFUSED %s: %s\n", e.Rel, strings.Join(e.Problems, "; "))
	}
	ctx, stop := cliutil.SignalContext(c)
	defer stop()
	rep, serr := tablesync.Sync(ctx, opts)
	if bar != nil {
		bar.Finish()
	}
	if err := g.Output(rep, func(w io.Writer) error { return printSync(w, rep, serr) }); err != nil {
		return err
	}
	switch {
	case serr != nil:
		return cliutil.CannotRun(serr)
	case rep.ProblemsFound():
		return cliutil.WithCode(cliutil.ExitProblem, nil)
	}
	return nil
}

func printSync(w io.Writer, r tablesync.Report, err error) error {
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	fmt.Fprintf(w, "tables sync %s -> %s, set %s (checks: %s)\n", r.From, r.To, r.Set, strings.Join(r.Checks, ", "))
	fmt.Fprintf(w, "  %d files of the set on the source: %d verified before, %d copied and verified now, %d refused; %s transferred in %.0fs\n",
		r.OnSource, r.AlreadyVerified, r.Landed, len(r.Refused), sizes.Format(r.Bytes), r.Seconds)
	for _, f := range r.Refused {
		kept := ""
		if f.KeptAt != "" {
			kept = " (kept at " + f.KeptAt + ")"
		}
		fmt.Fprintf(w, "  REFUSED %s: %s%s\n", f.Rel, strings.Join(f.Problems, "; "), kept)
	}
	if len(r.Unlisted) > 0 {
		fmt.Fprintf(w, "  not copied: %d files on the source the published lists do not name: %s\n", len(r.Unlisted), strings.Join(r.Unlisted, " "))
	}
	switch {
	case len(r.Missing) > 0:
		fmt.Fprintf(w, "  MISSING on the source: %d of the %d files of set %s:\n", len(r.Missing), r.Selected, r.Set)
		const show = 50
		for i, n := range r.Missing {
			if i == show {
				fmt.Fprintf(w, "    ... and %d more (--json lists them all)\n", len(r.Missing)-show)
				break
			}
			fmt.Fprintf(w, "    %s\n", n)
		}
	case r.MissingCount > 0:
		fmt.Fprintf(w, "  MISSING on the source: %d of the %d files of set %s (give --checksums DIR to name them)\n", r.MissingCount, r.Selected, r.Set)
	}
	switch {
	case err != nil:
		fmt.Fprintf(w, "  stopped: %v\n", err)
	case r.Complete && r.MissingCount == 0:
		fmt.Fprintf(w, "  complete: all %d files of set %s are in %s and verified\n", r.Selected, r.Set, r.To)
	}
	return nil
}
