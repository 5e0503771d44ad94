// Package lvmcmd is the CLI of `tbhost lvm plan|apply|status|replace`, a thin layer
// over the lvm package.
package lvmcmd

import (
	"errors"
	"fmt"
	"io"

	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/sizes"
	"github.com/tbhost/tbhost/internal/timeline"
	"github.com/tbhost/tbhost/lvm"
	"github.com/urfave/cli/v2"
)

// Command returns `tbhost lvm`.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "lvm",
		Usage: "plan, apply and check the tablebase arrays (RAID 5 + integrity on HDDs, RAID 0 on NVMe)",
		Description: `The tablebase storage is two LVM arrays:
     vg-hdd/tables   RAID 5 with dm-integrity over every HDD (--stripes = HDDs - 1)
     vg-nvme/prefix  RAID 0 over the NVMe disks or free NVMe partitions (the prefix store)

   1. tbhost lvm plan -o plan.yaml      look at the machine, write a plan; review it
   2. tbhost lvm apply --dry-run plan.yaml
   3. tbhost lvm apply plan.yaml        build exactly that, verify the result
   4. tbhost lvm status                 shape and health, any time (cron, Nagios)
   5. tbhost lvm replace VG/LV --old DEV|missing --new DEV   when a member fails`,
		Action:      cliutil.GroupAction,
		Subcommands: []*cli.Command{planCommand(), applyCommand(), statusCommand(), replaceCommand()},
	}
}

