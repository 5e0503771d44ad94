// Package inventorycmd is the CLI of `tbhost inventory`, a thin layer over
// internal/blockdev.
package inventorycmd

import (
	"fmt"
	"io"

	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/lvm"
	"github.com/urfave/cli/v2"
)

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

   The host model: RAM (MemTotal of /proc/meminfo), each disk's NUMA node (its
   controller's numa_node; "none" without NUMA), and FINDINGS: a disk whose I/O scheduler
   is not what the reference host's operators run (mq-deadline on HDDs, none on NVMe),
   with the command that switches it now and the udev rule that keeps it (JSON:
   mem_total, disks[].numa_node, findings[] {code io-scheduler, device, text, fix}).
   Findings are advice: the exit status stays 0.

   On this machine (--root /) it reads the first and last 128 KiB of each device to find
   signatures (run as root) and asks LVM (pvs) for PV membership.

   --snapshot DIR copies every file it read into DIR (plus the signatures and PVs it found),
   so that   tbhost --root DIR inventory   and   tbhost --root DIR lvm plan
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
