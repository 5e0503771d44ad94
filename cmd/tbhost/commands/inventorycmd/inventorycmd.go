// Package inventorycmd is the CLI of `tbhost inventory`, a thin layer over
// internal/blockdev.
package inventorycmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/lvm"
	"github.com/urfave/cli/v2"
)

// saveLVMReports copies LVM's reports into DIR/lvm/lvs.json and pvs.json,
// the layout monitor, lvm status and integrity status replay under
// --root DIR (issue 18). Without lvm (or without root) the snapshot has
// none, and a note says what the replay will lack.
func saveLVMReports(ctx context.Context, g *cliutil.Globals, dir string) {
	reports := map[string][]byte{}
	for name, argv := range map[string][]string{"lvs.json": lvm.LVsArgv(), "pvs.json": lvm.PVsArgv()} {
		res, err := g.LVMRunner().Run(ctx, argv...)
		if err != nil {
			fmt.Fprintf(g.Stderr, "note: the snapshot has no LVM report (%v): a replay shows no LVM health\n", err)
			return
		}
		reports[name] = res.Stdout
	}
	if err := os.MkdirAll(filepath.Join(dir, "lvm"), 0o755); err != nil {
		fmt.Fprintf(g.Stderr, "note: the snapshot has no LVM report: %v\n", err)
		return
	}
	for name, b := range reports {
		if err := os.WriteFile(filepath.Join(dir, "lvm", name), b, 0o644); err != nil {
			fmt.Fprintf(g.Stderr, "note: the snapshot's LVM report is incomplete: %v\n", err)
			os.RemoveAll(filepath.Join(dir, "lvm")) // none rather than half: a replay must not mislead
			return
		}
	}
}

// Command returns `tbhost inventory`.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "inventory",
		Usage: "list the machine's block devices: ids, sizes, block sizes, signatures, users, role",
		Description: `Lists every disk and partition: stable id (/dev/disk/by-id, WWN preferred), model,
   serial, size, logical/physical block size (512n, 512e, 4Kn), rotational, transport,
   scheduler, partitions, holders (device-mapper, md), mounts, swap, filesystem/RAID/LVM
   signatures, LVM PV membership, and a role guess: hdd, nvme, ssd, or system (the disk
   holding /, /boot, /boot/efi, /usr or /var; never planned as a whole).

   On this machine (--root /) it reads the first and last 128 KiB of each device to find
   signatures (run as root) and asks LVM (pvs) for PV membership.

   --snapshot DIR copies every file it read into DIR (plus the signatures and PVs it found,
   and LVM's reports as DIR/lvm/lvs.json and pvs.json when lvm can be asked),
   so that   tbhost --root DIR inventory,   tbhost --root DIR lvm plan   (and lvm status,
   integrity status, monitor topology)
   replay this machine anywhere: plan on your laptop, review, then apply on the host.

EXAMPLES:
   tbhost inventory
   tbhost inventory --json | jq '.disks[] | {name, role, serial}'
   tbhost inventory --snapshot /tmp/host-a && tar czf host-a.tgz -C /tmp host-a`,
		Flags: []cli.Flag{
			cliutil.JSONFlag(),
			&cli.StringFlag{Name: "snapshot", Usage: "also copy everything read into `DIR`, for --root DIR replays elsewhere"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return cliutil.Usagef("inventory takes no arguments (got %q)", c.Args().First())
			}
			g := cliutil.Get(c)
			opts := lvm.InventoryOptions(g.Root, g.Runner)
			var inv *blockdev.Inventory
			var err error
			if dir := c.String("snapshot"); dir != "" {
				inv, err = blockdev.Snapshot(c.Context, opts, dir)
				if err == nil {
					saveLVMReports(c.Context, g, dir)
					g.Log.Info("snapshot written", "dir", dir)
					fmt.Fprintf(g.Stderr, "snapshot written to %s (replay: tbhost --root %s inventory)\n", dir, dir)
				}
			} else {
				inv, err = blockdev.Read(c.Context, opts)
			}
			if err != nil {
				return cliutil.CannotRun(err)
			}
			return g.Output(inv, func(w io.Writer) error { return blockdev.WriteText(w, inv) })
		},
	}
}
