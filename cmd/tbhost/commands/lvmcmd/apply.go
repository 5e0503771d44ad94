package lvmcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/lvm"
	"github.com/urfave/cli/v2"
)

func applyCommand() *cli.Command {
	return &cli.Command{
		Name:      "apply",
		Usage:     "build exactly what a saved plan says, then verify it",
		ArgsUsage: "PLAN.yaml",
		Description: `The plan file is input: apply first checks every field against the rules tbhost lvm plan
   follows and refuses, naming the field: VG/LV names lvm2 would not take (or would read as an
   option), device paths that are not clean /dev paths, raid5 with --stripes other than
   members - 1 or on fewer than 3 HDDs, a PV listed twice, extents or sizes that do not match
   the devices, an HDD in the NVMe array, a plan without block sizes (from an older tbhost:
   re-plan), commands that differ from what the devices and arrays derive. It runs the commands
   it derives, never the file's command text.
   Before touching anything apply re-reads the machine and refuses:
     - a device whose path: and id: are different devices (same major:minor, looked up through
       /dev/disk/by-id under --root), or one device planned twice under two names;
     - a stale plan: a planned device is gone, or its serial, size, logical/physical block size
       or kind changed (re-plan);
     - a device in use: mounted, swap, held by device-mapper/md (stop using it first);
     - a device carrying data (partitions, filesystem/RAID/LVM signatures, a PV of another VG)
       unless the plan marks it wipe: true (tbhost lvm plan --wipe DEV) and you confirm;
     - an existing VG or LV whose shape differs from the plan (tbhost never reshapes it);
     - a raid5 an interrupted lvcreate --raidintegrity left without integrity, next to its
       unattached <lv>_rimage_N_imeta LVs: the refusal prints the one lvremove that clears
       them ("run: lvm lvremove ...").
   On Linux 6.1 lvm2's own lvcreate --raidintegrity can deadlock in the kernel (it tears
   down the new raid5 during its initial resync; docs/lvm.md). A command stuck in that
   kernel path for 2 minutes makes apply stop waiting and exit 3, naming the pid: it cannot
   be killed, so reboot, then run apply again. Any other command blocked in the kernel for
   2 minutes (state D, no context switch: slow I/O does not count) gets one warning on
   stderr, and apply keeps waiting.
   It asks on the terminal before writing (--yes skips the question; without a terminal and
   without --yes it refuses). Steps already done (PV, VG, LV with the planned shape) are
   skipped, so after an interruption running apply again converges. A second apply while one
   runs (not --dry-run) is refused, naming the lock /run/lock/tbhost-lvm-apply.lock.

   Afterwards it verifies from lvs -a: segment type, data stripes, integrity on every image,
   and that each planned HDD holds exactly one rimage/rmeta pair (each NVMe one stripe).
   Exit 0 verified, 1 refused or verification failed, 3 a command failed.

EXAMPLES:
   tbhost lvm apply --dry-run plan.yaml     show every command, run nothing that writes
   tbhost lvm apply plan.yaml               asks, then builds and verifies
   tbhost lvm apply --yes --wait-sync plan.yaml`,
		Flags: []cli.Flag{
			cliutil.JSONFlag(),
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "print what would run and run nothing that writes"},
			&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask; needed without a terminal and for devices marked wipe"},
			&cli.BoolFlag{Name: "wait-sync", Usage: "wait (with progress) until the initial RAID/integrity sync is done"},
			&cli.DurationFlag{Name: "poll", Value: 5 * time.Second, Usage: "how often --wait-sync polls lvs"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return cliutil.Usagef("apply takes one plan file (tbhost lvm plan -o plan.yaml makes one)")
			}
			g := cliutil.Get(c)
			plan, err := lvm.LoadPlan(c.Args().First())
			if err != nil {
				return cliutil.InputError(err)
			}
			out := g.Stdout
			if g.JSON {
				out = g.Stderr
			}
			a := lvm.Applier{
				// under --root DIR: DIR's lvm/ reports, which refuse every
				// write; never this machine's lvm about another tree
				Runner: g.LVMRunner(),
				Inventory: func(ctx context.Context) (*blockdev.Inventory, error) {
					return blockdev.Read(ctx, lvm.InventoryOptions(g.Root, g.Runner))
				},
				Out: out,
			}
			if (g.Root == "/" || g.Root == "") && g.RunsThisHost() {
				a.LockPath = lvm.ApplyLockPath // this machine's disks: one apply at a time
			}
			if g.Terminal() {
				a.Confirm = func(q string) error { return g.Confirm(q, "--yes") }
			}
			var bar *progressbar.ProgressBar
			a.Progress = func(lv string, pct float64) {
				if g.Terminal() {
					if bar == nil {
						bar = progressbar.NewOptions(10000, progressbar.OptionSetWriter(g.Stderr),
							progressbar.OptionSetDescription(lv+" sync"), progressbar.OptionShowElapsedTimeOnFinish())
					}
					_ = bar.Set(int(pct * 100))
					return
				}
				fmt.Fprintf(g.Stderr, "%s sync %.2f%%\n", lv, pct)
			}
			rep, err := a.Apply(c.Context, plan, lvm.ApplyOptions{DryRun: c.Bool("dry-run"), Yes: c.Bool("yes"),
				WaitSync: c.Bool("wait-sync"), PollInterval: c.Duration("poll")})
			if bar != nil {
				_ = bar.Finish()
				fmt.Fprintln(g.Stderr)
			}
			return finishRun(g, rep, err, func(w io.Writer) error { return writeApply(w, rep) })
		},
	}
}