func planCommand() *cli.Command {
	return &cli.Command{
		Name:      "plan",
		Usage:     "plan the arrays for this machine (or a snapshot, or the reference host)",
		ArgsUsage: " ",
		Description: `Reads the inventory (tbhost inventory) and plans:
     vg-hdd/tables: RAID 5 + dm-integrity over all non-system rotational disks (or --hdd ...),
       --stripes = HDDs - 1 with every PV listed (without it lvm2 uses only 3 disks), sized by an
       explicit extent count that leaves room for the raid and integrity metadata
       (lvcreate -l 100%FREE --raidintegrity y fails on lvm2 2.03.16).
       --tables-size SIZE gives it that size instead (the rest of the VG stays free and is
       reported); SIZE above the VG, or below what the full 3-7 set needs on the planned
       filesystem, is refused (exit 1) with the largest/smallest size that works.
     vg-nvme/prefix: RAID 0 over the free NVMe disks and free NVMe partitions (or --nvme ...),
       all of it or --prefix-size.
   The integrity block size is the one lvcreate will really use: 4096 on 4Kn and 512e disks
   (lvcreate silently turns 512 into 4096 on 512e), 512..4096 on 512n; the plan says why.

   It refuses, naming the device and the way out: fewer than 3 HDDs, more than LVM's stripe
   limits, HDDs of very different sizes, mixed logical block sizes, a device that does not
   exist, the system disk as a whole, a device in use (mounted, swap, held by dm/md), a PV of
   another VG. A free partition of the system disk is fine (that is how the reference host's
   NVMe store is built). Devices carrying data are planned but apply refuses them unless you
   plan with --wipe DEV.

   The plan (YAML with -o, JSON with --json) names devices by /dev/disk/by-id with the serial,
   size and block sizes seen now, lists the exact commands, and carries a fingerprint of the
   inventory. -o never replaces an existing file (it may be the plan you reviewed) unless
   --force; the file is written atomically (temporary file, fsync, rename).

EXAMPLES:
   tbhost lvm plan --example                  the reference host (embedded snapshot)
   tbhost lvm plan --example --tables-size 21T   as its operators built it: room left in the VG
   tbhost lvm plan -o plan.yaml
   tbhost lvm plan --hdd sda --hdd sdb --hdd sdc --nvme nvme0n1p4 --nvme nvme1n1p4 -o plan.yaml
   tbhost --root /tmp/host-a lvm plan -o host-a.yaml     from tbhost inventory --snapshot`,
		Flags: []cli.Flag{
			cliutil.JSONFlag(),
			&cli.BoolFlag{Name: "example", Usage: "plan the embedded reference host (6 x 5.46 TiB 512e HDD, 2 x 476 GiB NVMe with a free 201 GiB partition each)"},
			&cli.StringSliceFlag{Name: "hdd", Usage: "HDD for the RAID 5 (`DEV`: sda, /dev/sda or a by-id name; repeat). Default: every non-system rotational disk"},
			&cli.StringSliceFlag{Name: "nvme", Usage: "NVMe disk or partition for the RAID 0 (`DEV`; repeat). Default: free NVMe disks and free NVMe partitions"},
			&cli.BoolFlag{Name: "no-nvme", Usage: "plan the HDD array only"},
			&cli.StringFlag{Name: "prefix-size", Usage: "size of vg-nvme/prefix (`SIZE`, e.g. 201GiB); default all of it"},
			&cli.StringFlag{Name: "tables-size", Usage: "size of vg-hdd/tables (`SIZE`: 21T, 21TiB, 23000000000000; K/M/G/T alone are binary as in lvm, KB/MB/GB/TB decimal), rounded up to whole extents per data stripe; default all the VG holds. Refused (exit 1) above what the VG holds, or below what the full 3-7 set needs (unless --allow-partial-set)"},
			&cli.BoolFlag{Name: "allow-partial-set", Usage: "accept a --tables-size too small for the full 3-7 table set (a smaller set on purpose): a warning instead of a refusal"},
			&cli.StringFlag{Name: "integrity-mode", Value: "journal", Usage: "dm-integrity mode: journal (crash-safe, writes twice) or bitmap (faster writes)"},
			&cli.IntFlag{Name: "integrity-blocksize", Usage: "dm-integrity block size `N` (512, 1024, 2048, 4096); default: what lvcreate will use for these disks"},
			&cli.StringSliceFlag{Name: "wipe", Usage: "allow apply to wipe `DEV` (its partitions/signatures/old PV); repeat. Still needs apply --yes"},
			&cli.BoolFlag{Name: "allow-size-mismatch", Usage: "accept HDDs of different sizes (RAID 5 uses the smallest size on all)"},
			&cli.StringFlag{Name: "tables-fs", Usage: "make a filesystem on vg-hdd/tables: ext4 or xfs (default: none)"},
			&cli.StringFlag{Name: "tables-mount", Usage: "mount point for --tables-fs (default /srv/syzygy)"},
			&cli.StringFlag{Name: "prefix-fs", Usage: "make a filesystem on vg-nvme/prefix: ext4 or xfs (default: none)"},
			&cli.StringFlag{Name: "prefix-mount", Usage: "mount point for --prefix-fs (default /srv/syzygy-prefix)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "save the plan as YAML to `FILE` (- for stdout); an existing FILE is refused unless --force"},
			&cli.BoolFlag{Name: "force", Usage: "let -o replace an existing plan file (it is replaced atomically)"},
			&cli.StringFlag{Name: "hdd-rate", Usage: "TIMELINE: one HDD's sequential `RATE` over its whole surface (default 160MiB/s)"},
			&cli.StringFlag{Name: "integrity-rate", Usage: "TIMELINE: dm-integrity initialisation `RATE` per image (default 80MiB/s)"},
			&cli.StringFlag{Name: "network-rate", Usage: "TIMELINE: copy `RATE` of the tables from the old host (default 112MiB/s, gigabit)"},
			&cli.StringFlag{Name: "scrub-rate", Usage: "TIMELINE: integrity scrub's total read `RATE` (default 400MiB/s, health-check's)"},
			&cli.DurationFlag{Name: "scrub-budget", Value: timeline.DefaultScrubBudget, Usage: "TIMELINE: the nightly scrub slice (health-check's)"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return cliutil.Usagef("plan takes no arguments (got %q); devices go with --hdd/--nvme", c.Args().First())
			}
			g := cliutil.Get(c)
			opts := lvm.PlanOptions{
				HDDs: c.StringSlice("hdd"), NVMes: c.StringSlice("nvme"), Wipe: c.StringSlice("wipe"),
				NoNVMe: c.Bool("no-nvme"), IntegrityMode: c.String("integrity-mode"),
				IntegrityBlockSize: c.Int("integrity-blocksize"), AllowSizeMismatch: c.Bool("allow-size-mismatch"),
				TablesFS: c.String("tables-fs"), TablesMount: c.String("tables-mount"),
				PrefixFS: c.String("prefix-fs"), PrefixMount: c.String("prefix-mount"),
			}
			if m := opts.IntegrityMode; m != "journal" && m != "bitmap" {
				return cliutil.Usagef("--integrity-mode %q: use journal or bitmap", m)
			}
			switch opts.IntegrityBlockSize {
			case 0, 512, 1024, 2048, 4096:
			default:
				return cliutil.Usagef("--integrity-blocksize %d: use 512, 1024, 2048 or 4096", opts.IntegrityBlockSize)
			}
			// flag values are usage errors (exit 2); MakePlan refuses the
			// same values (exit 1) when a caller other than the CLI passes them
			for _, fc := range []struct {
				flag  string
				check func(string) string
			}{{"tables-fs", lvm.CheckFilesystem}, {"prefix-fs", lvm.CheckFilesystem}, {"tables-mount", lvm.CheckMountPoint}, {"prefix-mount", lvm.CheckMountPoint}} {
				if f, v := fc.flag, c.String(fc.flag); v != "" {
					if why := fc.check(v); why != "" {
						return cliutil.Usagef("--%s %q: %s", f, v, why)
					}
				}
			}
			if s := c.String("prefix-size"); s != "" {
				n, err := sizes.Parse(s)
				if err != nil || n <= 0 {
					return cliutil.Usagef("--prefix-size %q: write a size such as 201GiB", s)
				}
				opts.PrefixSize = n
			}
			if s := c.String("tables-size"); s != "" {
				n, err := sizes.Parse(s)
				if err != nil || n <= 0 {
					return cliutil.Usagef("--tables-size %q: write a size such as 21T (= 21TiB, binary as in lvm) or 23000000000000", s)
				}
				opts.TablesSize = n
			} else if c.Bool("allow-partial-set") {
				return cliutil.Usagef("--allow-partial-set goes with --tables-size (without it the tables LV takes all of the VG)")
			}
			var inv *blockdev.Inventory
			var err error
			if c.Bool("example") {
				if g.Root != "/" {
					return cliutil.Usagef("--example plans the embedded reference host; it does not combine with --root")
				}
				inv, err = lvm.ReferenceInventory(c.Context)
			} else {
				inv, err = blockdev.Read(c.Context, lvm.InventoryOptions(g.Root, g.Runner))
			}
			if err != nil {
				return cliutil.CannotRun(err)
			}
			plan, err := lvm.MakePlan(inv, opts)
			if err != nil {
				var ref *lvm.RefusedError
				if errors.As(err, &ref) {
					return cliutil.Problem(err)
				}
				return cliutil.CannotRun(err)
			}
			fo, err := forecastOptions(c)
			if err != nil {
				return err
			}
			fo.AllowPartialSet = c.Bool("allow-partial-set")
			if err := plan.AddForecast(fo); err != nil {
				var ref *lvm.RefusedError
				if errors.As(err, &ref) {
					return cliutil.Problem(err)
				}
				return cliutil.CannotRun(err)
			}
			out := c.String("output")
			if out == "-" {
				y, err := plan.YAML()
				if err != nil {
					return cliutil.CannotRun(err)
				}
				_, err = g.Stdout.Write(y)
				return err
			}
			if out != "" {
				var exists *lvm.PlanExistsError
				if err := plan.Save(out, c.Bool("force")); errors.As(err, &exists) {
					return cliutil.Problem(err)
				} else if err != nil {
					return cliutil.CannotRun(err)
				}
			}
			return g.Output(plan, func(w io.Writer) error {
				if err := plan.WriteText(w); err != nil {
					return err
				}
				if out != "" {
					fmt.Fprintf(w, "\nplan saved to %s; next: tbhost lvm apply --dry-run %s\n", out, out)
				} else {
					fmt.Fprintln(w, "\nsave it with -o plan.yaml, review it, then: tbhost lvm apply --dry-run plan.yaml")
				}
				return nil
			})
		},
	}
}

// forecastOptions reads lvm plan's TIMELINE rate flags.
func forecastOptions(c *cli.Context) (lvm.ForecastOptions, error) {
	var o lvm.ForecastOptions
	for _, f := range []struct {
		flag string
		v    *int64
	}{{"hdd-rate", &o.Rates.HDD}, {"integrity-rate", &o.Rates.Integrity}, {"network-rate", &o.Rates.Network}, {"scrub-rate", &o.Rates.Scrub}} {
		if s := c.String(f.flag); s != "" {
			r, err := sizes.ParseRate(s)
			if err != nil || r <= 0 {
				return o, cliutil.Usagef("--%s %q: write a rate such as 150MiB/s", f.flag, s)
			}
			*f.v = r
		}
	}
	if c.IsSet("scrub-budget") {
		if o.Rates.ScrubBudget = c.Duration("scrub-budget"); o.Rates.ScrubBudget <= 0 {
			return o, cliutil.Usagef("--scrub-budget %s: a duration above 0, e.g. 2h", o.Rates.ScrubBudget)
		}
	}
	return o, nil
}
