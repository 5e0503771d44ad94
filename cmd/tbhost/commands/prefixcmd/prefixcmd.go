// Package prefixcmd is the `tbhost prefix` command group: a thin layer over
// package prefix (stats, plan, extract, verify).
package prefixcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/sizes"
	"github.com/tbhost/tbhost/prefix"
	"github.com/urfave/cli/v2"
)

// Command returns the `prefix` command group.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "prefix",
		Usage: "the table-prefix store on NVMe: stats, plan, extract, verify",
		Description: `A Syzygy probe reads a sparse-index entry and a run of block lengths before it reads
   one compressed block. Those come from the start of each table file, its "prefix" (header,
   sparse index, block-length lists, padding to 64 bytes). With every prefix on NVMe, a probe
   reads the HDD array at most once. For the 7-piece set the prefixes are ~385 GiB of ~17 TiB.

   The store is one file per table, <table>.prefix (KRvK.rtbw.prefix), holding the table's
   first bytes: the layout the largest public tablebase server reads with its hot-prefix
   option. tbhost also keeps a manifest (tbhost-prefix-manifest.jsonl) with each prefix's
   source size, mtime and SHA-256, so verify catches stale prefixes without reading the HDDs.

   Typical use:
     tbhost prefix stats /srv/syzygy                          what the prefixes weigh
     tbhost prefix plan --tables /srv/syzygy --capacity 402GiB  does the store fit?
     tbhost prefix extract --tables /srv/syzygy --store /srv/prefix --jobs 8
     tbhost prefix verify --tables /srv/syzygy --store /srv/prefix   (cron: exit 1 on findings)`,
		Action: cliutil.GroupAction,
		Subcommands: []*cli.Command{
			statsCommand(),
			planCommand(),
			extractCommand(),
			verifyCommand(),
		},
	}
}

func tablesFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "tables", Usage: "table directory `DIR` (searched recursively for .rtbw/.rtbz; repeat for several)"}
}

// required returns a usage error (exit 2) naming the first missing flag.
func required(c *cli.Context, names ...string) error {
	for _, n := range names {
		if !c.IsSet(n) {
			return cliutil.Usagef("%s needs --%s; see tbhost prefix %s --help", c.Command.FullName(), n, c.Command.Name)
		}
	}
	return nil
}

func jobsFlag(def int) cli.Flag {
	return &cli.IntFlag{Name: "jobs", Value: def, Usage: fmt.Sprintf("files processed in parallel (`N`, 1 to %d; more helps on RAID arrays and with many small files; outside that range: usage error, exit 2)", prefix.MaxJobs)}
}

// jobs returns --jobs, or a usage error (exit 2) outside 1..prefix.MaxJobs:
// each parallel copy holds a 3 MiB buffer, and more jobs than the disks can
// serve only queue, so a huge value is a typo, not a request.
func jobs(c *cli.Context) (int, error) {
	n := c.Int("jobs")
	if n < 1 || n > prefix.MaxJobs {
		return 0, cliutil.Usagef("--jobs %d: give 1 to %d (files processed in parallel)", n, prefix.MaxJobs)
	}
	return n, nil
}

// parseTables finds and parses the tables; refused files go to stderr.
func parseTables(ctx context.Context, g *cliutil.Globals, dirs []string, jobs int) ([]prefix.Parsed, error) {
	if len(dirs) == 0 {
		return nil, cliutil.Usagef("no table directory given; name at least one (e.g. /srv/syzygy)")
	}
	srcs, err := prefix.FindTables(dirs)
	if err != nil {
		return nil, cliutil.InputError(err)
	}
	if len(srcs) == 0 {
		return nil, cliutil.CannotRun(fmt.Errorf("no .rtbw or .rtbz files under %s: wrong directory, or the set is not mounted?", strings.Join(dirs, ", ")))
	}
	return prefix.ParseAll(ctx, srcs, jobs), nil
}

func reportRefused(w io.Writer, ps []prefix.Parsed) int {
	n := 0
	for _, p := range ps {
		if p.Err != nil {
			fmt.Fprintf(w, "tbhost: skipped %v\n", p.Err)
			n++
		}
	}
	return n
}

// commas prints 12345678 as 12,345,678.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func pct(a, b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f %%", 100*float64(a)/float64(b))
}

// ---- stats ----