func writeApply(w io.Writer, rep *lvm.ApplyReport) error {
	if rep == nil {
		return nil
	}
	writeNotesAndVerification(w, rep.Notes, rep.Verification)
	ran, skipped := 0, 0
	for _, s := range rep.Steps {
		switch s.Action {
		case "run":
			ran++
		case "skip":
			skipped++
		}
	}
	switch {
	case rep.DryRun:
		fmt.Fprintf(w, "dry run: nothing was written (%d steps)\n", len(rep.Steps))
	case len(rep.Steps) > 0:
		fmt.Fprintf(w, "%d commands run, %d already done\n", ran, skipped)
	}
	if rep.Verified {
		fmt.Fprintln(w, "verified: the arrays are what the plan says")
	}
	for _, n := range rep.Next {
		fmt.Fprintf(w, "next: %s\n", n)
	}
	return nil
}

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "shape and health of the arrays (exit 1 on any problem)",
		ArgsUsage: "[VG/LV...]",
		Description: `Reads lvs -a and shows, per array: segment type, data stripes, the device under each
   image, sync percent, health (lv_health_status and lv_attr; values tbhost does not know are
   NOT OK, and so are counters it cannot read), integrity mode, block size and mismatches per
   image. With --plan it also checks the shape against the plan (stripes, one image per
   planned device, integrity).
   Default: the plan's arrays with --plan, else every RAID LV.
   Exit 0 all healthy (an initial sync in progress is fine), 1 a problem (also an array named
   or planned that does not exist), 3 could not run: LVM could not be asked or answered
   nothing usable, or there is no RAID LV at all (nothing to check).

EXAMPLES:
   tbhost lvm status
   tbhost lvm status --plan plan.yaml --json
   tbhost lvm status vg-hdd/tables`,
		Flags: []cli.Flag{
			cliutil.JSONFlag(),
			&cli.StringFlag{Name: "plan", Usage: "also check the arrays against `PLAN.yaml`"},
		},
		Action: func(c *cli.Context) error {
			g := cliutil.Get(c)
			opts := lvm.StatusOptions{Names: c.Args().Slice()}
			for _, n := range opts.Names {
				if vg, lv, ok := strings.Cut(n, "/"); !ok || vg == "" || lv == "" {
					return cliutil.Usagef("%q: name an LV as VG/LV (e.g. vg-hdd/tables)", n)
				}
			}
			if f := c.String("plan"); f != "" {
				p, err := lvm.LoadPlan(f)
				if err != nil {
					return cliutil.InputError(err)
				}
				opts.Plan = p
			}
			if inv, err := blockdev.Read(c.Context, blockdev.Options{Root: g.Root}); err == nil { // names and serials only: no probing
				opts.Inventory = inv
			} else {
				g.Log.Warn("inventory unavailable; images shown by device path only", "err", err)
			}
			rep, err := lvm.Status(c.Context, g.LVMRunner(), opts)
			if err != nil {
				return cliutil.CannotRun(err)
			}
			if err := g.Output(rep, rep.WriteText); err != nil {
				return cliutil.CannotRun(err)
			}
			if !rep.OK {
				return cliutil.Reported(cliutil.ExitProblem, "an array is not healthy or not as planned (see arrays)")
			}
			return nil
		},
	}
}

// finishRun prints the report of a run that changes the disks (lvm apply,
// lvm replace) and maps its error to the exit code: a refusal prints only
// the refusal (nothing ran) and is 1 like a failed verification; a failed
// lvm command is 3; a declined confirmation keeps its own code (1).
func finishRun(g *cliutil.Globals, rep any, err error, write func(io.Writer) error) error {
	var ref *lvm.RefusedError
	var vf *lvm.VerifyFailedError
	var sf *lvm.StepFailedError
	refused := errors.As(err, &ref)
	if perr := g.Output(rep, func(w io.Writer) error {
		if refused {
			return nil // nothing ran: the refusal says it all
		}
		return write(w)
	}); perr != nil && err == nil {
		err = perr
	}
	switch {
	case err == nil:
		return nil
	case refused, errors.As(err, &vf):
		return cliutil.Problem(err)
	case errors.As(err, &sf):
		return cliutil.CannotRun(err)
	}
	if cliutil.CodeOf(err) != cliutil.ExitCannotRun {
		return err // a declined confirmation (exit 1)
	}
	return cliutil.CannotRun(err)
}

// writeNotesAndVerification prints a run's notes and the verification's
// checks, as apply and replace report them.
func writeNotesAndVerification(w io.Writer, notes []string, verification []lvm.Check) {
	for _, n := range notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if len(verification) > 0 {
		fmt.Fprintln(w, "verification:")
		for _, c := range verification {
			fmt.Fprintf(w, "  %s\n", c)
		}
	}
}
