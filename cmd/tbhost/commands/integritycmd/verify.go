package integritycmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/schollz/progressbar/v3"
	"github.com/tbhost/tbhost/integrity"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/sizes"
	"github.com/tbhost/tbhost/internal/tablewalk"
	"github.com/urfave/cli/v2"
)

func verifyCommand() *cli.Command {
	return &cli.Command{
		Name:      "verify-tables",
		Usage:     "check table files against published checksum lists (exit 1 on any mismatch)",
		ArgsUsage: "DIR...",
		Description: `Hashes the table files under each DIR in parallel and compares them with a published list in
   the sha256sum format ("<hex>  <name>"), matching by file name. The algorithm follows from the
   digest length (32 md5, 40 sha1, 56 sha3-224, 64 sha256, 128 sha512) or --algo.

   Cheap checks run first, without hashing: the size against bytes.tsv ("<size><TAB><name>") and
   the 16-byte checksum the generator embeds at the end of every file against tbcheck.txt
   ("<name>: <hex>"). Both are picked up next to --checksums when present; --no-hash runs only them.

   Reported: mismatches (file, published and actual digest), unreadable files (a symlink with a
   table's name whose target is missing is one), table files (.rtbw, .rtbz) in no list (not
   checked: a problem, like a mismatch), other files in no list (a README: only named), and
   listed files missing in the directories (an error with --complete). With --state an
   interrupted run (Ctrl-C, a cron time limit) continues where it stopped; a finished run
   removes the state. All clean, it prints nothing without a terminal (cron mails only
   problems) or with --quiet; problems are printed always.

   Exit 0 all clean; 1 a mismatch, an unreadable or unlisted table, nothing checked (tables
   there but none in the lists), or a list it read but refuses; 3 could not run: a list or
   DIR missing, unreadable or not a file/directory, or no table file under the DIRs at all.

   Example (the lists published by syzygy-tables.info):
     tbhost integrity verify-tables --checksums ../shared/syzygy/checksums/syzygy-tables.info/sha256 \
        --jobs 4 --rate 200MiB/s --state /var/lib/tbhost/verify.state /srv/syzygy`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "checksums", Aliases: []string{"c"}, Usage: "published checksum `FILE` (sha256sum format)"},
			&cli.StringFlag{Name: "algo", Usage: "digest algorithm of --checksums: md5, sha1, sha256, sha512, sha3-224 (default: by digest length)"},
			&cli.StringFlag{Name: "sizes", Usage: "sizes `FILE` (bytes.tsv); default: bytes.tsv next to --checksums if present"},
			&cli.StringFlag{Name: "tbcheck", Usage: "embedded-checksum `FILE` (tbcheck.txt); default: tbcheck.txt next to --checksums if present"},
			&cli.BoolFlag{Name: "no-hash", Usage: "only the cheap checks (size, embedded checksum): seconds for 17 TiB"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: 2, Usage: fmt.Sprintf("files hashed in parallel, 1-%d (each holds a 1 MiB buffer)", integrity.MaxJobs)},
			&cli.StringFlag{Name: "rate", Usage: "total read rate limit, e.g. 200MiB/s (default: unthrottled)"},
			&cli.StringFlag{Name: "state", Usage: "resume `FILE`: an interrupted run continues from it"},
			&cli.BoolFlag{Name: "complete", Usage: "listed files missing in the directories are an error (the whole set must be there)"},
			&cli.BoolFlag{Name: "all", Usage: "print every file, not only the problems (also without a terminal; --quiet still silences a clean run)"},
			cliutil.QuietFlag(),
			cliutil.JSONFlag(),
		},
		Action: runVerify,
	}
}