func statsCommand() *cli.Command {
	return &cli.Command{
		Name:      "stats",
		Usage:     "bytes of headers, sparse indexes, block-length lists and data per kind; the prefix share",
		ArgsUsage: "DIR...",
		Description: `Reads only each table's header and pairs descriptions (a few KiB per file, never the
   data), and adds up, per kind (WDL, DTZ) and in total: files, header bytes, sparse indexes,
   block-length lists, compressed data, whole files, the sparse prefix (up to the first
   block-length list) and the prefix (up to the first data block), and the prefix share.
   Files that are not valid standard-chess tables (variants, Git LFS pointers, HTML error
   pages, truncated downloads, a table-named symlink whose target is missing) are named on
   stderr and skipped; the exit code is then 1. A DIR that is missing, unreadable or not a
   directory, or holds no .rtbw/.rtbz file: exit 3.

   --json: {"files":[...] (with --files), "totals":{"wdl":{...},"dtz":{...},"all":{...}}}
   with byte fields size, header, sparse_index, block_lengths, data, sparse_prefix, prefix.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "files", Usage: "also list every table"},
			jobsFlag(4),
			cliutil.JSONFlag(),
		},
		Action: func(c *cli.Context) error {
			g := cliutil.Get(c)
			ctx, cancel := cliutil.SignalContext(c)
			defer cancel()
			n, err := jobs(c)
			if err != nil {
				return err
			}
			start := time.Now()
			ps, err := parseTables(ctx, g, c.Args().Slice(), n)
			if err != nil {
				return err
			}
			elapsed := time.Since(start)
			st := prefix.Summarize(ps, c.Bool("files"))
			bad := reportRefused(g.Stderr, ps)
			if err := g.Output(st, func(w io.Writer) error { return printStats(w, st, len(ps), elapsed) }); err != nil {
				return err
			}
			if bad > 0 {
				return cliutil.Problemf("%d of %d files refused (named above); the totals leave them out", bad, len(ps))
			}
			return nil
		},
	}
}

func printStats(w io.Writer, st prefix.Stats, files int, elapsed time.Duration) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if len(st.Files) > 0 {
		fmt.Fprintln(tw, "table\tkind\theader\tsparse index\tblock lengths\tdata\twhole file\tsparse prefix\tprefix\t")
		for _, f := range st.Files {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", f.Name, f.Kind, commas(f.Header), commas(f.SparseIndex),
				commas(f.BlockLengths), commas(f.Data), commas(f.Size), commas(f.SparsePrefix), commas(f.Prefix))
		}
		fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t\t")
	}
	fmt.Fprintln(tw, "kind\tfiles\theader\tsparse index\tblock lengths\tdata\twhole files\tsparse prefix\tprefix\tprefix share\t")
	for _, r := range []struct {
		name string
		t    prefix.Totals
	}{{"WDL", st.Totals.WDL}, {"DTZ", st.Totals.DTZ}, {"total", st.Totals.All}} {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.name, r.t.Files, commas(r.t.Header), commas(r.t.SparseIndex),
			commas(r.t.BlockLengths), commas(r.t.Data), commas(r.t.Size), commas(r.t.SparsePrefix), commas(r.t.Prefix), pct(r.t.Prefix, r.t.Size))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	all := st.Totals.All
	fmt.Fprintf(w, "\nprefix store: %s (full prefixes), %s (sparse prefixes only)\n", sizes.Format(all.Prefix), sizes.Format(all.SparsePrefix))
	_, err := fmt.Fprintln(w, readSummary(st, files, elapsed))
	return err
}

// readSummary is the last line of stats: the header bytes read and the
// average per table. Both count only the tables parsed (Stats.BytesRead
// leaves the refused files out), so the average divides by those and the
// line says how many refused files it leaves out; the rate counts every
// file looked at.
func readSummary(st prefix.Stats, files int, elapsed time.Duration) string {
	parsed := st.Totals.All.Files
	per := int64(0)
	if parsed > 0 {
		per = st.BytesRead / int64(parsed)
	}
	line := fmt.Sprintf("read %s header bytes from the %d tables parsed (%s per table", commas(st.BytesRead), parsed, commas(per))
	switch refused := files - parsed; {
	case refused == 1:
		line += "; the refused file is not counted"
	case refused > 1:
		line += fmt.Sprintf("; the %d refused files are not counted", refused)
	}
	rate := float64(files) / max(elapsed.Seconds(), 1e-9)
	return line + fmt.Sprintf(") in %s: %d files, %.0f files/s", elapsed.Round(time.Millisecond), files, rate)
}

// ---- plan ----

func planCommand() *cli.Command {
	return &cli.Command{
		Name:  "plan",
		Usage: "does the prefix store fit in --capacity? if not, what fits",
		Description: `Sizes the store from the table headers (4 KiB file-system blocks, the manifest and the
   store directory included). If every
   full prefix fits: exit 0. If not, every table keeps its sparse prefix (header + sparse
   index) and full prefixes go to the tables where they save the most HDD reads; the rule
   is printed with the plan. Exit 1 when not everything fits (the plan is still printed),
   and when not even the sparse prefixes fit.

   The capacity is --capacity SIZE, or with --store DIR what the store's file system lets
   the store use: statfs f_bavail (what an ordinary user can write) plus the blocks the
   store's own prefixes and manifest already hold. ext4's root reserve is never counted,
   also when run as root (prefix extract counts the same way): a store that only fits in
   the reserve would fill the file system. Make the store's ext4 with -m 0 (provision-host
   does) to have that space.

   Examples: tbhost prefix plan --tables /srv/syzygy --capacity 402GiB
             tbhost prefix plan --tables /srv/syzygy --store /srv/syzygy-prefix`,
		Flags: []cli.Flag{
			tablesFlag(),
			&cli.StringFlag{Name: "capacity", Usage: "usable bytes of the store file system (`SIZE`, e.g. 402GiB, 431GB; on a mounted store: df -B1 --output=avail DIR)"},
			&cli.StringFlag{Name: "store", Usage: "take the capacity from the store directory `DIR` (statfs f_bavail + the store's own files; root's reserve not counted) instead of --capacity"},
			&cli.BoolFlag{Name: "list", Usage: "list every table with its planned level"},
			jobsFlag(4),
			cliutil.JSONFlag(),
		},
		Action: func(c *cli.Context) error {
			if err := required(c, "tables"); err != nil {
				return err
			}
			g := cliutil.Get(c)
			capacity, capText, err := planCapacity(c)
			if err != nil {
				return err
			}
			n, err := jobs(c)
			if err != nil {
				return err
			}
			ctx, cancel := cliutil.SignalContext(c)
			defer cancel()
			ps, err := parseTables(ctx, g, c.StringSlice("tables"), n)
			if err != nil {
				return err
			}
			bad := reportRefused(g.Stderr, ps)
			var ls []*prefix.Layout
			for _, p := range ps {
				if p.Err == nil {
					ls = append(ls, p.Layout)
				}
			}
			plan := prefix.MakePlan(ls, capacity)
			if err := g.Output(plan, func(w io.Writer) error { return printPlan(w, plan, c.Bool("list")) }); err != nil {
				return err
			}
			switch {
			case !plan.FitsSparse:
				return cliutil.Problemf("not even the sparse prefixes fit: %s needed, %s available", sizes.Format(plan.SparseOnDisk), sizes.Format(capacity))
			case !plan.FitsFull:
				return cliutil.Problemf("the full store does not fit (%s needed, %s available); extract what fits with: tbhost prefix extract --capacity %s ..., or add capacity", sizes.Format(plan.FullOnDisk), sizes.Format(capacity), capText)
			case bad > 0:
				return cliutil.Problemf("%d files refused (named above) are not in the plan", bad)
			}
			return nil
		},
	}
}

// planCapacity is prefix plan's capacity: --capacity SIZE, or what the
// store directory --store can take (prefix.StoreUsable). capText is how
// to pass it to prefix extract --capacity.
func planCapacity(c *cli.Context) (int64, string, error) {
	switch {
	case c.IsSet("capacity") && c.IsSet("store"):
		return 0, "", cliutil.Usagef("give --capacity SIZE or --store DIR, not both")
	case c.IsSet("store"):
		n, err := prefix.StoreUsable(c.String("store"))
		if err != nil {
			return 0, "", cliutil.CannotRun(fmt.Errorf("--store: %w (is the store's file system mounted?)", err))
		}
		return n, strconv.FormatInt(n, 10), nil
	case c.IsSet("capacity"):
		n, err := sizes.Parse(c.String("capacity"))
		if err != nil {
			return 0, "", cliutil.Usage(fmt.Errorf("--capacity: %w", err))
		}
		return n, c.String("capacity"), nil
	}
	return 0, "", cliutil.Usagef("%s needs --capacity SIZE or --store DIR; see tbhost prefix %s --help", c.Command.FullName(), c.Command.Name)
}

func printPlan(w io.Writer, p prefix.Plan, list bool) error {
	fmt.Fprintf(w, "capacity:        %s (%s bytes)\n", sizes.Format(p.Capacity), commas(p.Capacity))
	fmt.Fprintf(w, "tables:          %d\n", p.Tables)
	fmt.Fprintf(w, "full prefixes:   %s on disk (%s bytes of prefix)\n", sizes.Format(p.FullOnDisk), commas(p.FullBytes))
	fmt.Fprintf(w, "sparse prefixes: %s on disk (%s bytes of prefix)\n", sizes.Format(p.SparseOnDisk), commas(p.SparseBytes))
	fmt.Fprintf(w, "(on disk: 4 KiB blocks per file, and %s for the manifest and the directory)\n", sizes.Format(p.OverheadOnDisk))
	switch {
	case p.FitsFull:
		fmt.Fprintf(w, "\nFITS: every full prefix, %s used, %s (%s) left.\n", pct(p.FullOnDisk, p.Capacity), sizes.Format(p.Capacity-p.FullOnDisk), pct(p.Capacity-p.FullOnDisk, p.Capacity))
	case p.FitsSparse:
		fmt.Fprintf(w, "\nDOES NOT FIT in full. What fits: all %d sparse prefixes, plus full prefixes for %d tables (%d WDL, %d DTZ); %s used.\n",
			p.Tables, p.FullTables, p.FullWDLTables, p.FullDTZTables, sizes.Format(p.PlannedOnDisk))
		fmt.Fprintf(w, "rule: %s.\n", p.Rule)
	default:
		fmt.Fprintf(w, "\nDOES NOT FIT: even the sparse prefixes need %s.\n", sizes.Format(p.SparseOnDisk))
	}
	if list {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "\ntable\tkind\tpieces\tupto\tbytes")
		for _, e := range p.Entries {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", e.Name, e.Kind, e.Pieces, e.Upto, commas(e.Bytes))
		}
		return tw.Flush()
	}
	return nil
}

// ---- extract ----

func extractCommand() *cli.Command {
	return &cli.Command{
		Name:  "extract",
		Usage: "write each table's prefix into the store (atomic, resumable, parallel)",
		Description: fmt.Sprintf(`Writes <table>.prefix into --store for every table under --tables: exactly the table's
   first bytes up to the first data block (--upto block-lengths, the default) or up to the
   first block-length list (--upto sparse-index, for a small store). Only those bytes are
   read from the tables. Each prefix is checked against its header as it streams (block
   lengths must add up), written to a hidden temporary file, made durable (one syncfs of the
   store's file system for the prefixes finished together, or an fsync each), renamed into
   place, and the directory fsynced: a crash never leaves a partial file under a final name.
   A manifest (tbhost-prefix-manifest.jsonl) records each table's path, size, mtime, prefix
   length and SHA-256; a rerun skips prefixes whose table and file are unchanged since the
   manifest (without re-reading them: prefix verify does that) and finishes the rest.
   Free space is checked first. Bad tables (a table-named symlink whose target is missing too)
   are named, skipped, and make the exit code 1; so is a table whose header holds another
   material than its name (KvKR.rtbw with KRvK's bytes), and a table whose <table>.prefix is
   a directory (left alone: move it away).
   --jobs is 1 to %d (each job holds 3 MiB of buffers); anything else is a usage error.
   With --capacity SIZE instead of --upto, each table gets the level prefix plan picks.

   Example: tbhost prefix extract --tables /srv/syzygy --store /srv/prefix --jobs 8`, prefix.MaxJobs),
		Flags: []cli.Flag{
			tablesFlag(),
			&cli.StringFlag{Name: "store", Usage: "prefix store directory `DIR` (the NVMe mount; must exist)"},
			&cli.StringFlag{Name: "upto", Value: "block-lengths", Usage: "how far each prefix reaches: block-lengths (full prefix) or sparse-index"},
			&cli.StringFlag{Name: "capacity", Usage: "for a store of `SIZE` too small for every full prefix: per table, the level prefix plan picks (instead of --upto)"},
			jobsFlag(4),
			&cli.BoolFlag{Name: "force", Usage: "rewrite every prefix, even those the manifest shows valid"},
			&cli.DurationFlag{Name: "pause-each", Hidden: true, Usage: "testing: sleep after each file"},
			cliutil.JSONFlag(),
		},
		Action: func(c *cli.Context) error {
			if err := required(c, "tables", "store"); err != nil {
				return err
			}
			g := cliutil.Get(c)
			upto, err := prefix.ParseUpto(c.String("upto"))
			if err != nil {
				return cliutil.Usage(err)
			}
			n, err := jobs(c)
			if err != nil {
				return err
			}
			ctx, cancel := cliutil.SignalContext(c)
			defer cancel()
			physFrom := prefix.ReadPhysical() // the disk reads of the header parse count too
			ps, err := parseTables(ctx, g, c.StringSlice("tables"), n)
			if err != nil {
				return err
			}
			var byName map[string]prefix.Upto
			if c.IsSet("capacity") {
				if c.IsSet("upto") {
					return cliutil.Usagef("give --capacity (levels from the plan) or --upto, not both")
				}
				capacity, err := sizes.Parse(c.String("capacity"))
				if err != nil {
					return cliutil.Usage(fmt.Errorf("--capacity: %w", err))
				}
				var ls []*prefix.Layout
				for _, p := range ps {
					if p.Err == nil {
						ls = append(ls, p.Layout)
					}
				}
				plan := prefix.MakePlan(ls, capacity)
				if !plan.FitsSparse {
					return cliutil.Problemf("not even the sparse prefixes fit in %s (%s needed); nothing extracted", sizes.Format(capacity), sizes.Format(plan.SparseOnDisk))
				}
				byName = plan.UptoByName()
				fmt.Fprintf(g.Stderr, "extract: plan for %s: %d full prefixes, %d sparse\n", sizes.Format(capacity), plan.FullTables, plan.Tables-plan.FullTables)
			}
			var prog prefix.Progress
			if !g.JSON || g.Terminal() {
				prog = newProgress(g)
			}
			rep, err := prefix.Extract(ctx, ps, prefix.ExtractOptions{
				Store: c.String("store"), Upto: upto, UptoByName: byName, Jobs: n, Force: c.Bool("force"),
				Pause: c.Duration("pause-each"), Progress: prog, PhysicalFrom: &physFrom,
			})
			var stopped *prefix.StoppedError
			if err != nil && !errors.As(err, &stopped) {
				if errors.Is(err, prefix.ErrNoSpace) || errors.Is(err, prefix.ErrBusy) {
					return cliutil.Problem(err)
				}
				return cliutil.CannotRun(err)
			}
			// a run that stopped part way reports what it did, then why
			// it stopped (exit 3)
			if err := g.Output(rep, func(w io.Writer) error { return printExtract(w, rep) }); err != nil {
				return err
			}
			for _, f := range rep.Failed {
				fmt.Fprintf(g.Stderr, "tbhost: FAILED %s: %s\n", f.Name, f.Error)
			}
			if stopped != nil {
				return cliutil.CannotRun(err)
			}
			if len(rep.Failed) > 0 {
				return cliutil.Problem(failedSummary(rep))
			}
			return nil
		},
	}
}

// failedSummary is extract's error when tables failed. "The other
// prefixes are in place" only when some are: a run where every table
// failed (a wrong directory of broken links, all truncated) has none.
func failedSummary(r *prefix.ExtractReport) error {
	failed := len(r.Failed)
	if r.Written+r.Skipped == 0 {
		return fmt.Errorf("%d of %d tables failed and were skipped (named above); nothing was extracted", failed, r.Tables)
	}
	return fmt.Errorf("%d of %d tables failed and were skipped (named above); the other prefixes are in place (%d written, %d unchanged)", failed, r.Tables, r.Written, r.Skipped)
}

func printExtract(w io.Writer, r *prefix.ExtractReport) error {
	ratio := "-"
	if r.BytesWritten > 0 {
		ratio = fmt.Sprintf("%.3f", float64(r.BytesRead)/float64(r.BytesWritten))
	}
	rate := float64(r.BytesWritten) / max(r.Seconds, 1e-9)
	// "unchanged since the manifest": skipped prefixes are not re-read (issue
	// 18: "27 already valid" counted a corrupt one); verify reads them.
	_, err := fmt.Fprintf(w, "extract into %s (--upto %s): %d tables, %d written, %d unchanged since the manifest (not re-read), %d failed\n"+
		"wrote %s (%s bytes) in %.1fs, %s/s; read/written %s; %s\n",
		r.Store, r.Upto, r.Tables, r.Written, r.Skipped, len(r.Failed),
		sizes.Format(r.BytesWritten), commas(r.BytesWritten), r.Seconds, sizes.Format(int64(rate)), ratio,
		physicalNote(r.PhysicalBytesRead, r.BytesWritten, "written"))
	if err == nil && r.Skipped > 0 {
		_, err = fmt.Fprintf(w, "the %d unchanged prefixes were not read: tbhost prefix verify checks their bytes, --force rewrites them\n", r.Skipped)
	}
	return err
}

// physicalNote is the disk-read figure beside the logical ones: what the
// disks delivered (readahead included, page-cache hits not), and its ratio
// to the bytes the run needed.
func physicalNote(physical, need int64, what string) string {
	switch {
	case physical < 0:
		return "disk reads not counted by this kernel (no read_bytes in /proc/self/io)"
	case need <= 0:
		return "disk reads " + sizes.Format(physical)
	}
	return fmt.Sprintf("disk reads %s (%s bytes, %.3fx %s)", sizes.Format(physical), commas(physical), float64(physical)/float64(need), what)
}

// ---- verify ----

func verifyCommand() *cli.Command {
	return &cli.Command{
		Name:  "verify",
		Usage: "check every table has a correct, current prefix; exit 1 on any finding",
		Description: `Checks the store against the tables and lists every finding by name:
     missing      a table has no prefix
     extra        a prefix without a table, or a temporary file of an interrupted extract
     truncated    a prefix shorter than extracted; wrong-length: longer
     corrupt      prefix bytes differ from their recorded SHA-256, or from their own header
     stale        the table changed since extraction (size or mtime; with --full, its bytes)
     unrecorded   a prefix the manifest does not know (use --full to compare it with the table)
     bad-table    the table itself is refused (also: its header is another material than its name)
     not-regular  a directory, FIFO, device or socket where a prefix file should be
   The default reads only the store (NVMe) and stats the tables; --full also rereads each
   table's prefix bytes from the HDDs and compares. Exit 0 clean, 1 findings, 3 could not run
   (also while a prefix extract writes the store: verify once it has finished).
   Clean, it prints nothing without a terminal (cron mails only findings) or with --quiet.
   A stale prefix must never pass: servers that use the store check nothing themselves.`,
		Flags: []cli.Flag{
			tablesFlag(),
			&cli.StringFlag{Name: "store", Usage: "prefix store directory `DIR`"},
			&cli.BoolFlag{Name: "full", Usage: "also reread the tables' prefix bytes and compare (HDD reads)"},
			jobsFlag(4),
			cliutil.QuietFlag(),
			cliutil.JSONFlag(),
		},
		Action: func(c *cli.Context) error {
			if err := required(c, "tables", "store"); err != nil {
				return err
			}
			g := cliutil.Get(c)
			n, err := jobs(c)
			if err != nil {
				return err
			}
			ctx, cancel := cliutil.SignalContext(c)
			defer cancel()
			srcs, err := prefix.FindTables(c.StringSlice("tables"))
			if err != nil {
				return cliutil.InputError(err)
			}
			if len(srcs) == 0 {
				return cliutil.CannotRun(fmt.Errorf("no .rtbw or .rtbz files under %s: wrong directory, or the set is not mounted?", strings.Join(c.StringSlice("tables"), ", ")))
			}
			opt := prefix.VerifyOptions{Store: c.String("store"), Full: c.Bool("full"), Jobs: n}
			if p := terminalProgress(g); p != nil && !c.Bool("quiet") {
				opt.Progress = p
			}
			rep, err := prefix.Verify(ctx, srcs, opt)
			if err != nil {
				return cliutil.CannotRun(err)
			}
			if len(rep.Findings) == 0 && g.SilentOnSuccess(c) {
				return nil // cron: mail only findings
			}
			if err := g.Output(rep, func(w io.Writer) error {
				for _, f := range rep.Findings {
					fmt.Fprintln(w, f.String())
				}
				mode := "manifest fast path (store reads only)"
				if rep.Full {
					mode = "full (tables reread)"
				}
				_, err := fmt.Fprintf(w, "verify %s, %s: %d tables, %d ok, %d findings; read %s; %s\n",
					rep.Store, mode, rep.Tables, rep.OK, len(rep.Findings), sizes.Format(rep.BytesRead),
					physicalNote(rep.PhysicalBytesRead, rep.BytesRead, "read"))
				return err
			}); err != nil {
				return err
			}
			if len(rep.Findings) > 0 {
				return cliutil.Reported(cliutil.ExitProblem, fmt.Sprintf("%d findings in %s", len(rep.Findings), rep.Store))
			}
			return nil
		},
	}
}
