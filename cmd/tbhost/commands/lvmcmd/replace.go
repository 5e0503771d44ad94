package lvmcmd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/sizes"
	"github.com/tbhost/tbhost/internal/timeline"
	"github.com/tbhost/tbhost/lvm"
	"github.com/urfave/cli/v2"
)

func defaultReplaceStateDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/tbhost/lvm-replace"
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "tbhost", "lvm-replace")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "tbhost", "lvm-replace")
	}
	return filepath.Join(os.TempDir(), "tbhost-lvm-replace")
}

func replaceCommand() *cli.Command {
	return &cli.Command{
		Name:      "replace",
		Usage:     "replace a failing or dead member of the tables array (RAID 5 + integrity) by a new disk",
		ArgsUsage: "VG/LV --old DEV|missing --new DEV",
		Description: `Finds out from lvs -a (and the inventory) which case it is in, says why, prints every
   command in order with an estimate of each long step at this array's size, and how long the
   array will run without redundancy and without integrity:
     a. the old disk is present (failing, or you want it out): pvcreate/vgextend the new disk,
        lvconvert --replace OLD, wait for the rebuild, vgreduce OLD. Integrity stays on.
     b. the old disk vanished while the array ran (active, degraded; --old missing): do NOT
        deactivate or reboot; lvconvert --repair onto the new disk, wait, vgreduce
        --removemissing. Integrity stays on.
     c. the old disk was missing at boot (LV inactive; --old missing): lvm2 2.03.16 activates
        raid+integrity with a member missing in no mode, so: lvconvert --raidintegrity n, lvchange
        -ay --activationmode degraded (the tables are readable again; the offline time since boot
        is printed), repair, wait, vgreduce --removemissing, lvconvert --raidintegrity y with the
        array's mode and block size, wait for every image's re-initialisation.
   The new disk gets lvm apply's guards (blank, not mounted, not a PV of another VG, not the
   system disk) and the replacement's own: at least the image + rmeta + integrity metadata,
   the members' logical block size, not above the integrity block size. A refusal runs nothing.
   It asks you to type the VG/LV name (or takes --yes). Every step is recorded before and
   after it runs in a state file under --state-dir; after an interruption (even kill -9 or a
   power loss) run the same command again: finished steps are skipped, and each step checks
   lvs first. Afterwards it verifies the shape lvm apply verifies; with --plan it writes the
   updated plan (the old device replaced by the new one, the new inventory fingerprint) to
   --plan-out, default PLAN.updated.yaml next to the plan (an existing file is kept unless it
   is that same plan).
   Exit 0 replaced and verified, 1 refused or verification failed, 2 usage, 3 a command failed.

EXAMPLES:
   tbhost lvm replace --dry-run vg-hdd/tables --old missing --new /dev/sdg
   tbhost lvm replace --plan plan.yaml vg-hdd/tables --old /dev/sdc --new /dev/disk/by-id/wwn-0x5000c500a1b2c3d4`,
		Flags: []cli.Flag{
			cliutil.JSONFlag(),
			&cli.StringFlag{Name: "old", Usage: "the member to replace: `DEV` (/dev/sdc, a by-id name) or missing (its disk is gone)"},
			&cli.StringFlag{Name: "new", Usage: "the blank new disk `DEV`"},
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "print the case and the commands, run nothing"},
			&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask for the VG/LV name (needed without a terminal)"},
			&cli.StringFlag{Name: "plan", Usage: "the array's reviewed `PLAN.yaml`: verify against it and write the updated plan"},
			&cli.StringFlag{Name: "plan-out", Usage: "write the updated plan to `FILE` (default: PLAN.updated.yaml next to --plan)"},
			&cli.StringFlag{Name: "state-dir", Value: defaultReplaceStateDir(), Usage: "keep the state file and lock under `DIR`"},
			&cli.DurationFlag{Name: "poll", Value: 10 * time.Second, Usage: "how often the waits poll lvs"},
			&cli.StringFlag{Name: "hdd-rate", Usage: "ESTIMATE: one HDD's sequential `RATE` (default 160MiB/s)"},
			&cli.StringFlag{Name: "integrity-rate", Usage: "ESTIMATE: dm-integrity re-initialisation `RATE` per image (default 80MiB/s)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return cliutil.Usagef("replace takes one VG/LV (e.g. vg-hdd/tables), then --old DEV|missing --new DEV")
			}
			vg, lv, ok := strings.Cut(c.Args().First(), "/")
			if !ok || vg == "" || lv == "" {
				return cliutil.Usagef("%q: name the array as VG/LV (e.g. vg-hdd/tables)", c.Args().First())
			}
			if c.String("old") == "" || c.String("new") == "" {
				return cliutil.Usagef("replace needs --old DEV (or --old missing) and --new DEV")
			}
			if c.String("plan-out") != "" && c.String("plan") == "" {
				return cliutil.Usagef("--plan-out needs --plan (the plan to update)")
			}
			g := cliutil.Get(c)
			opts := lvm.ReplaceOptions{VG: vg, LV: lv, Old: c.String("old"), New: c.String("new"),
				DryRun: c.Bool("dry-run"), Yes: c.Bool("yes"), PlanPath: c.String("plan"), PlanOut: c.String("plan-out"),
				StateDir: c.String("state-dir"), Poll: c.Duration("poll")}
			for _, f := range []struct {
				flag string
				v    *int64
			}{{"hdd-rate", &opts.Rates.HDD}, {"integrity-rate", &opts.Rates.Integrity}} {
				if s := c.String(f.flag); s != "" {
					r, err := sizes.ParseRate(s)
					if err != nil || r <= 0 {
						return cliutil.Usagef("--%s %q: write a rate such as 150MiB/s", f.flag, s)
					}
					*f.v = r
				}
			}
			if opts.PlanPath != "" {
				p, err := lvm.LoadPlan(opts.PlanPath)
				if err != nil {
					return cliutil.Problem(err)
				}
				opts.Plan = p
			}
			out := g.Stdout
			if g.JSON {
				out = g.Stderr
			}
			r := lvm.Replacer{
				// under --root DIR: DIR's lvm/ reports, which refuse every
				// write; never this machine's lvm about another tree
				Runner: g.LVMRunner(),
				Inventory: func(ctx context.Context, signatures bool) (*blockdev.Inventory, error) {
					o := lvm.InventoryOptions(g.Root, g.Runner)
					o.Probe = o.Probe && signatures
					return blockdev.Read(ctx, o)
				},
				Out:    out,
				Uptime: func() (time.Duration, error) { return readUptime(g.Path("/proc/uptime")) },
			}
			if g.Terminal() {
				r.Confirm = func(q, want string) error {
					fmt.Fprintf(g.Stderr, "%s ", q)
					line, _ := bufio.NewReader(g.Stdin).ReadString('\n')
					if strings.TrimSpace(line) != want {
						return cliutil.Problemf("not confirmed (typed %q, not %s): nothing was run", strings.TrimSpace(line), want)
					}
					return nil
				}
			}
			ctx, cancel := cliutil.SignalContext(c)
			defer cancel()
			rep, err := r.Replace(ctx, opts)
			return finishRun(g, rep, err, func(w io.Writer) error { return writeReplace(w, rep) })
		},
	}
}

func readUptime(path string) (time.Duration, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("%s: empty", path)
	}
	s, err := strconv.ParseFloat(f[0], 64)
	if err != nil || s < 0 {
		return 0, fmt.Errorf("%s: %q is not an uptime", path, f[0])
	}
	return time.Duration(s * float64(time.Second)), nil
}

func writeReplace(w io.Writer, rep *lvm.ReplaceReport) error {
	if rep == nil {
		return nil
	}
	writeNotesAndVerification(w, rep.Notes, rep.Verification)
	if rep.OfflineSeconds > 0 {
		fmt.Fprintf(w, "the tables were offline for %s after boot (%.0f s; plus the time the host was down)\n", timeline.Human(rep.OfflineSeconds), rep.OfflineSeconds)
	}
	if rep.Verified {
		fmt.Fprintln(w, "verified: one image per member, integrity on every image as before")
	}
	if rep.UpdatedPlan != "" {
		fmt.Fprintf(w, "updated plan: %s (next: tbhost lvm status --plan %s)\n", rep.UpdatedPlan, rep.UpdatedPlan)
	}
	return nil
}
