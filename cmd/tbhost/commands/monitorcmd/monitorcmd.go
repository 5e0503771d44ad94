// Package monitorcmd is `tbhost monitor`: a thin CLI over package monitor.
package monitorcmd

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/monitor"
	"github.com/urfave/cli/v2"
)

// Command returns the monitor command group.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "monitor",
		Usage: "per-disk reads of each RAID array; flag skewed, idle, missing or unhealthy members",
		Description: `tbhost knows which disks form which array (LVM RAID with or without dm-integrity,
   and md): array -> image -> disk, with each disk's /dev/disk/by-id name. It samples
   /proc/diskstats and compares every member's read rate with its siblings'. A member
   that reads much less (or more) than the mean for a whole window is flagged; so is a
   disk that reads nothing while its siblings read (an array built without --stripes
   leaves disks idle), a missing member, an unhealthy or syncing array, and integrity
   mismatches.

   tbhost monitor topology            which disks form which array
   tbhost monitor watch               live per-array table (plain lines when piped)
   tbhost monitor check --for 60s     for cron and Nagios: one line, exit 0/1/2/3
   tbhost monitor serve               Prometheus exporter on 127.0.0.1:9477

   Alerting rules for Prometheus ship in monitor/alerts/tbhost.rules.yml.
   With --root DIR (a snapshot or fixture tree) the LVM report is read from
   DIR/lvm/lvs.json and DIR/lvm/pvs.json, and DIR/proc/diskstats.0, .1, ... are
   replayed as samples taken --interval apart (give the spacing they were taken with).`,
		Action: cliutil.GroupAction,
		Subcommands: []*cli.Command{
			topologyCommand(),
			checkCommand(),
			watchCommand(),
			serveCommand(),
		},
	}
}

func env(g *cliutil.Globals) monitor.Env {
	return monitor.Env{Root: g.Root, Runner: g.Runner}
}