func runVerify(c *cli.Context) error {
	g := cliutil.Get(c)
	dirs := c.Args().Slice()
	if len(dirs) == 0 {
		return cliutil.Usagef("verify-tables: give at least one table directory (e.g. verify-tables --checksums sha256 /srv/syzygy)")
	}
	opts := integrity.VerifyOptions{Dirs: dirs, Jobs: c.Int("jobs"), StatePath: c.String("state"), Complete: c.Bool("complete")}
	if opts.Jobs < 1 || opts.Jobs > integrity.MaxJobs {
		return cliutil.Usagef("--jobs %d: want 1 to %d (2-8 saturate a RAID array; each job holds a 1 MiB buffer)", opts.Jobs, integrity.MaxJobs)
	}
	if r := c.String("rate"); r != "" {
		v, err := sizes.ParseRate(r)
		if err != nil {
			return cliutil.Usage(fmt.Errorf("--rate: %w", err))
		}
		opts.Rate = v
	}
	var algo integrity.Algo
	if a := c.String("algo"); a != "" {
		v, err := integrity.ParseAlgo(a)
		if err != nil {
			return cliutil.Usage(fmt.Errorf("--algo: %w", err))
		}
		algo = v
	}
	listDir := ""
	var warnings []string
	if p := c.String("checksums"); p != "" {
		listDir = filepath.Dir(p)
		if !c.Bool("no-hash") {
			l, err := integrity.ReadChecksumList(p, algo)
			if err != nil {
				if errors.Is(err, os.ErrNotExist) {
					return cliutil.CannotRun(fmt.Errorf("%w (download the list, e.g. from syzygy-tables.info)", err))
				}
				return cliutil.InputError(err)
			}
			opts.Checksums = &l
			warnings = append(warnings, l.Warnings...)
		}
	} else if !c.Bool("no-hash") {
		return cliutil.Usagef("verify-tables: --checksums FILE is required (or --no-hash with --sizes/--tbcheck)")
	}
	sizesFile, err := pickList(c.String("sizes"), listDir, "bytes.tsv")
	if err != nil {
		return err
	}
	if sizesFile != "" {
		var w []string
		if opts.Sizes, w, err = integrity.ReadSizes(sizesFile); err != nil {
			return cliutil.InputError(fmt.Errorf("--sizes: %w", err))
		}
		warnings = append(warnings, w...)
	}
	trailerFile, err := pickList(c.String("tbcheck"), listDir, "tbcheck.txt")
	if err != nil {
		return err
	}
	if trailerFile != "" {
		var w []string
		if opts.Trailers, w, err = integrity.ReadTrailers(trailerFile); err != nil {
			return cliutil.InputError(fmt.Errorf("--tbcheck: %w", err))
		}
		warnings = append(warnings, w...)
	}
	if opts.Checksums == nil && opts.Sizes == nil && opts.Trailers == nil {
		return cliutil.Usagef("verify-tables --no-hash: nothing to check against; give --sizes bytes.tsv and/or --tbcheck tbcheck.txt")
	}
	for _, w := range warnings {
		fmt.Fprintf(g.Stderr, "warning: %s\n", w)
	}
	if !g.JSON && !g.SilentOnSuccess(c) { // on a terminal: what is checked against what
		fmt.Fprintf(g.Stderr, "verify-tables: %s\n", describeChecks(opts, sizesFile, trailerFile))
	}

	var (
		bar   *progressbar.ProgressBar
		barMu sync.Mutex
	)
	opts.Total = func(n int64) {
		if !c.Bool("quiet") {
			bar = progressBar(g, "hashing", n)
		}
	}
	opts.Progress = func(n int64) {
		if bar != nil {
			barMu.Lock()
			bar.Add64(n)
			barMu.Unlock()
		}
	}
	ctx, stop := cliutil.SignalContext(c)
	defer stop()
	rep, verr := integrity.Verify(ctx, opts)
	if bar != nil {
		bar.Finish()
	}
	if verr != nil && !rep.Interrupted {
		return cliutil.CannotRun(verr)
	}
	all := c.Bool("all")
	// --all asks for every file's line: without a terminal (a report
	// redirected to a file) that is still what was asked for; only an
	// explicit --quiet keeps a clean run silent then.
	silent := g.SilentOnSuccess(c) && (!all || c.Bool("quiet"))
	if !rep.Interrupted && !rep.ProblemsFound && silent {
		return nil // cron: mail only problems
	}
	if err := g.Output(rep, func(w io.Writer) error { return printVerify(w, rep, all) }); err != nil {
		return err
	}
	switch {
	case rep.Interrupted:
		return cliutil.CannotRun(verr)
	case rep.ProblemsFound:
		return cliutil.Reported(cliutil.ExitProblem, problemSummary(rep)+"; see files")
	}
	return nil
}