func topologyCommand() *cli.Command {
	return &cli.Command{
		Name:      "topology",
		Usage:     "show which disks (and images) form each array",
		ArgsUsage: "[ARRAY...]  (vg/lv, /dev/vg/lv, md0; default: every array)",
		Flags:     []cli.Flag{cliutil.JSONFlag()},
		Action: func(c *cli.Context) error {
			g := cliutil.Get(c)
			topo, err := env(g).Discover(c.Context, c.Args().Slice())
			if err != nil {
				return cliutil.CannotRun(err)
			}
			if topo.Arrays == nil {
				topo.Arrays = []monitor.Array{} // JSON: [], not null
			}
			if topo.Notes == nil {
				topo.Notes = []string{}
			}
			if err := g.Output(topo, func(w io.Writer) error {
				for _, n := range topo.Notes {
					fmt.Fprintf(g.Stderr, "note: %s\n", n)
				}
				for _, a := range topo.Arrays {
					fmt.Fprintf(w, "%s  %s  %s  %d images  device %s\n", a.Name, a.Kind, a.Level, a.Images, orDash(a.Device))
					for _, m := range a.Members {
						img := m.ImageLabel()
						if img == "" {
							img = "(no image: PV of the VG the array does not use)"
						}
						fmt.Fprintf(w, "  %-10s %-40s %s\n", m.Label(), orDash(m.ID), img)
					}
					for _, p := range a.Problems {
						fmt.Fprintf(w, "  %s: %s\n", p.Severity, p.Text)
					}
				}
				return nil
			}); err != nil {
				return err
			}
			if len(topo.Arrays) == 0 {
				// nothing to monitor: 3, as check (UNKNOWN) and watch say (README, exit codes)
				return cliutil.CannotRun(errors.New("no RAID arrays found (no LVM RAID LV, no md device)"))
			}
			return nil
		},
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// nagios turns an error of monitor check's run into exit 3 (UNKNOWN): it
// could not look. A usage error (flag parsing) is 2 like in every command.
func nagios(c *cli.Context, err error) error {
	g := cliutil.Get(c)
	if g.JSON {
		_ = cliutil.PrintJSON(g.Stdout, monitor.CheckJSON{Status: "UNKNOWN", Arrays: []monitor.ArrayJSON{}})
	} else {
		fmt.Fprintf(g.Stdout, "UNKNOWN: %v\n", err)
	}
	return cliutil.WithCode(int(monitor.Unknown), err)
}

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "judge the arrays over a window; Nagios exit codes (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN)",
		ArgsUsage: "[ARRAY...]  (vg/lv, /dev/vg/lv, md0; default: every array)",
		Description: `Samples /proc/diskstats every --interval for --for, then prints ONE summary line
   (the worst findings first, then " | " and Nagios perfdata: each member's reads/s
   and share of the array's reads), then details: a table per array and every finding.

   A member is flagged WARNING (CRITICAL) when its reads/s stay more than --warn
   (--crit) away from the members' mean in EVERY judged interval of the window; a
   member with zero reads while its siblings read is CRITICAL ("idle"). Health is
   folded in: a missing member or partial LV is CRITICAL; a resync, integrity or
   raid mismatches, and topology smells (an image spanning several disks, PVs of the
   VG the array does not use) are WARNING.

   Fail-slow: a member whose r_await is --slow-factor (3) times its siblings' median in
   every interval it is judged in (it and a sibling read --slow-min-iops, 5 reads/s; at
   least half the window), not explained by load (it reads no more than 1.1x the others,
   or each I/O keeps it busier), is flagged slow: WARNING, CRITICAL at
   --slow-critical-factor (10). The finding names the disk, its serial and the replace
   command. The disk a running integrity scrub reads (its state file, --scrub-state) and
   disks given with --skip are left out.

   Too little traffic: an interval is judged only when the members average at least
   --min-reads reads/s each (default 10; fewer reads cannot tell skew from chance).
   When no interval could be judged, skew is not judged and the status comes from
   health alone (exit 0 when healthy, with the reason in the summary); use
   --no-traffic unknown to exit 3 instead.

   Exit codes: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (also when tbhost cannot read
   /sys, /proc or LVM, or finds no RAID array). A bad command line (an unknown flag, a
   bad flag value) is 2, as in every tbhost command, so a broken check line shows as
   CRITICAL at once.

   Needs root: it asks lvm (and smartctl) for health, and lvm refuses other users
   (UNKNOWN, "lvm needs root"). A monitoring user such as nagios runs it through sudo,
   with a sudoers rule: nagios ALL=(root) NOPASSWD: /usr/bin/tbhost monitor check *

   Examples:
     tbhost monitor check --for 60s vg-hdd/tables
     tbhost monitor check --quiet                 # cron: mail only when not OK
     tbhost monitor check --json
     tbhost monitor check --textfile /var/lib/prometheus/node-exporter/tbhost.prom`,
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "for", Value: 60 * time.Second, Usage: "sampling window"},
			&cli.DurationFlag{Name: "interval", Value: 5 * time.Second, Usage: "time between samples inside the window (each interval is judged)"},
			&cli.StringFlag{Name: "warn", Value: "30%", Usage: "WARNING when a member's read rate is this far from the members' mean"},
			&cli.StringFlag{Name: "crit", Value: "60%", Usage: "CRITICAL when a member's read rate is this far from the members' mean"},
			&cli.Float64Flag{Name: "min-reads", Value: 10, Usage: "judge skew only when members average at least `N` reads/s each"},
			&cli.StringFlag{Name: "no-traffic", Value: "ok", Usage: "status when too little traffic to judge skew: ok or unknown"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing when OK (cron mails only problems)"},
			&cli.StringFlag{Name: "textfile", Usage: "also write the result as Prometheus text to `FILE`, atomically (node_exporter textfile collector)"},
			slowFactorFlag(), slowCritFlag(), slowMinIOPSFlag(), skipFlag(), scrubStateFlag(),
			cliutil.JSONFlag(),
		},
		Action: func(c *cli.Context) error {
			g := cliutil.Get(c)
			// a bad flag value is a usage error (2), as in every command
			th, err := thresholds(c)
			if err != nil {
				return cliutil.Usage(err)
			}
			if c.Duration("for") <= 0 {
				return cliutil.Usagef("--for must be positive, e.g. --for 60s")
			}
			r, err := monitor.Check(c.Context, env(g), monitor.CheckOptions{
				Names: c.Args().Slice(), For: c.Duration("for"), Interval: c.Duration("interval"), Thresholds: th,
				ScrubStates: c.StringSlice("scrub-state"),
			})
			if err != nil {
				return nagios(c, err)
			}
			var textfileErr error
			if f := c.String("textfile"); f != "" {
				textfileErr = r.WriteTextfile(c.Context, f, float64(time.Now().Unix()))
			}
			if textfileErr != nil && r.Status == monitor.OK {
				return nagios(c, textfileErr)
			}
			code := int(r.Status)
			// --quiet: nothing when OK (cron). Without --quiet the status line is
			// printed also without a terminal: Nagios reads it. --json always
			// prints its document.
			if c.Bool("quiet") && r.Status == monitor.OK && !g.JSON {
				return cliutil.WithCode(code, nil)
			}
			if g.JSON {
				if err := cliutil.PrintJSON(g.Stdout, r.JSON()); err != nil {
					return nagios(c, err)
				}
			} else if err := r.WriteText(g.Stdout); err != nil {
				return nagios(c, err)
			}
			if code != 0 {
				msg := checkErrorMessage(r)
				if textfileErr != nil {
					// A textfile that could not be written (its file system
					// full) must not hide the arrays' WARNING or CRITICAL
					// behind an UNKNOWN, which ranks below them: the report
					// and its status stand, the textfile's error goes with them.
					fmt.Fprintf(g.Stderr, "tbhost: %v\n", textfileErr)
					msg += "; " + textfileErr.Error()
				}
				return cliutil.Reported(code, msg)
			}
			return nil
		},
	}
}