// problemSummary is the error message of a run with problems, under
// --json: what was found, counted.
func problemSummary(rep integrity.VerifyReport) string {
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(rep.Mismatches, "mismatching")
	add(rep.Unreadable, "unreadable")
	add(rep.UnlistedTables, "tables in no list (not checked)")
	if rep.Complete {
		add(len(rep.Missing), "listed files missing")
	}
	if rep.NothingChecked {
		parts = append(parts, "nothing checked")
	}
	if len(parts) == 0 {
		return "files do not match the lists"
	}
	return strings.Join(parts, ", ")
}

// pickList returns the explicit file, or name next to the checksum list if it exists.
func pickList(explicit, listDir, name string) (string, error) {
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", cliutil.CannotRun(err)
		}
		return explicit, nil
	}
	if listDir == "" {
		return "", nil
	}
	p := filepath.Join(listDir, name)
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	return "", nil
}

func describeChecks(o integrity.VerifyOptions, sizesFile, trailerFile string) string {
	var parts []string
	if o.Checksums != nil {
		parts = append(parts, fmt.Sprintf("%s digests from %s (%d files listed)", o.Checksums.Algo, o.Checksums.Source, len(o.Checksums.Digests)))
	}
	if sizesFile != "" {
		parts = append(parts, "sizes from "+sizesFile)
	}
	if trailerFile != "" {
		parts = append(parts, "embedded checksums from "+trailerFile)
	}
	return "checking " + strings.Join(parts, ", ") + fmt.Sprintf(" in %s, %d jobs", strings.Join(o.Dirs, " "), o.Jobs)
}

func printVerify(w io.Writer, rep integrity.VerifyReport, all bool) error {
	for _, f := range rep.Files {
		switch {
		case f.Verdict == integrity.VerdictMismatch || f.Verdict == integrity.VerdictUnreadable:
			fmt.Fprintf(w, "%-10s %s\n", strings.ToUpper(f.Verdict), f.Path)
			for _, p := range f.Problems {
				fmt.Fprintf(w, "           %s\n", p)
			}
		case f.Verdict == integrity.VerdictUnlisted && tablewalk.IsTableName(f.Name):
			fmt.Fprintf(w, "%-10s %s (a table in no list: not checked)\n", "UNLISTED", f.Path)
		case f.Verdict == integrity.VerdictUnlisted:
			fmt.Fprintf(w, "%-10s %s (not a table file, in no list: not checked)\n", "UNLISTED", f.Path)
		case all && f.Verdict != "":
			fmt.Fprintf(w, "%-10s %s\n", strings.ToUpper(f.Verdict), f.Path)
		}
	}
	fmt.Fprintf(w, "%d ok, %d mismatching, %d unreadable, %d not in the list", rep.OK, rep.Mismatches, rep.Unreadable, rep.Unlisted)
	if n := len(rep.Missing); n > 0 {
		if rep.Complete {
			fmt.Fprintf(w, "; MISSING: %d listed files not found:\n", n)
			for i, m := range rep.Missing {
				if i == 20 {
					fmt.Fprintf(w, "  ... and %d more (--json lists all)\n", n-20)
					break
				}
				fmt.Fprintf(w, "  %s\n", m)
			}
		} else {
			fmt.Fprintf(w, "; %d listed files not in these directories (--complete makes that an error)\n", n)
		}
	} else {
		fmt.Fprintln(w)
	}
	if rep.UnlistedTables > 0 && !rep.NothingChecked {
		fmt.Fprintf(w, "NOT CHECKED: %d table files are in no list: a partial or wrong list? Check them with a list that names them (the full published list)\n", rep.UnlistedTables)
	}
	if rep.NothingChecked {
		fmt.Fprintf(w, "NOTHING CHECKED: none of the %d files found is in the lists: the wrong list for this directory, or the wrong directory?\n", len(rep.Files))
	}
	if rep.Algo != "" {
		rateStr := ""
		if rep.Seconds > 0 {
			rateStr = fmt.Sprintf(", %s/s", sizes.Format(int64(float64(rep.BytesHashed)/rep.Seconds)))
		}
		fmt.Fprintf(w, "hashed %s in %.2fs%s (%s); %d files taken from the state file\n", sizes.Format(rep.BytesHashed), rep.Seconds, rateStr, rep.Algo, rep.Resumed)
	}
	if rep.Interrupted {
		fmt.Fprintf(w, "INTERRUPTED: state saved in %s; rerun the same command to continue\n", rep.StateFile)
	}
	return nil
}