// checkErrorMessage is the --json error message of a check that is not OK.
// When an array has the report's status, its problems say why and the
// message points there; otherwise the reason is on no array (none found:
// the arrays list is empty) and only the status line says it, so the
// message is that line.
func checkErrorMessage(r monitor.Report) string {
	for _, a := range r.Arrays {
		if a.Status == r.Status {
			return r.Status.String() + " (see arrays)"
		}
	}
	return r.StatusLine()
}

func thresholds(c *cli.Context) (monitor.Thresholds, error) {
	th := monitor.DefaultThresholds()
	var err error
	if th.Warn, err = parsePercent(c.String("warn")); err != nil {
		return th, fmt.Errorf("--warn: %w", err)
	}
	if th.Crit, err = parsePercent(c.String("crit")); err != nil {
		return th, fmt.Errorf("--crit: %w", err)
	}
	if th.Crit < th.Warn {
		return th, fmt.Errorf("--crit %s is below --warn %s", c.String("crit"), c.String("warn"))
	}
	th.MinReads = c.Float64("min-reads")
	if th.MinReads < 0 {
		return th, errors.New("--min-reads must be 0 or more")
	}
	if err := slowThresholds(c, &th); err != nil {
		return th, err
	}
	switch strings.ToLower(c.String("no-traffic")) {
	case "ok":
		th.NoTraffic = monitor.OK
	case "unknown":
		th.NoTraffic = monitor.Unknown
	default:
		return th, fmt.Errorf("--no-traffic %q: want ok or unknown", c.String("no-traffic"))
	}
	return th, nil
}

// parsePercent reads "30%" or "30" as 0.30.
func parsePercent(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || v <= 0 || v > 1000 {
		return 0, fmt.Errorf("%q is not a percentage like 30%%", s)
	}
	return v / 100, nil
}

func watchCommand() *cli.Command {
	return &cli.Command{
		Name:      "watch",
		Usage:     "live per-array table of member reads (plain lines when piped)",
		ArgsUsage: "[ARRAY...]  (vg/lv, /dev/vg/lv, md0; default: every array)",
		Description: `Every --interval: each member's reads/s, read MB/s, r_await, %util, queue size
   (iostat's formulas), its share of the array's reads and a bar. On a terminal the
   table is redrawn in place; piped, each refresh prints one line per member
   (or, with --json, one JSON object). Stops after --count refreshes or on Ctrl-C.
   Flags here judge one interval; use "monitor check" for a verdict over a window.`,
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "interval", Value: 2 * time.Second, Usage: "refresh every `DURATION`"},
			&cli.IntFlag{Name: "count", Usage: "stop after `N` refreshes (0: until Ctrl-C)"},
			&cli.BoolFlag{Name: "plain", Usage: "plain lines even on a terminal"},
			&cli.Float64Flag{Name: "min-reads", Value: 10, Usage: "judge skew only when members average at least `N` reads/s each"},
			slowFactorFlag(), slowCritFlag(), slowMinIOPSFlag(), skipFlag(), scrubStateFlag(),
			cliutil.JSONFlag(),
		},
		Action: func(c *cli.Context) error {
			g := cliutil.Get(c)
			if c.Duration("interval") <= 0 {
				return cliutil.Usagef("--interval must be positive, e.g. --interval 2s")
			}
			if c.Int("count") < 0 {
				return cliutil.Usagef("--count must be 0 (until Ctrl-C) or more")
			}
			ctx, stop := cliutil.SignalContext(c)
			defer stop()
			g.JSONLines() // one object per refresh, written as it comes
			th := monitor.DefaultThresholds()
			th.MinReads = c.Float64("min-reads")
			if err := slowThresholds(c, &th); err != nil {
				return cliutil.Usagef("%v", err)
			}
			err := monitor.Watch(ctx, env(g), g.Stdout, monitor.WatchOptions{
				Names: c.Args().Slice(), Interval: c.Duration("interval"), Count: c.Int("count"),
				Terminal: g.Terminal() && !c.Bool("plain"), JSON: g.JSON, Thresholds: th, ScrubStates: c.StringSlice("scrub-state"),
			})
			if err != nil {
				return cliutil.CannotRun(err)
			}
			return nil
		},
	}
}

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:      "serve",
		Usage:     "Prometheus exporter: per-member read counters, skew ratio, array health",
		ArgsUsage: "[ARRAY...]  (default: every array)",
		Description: `Samples /proc/diskstats every --interval in the background and serves /metrics:
     tbhost_array_member_reads_total{array,image,disk,id}        (and _read_bytes_total,
     tbhost_array_member_read_time_seconds_total, _io_time_seconds_total)
     tbhost_array_member_skew_ratio{array,image,disk,id}         (1 = balanced, 0 = idle;
                                                                  only when the array reads enough)
     tbhost_array_member_read_await_seconds, _read_await_ratio, _slow{array,image,disk,id}
                                                                 (r_await of the last interval, its
                                                                  ratio to the siblings' median, the
                                                                  fail-slow verdict 0/1/2)
     tbhost_array_status, _degraded, _syncing, _sync_progress_ratio, _integrity_mismatches,
     tbhost_array_member_missing, tbhost_array_problems, tbhost_monitor_last_sample_timestamp_seconds,
     tbhost_monitor_arrays (0 when no array is found; the log says so too)
   Listens on loopback by default: put a reverse proxy or Prometheus on the same host,
   or pass --listen :9477 deliberately. Alerting rules: monitor/alerts/tbhost.rules.yml.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:9477", Usage: "listen on `ADDR`"},
			&cli.DurationFlag{Name: "interval", Value: 15 * time.Second, Usage: "sample /proc/diskstats every `DURATION`"},
			&cli.DurationFlag{Name: "topology-every", Value: 5 * time.Minute, Usage: "re-read the array topology (runs lvm) every `DURATION`"},
			&cli.Float64Flag{Name: "min-reads", Value: 10, Usage: "export the skew ratio only when members average at least `N` reads/s each"},
			slowFactorFlag(), slowCritFlag(), slowMinIOPSFlag(), skipFlag(), scrubStateFlag(),
		},
		Action: func(c *cli.Context) error {
			g := cliutil.Get(c)
			if c.Duration("interval") <= 0 {
				return cliutil.Usagef("--interval must be positive, e.g. --interval 15s")
			}
			th := monitor.DefaultThresholds()
			th.MinReads = c.Float64("min-reads")
			if err := slowThresholds(c, &th); err != nil {
				return cliutil.Usagef("%v", err)
			}
			exp := &monitor.Exporter{Env: env(g), Names: c.Args().Slice(), Interval: c.Duration("interval"),
				TopologyEvery: c.Duration("topology-every"), Thresholds: th, ScrubStates: c.StringSlice("scrub-state"), Log: g.Log}
			// the first sample proves that /sys, /proc and LVM can be read
			if err := exp.Step(c.Context); err != nil {
				return cliutil.CannotRun(err)
			}
			ctx, stop := cliutil.SignalContext(c)
			defer stop()
			srv, err := monitor.NewServer(c.String("listen"), exp)
			if err != nil {
				return cliutil.CannotRun(err)
			}
			fmt.Fprintf(g.Stderr, "tbhost monitor: serving http://%s/metrics (sampling every %s)\n", srv.Addr(), c.Duration("interval"))
			if err := srv.Serve(ctx); err != nil {
				return cliutil.CannotRun(err)
			}
			return nil
		},
	}
}

// The fail-slow flags (check, watch, serve): see docs/monitor.md.
func slowFactorFlag() cli.Flag {
	return &cli.Float64Flag{Name: "slow-factor", Value: 3, Usage: "WARNING (flag slow) when a member's r_await is `X` times its siblings' median in every judged interval"}
}

func slowCritFlag() cli.Flag {
	return &cli.Float64Flag{Name: "slow-critical-factor", Value: 10, Usage: "CRITICAL when a slow member's r_await is `X` times its siblings' median in every judged interval"}
}

func slowMinIOPSFlag() cli.Flag {
	return &cli.Float64Flag{Name: "slow-min-iops", Value: 5, Usage: "judge a member's latency only in intervals where it and a sibling read at least `N` reads/s"}
}

func skipFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "skip", Usage: "leave `DISK` (sdc, a by-id name or path) out of skew and latency judgement, e.g. the disk an integrity scrub reads (repeatable)"}
}

func slowThresholds(c *cli.Context, th *monitor.Thresholds) error {
	th.SlowFactor = c.Float64("slow-factor")
	th.SlowCritFactor = c.Float64("slow-critical-factor")
	th.SlowMinIOPS = c.Float64("slow-min-iops")
	switch {
	case !(th.SlowFactor > 1) || th.SlowFactor > 1e6:
		return fmt.Errorf("--slow-factor %g: want a factor above 1, e.g. 3", th.SlowFactor)
	case !(th.SlowCritFactor >= th.SlowFactor) || th.SlowCritFactor > 1e6:
		return fmt.Errorf("--slow-critical-factor %g: want at least --slow-factor (%g), e.g. 10", th.SlowCritFactor, th.SlowFactor)
	case !(th.SlowMinIOPS >= 0) || th.SlowMinIOPS > 1e9:
		return fmt.Errorf("--slow-min-iops %g: want 0 or more reads/s, e.g. 5", th.SlowMinIOPS)
	}
	th.Skip = append(th.Skip, c.StringSlice("skip")...)
	return nil
}

func scrubStateFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "scrub-state", Usage: "also read the integrity scrub state `FILE` (besides /var/lib/tbhost/scrub-<vg>-<lv>.json): the disks a running scrub reads are left out of skew and latency judgement (repeatable)"}
}
