// Package inventorycmd is the CLI of `tbhost inventory`, a thin layer over
// internal/blockdev.
package inventorycmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/smart"
	"github.com/tbhost/tbhost/lvm"
	"github.com/urfave/cli/v2"
)

// saveLVMReports copies LVM's reports into DIR/lvm/lvs.json, pvs.json and
// vgs.json, the layout monitor, lvm status and integrity status replay under
// --root DIR (issue 18), and lvm apply --dry-run and lvm replace --dry-run
// too (they ask vgs as well). Without lvm (or without root) the snapshot has
// none, and a note says what the replay will lack.
func saveLVMReports(ctx context.Context, g *cliutil.Globals, dir string) {
	reports := map[string][]byte{}
	for name, argv := range map[string][]string{"lvs.json": lvm.LVsArgv(), "pvs.json": lvm.PVsArgv(), "vgs.json": lvm.VGsArgv()} {
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

   The host model: RAM (MemTotal of /proc/meminfo), each disk's NUMA node (its
   controller's numa_node; "none" without NUMA), and FINDINGS: a disk whose I/O scheduler
   is not what the reference host's operators run (mq-deadline on HDDs, none on NVMe),
   with the command that switches it now and the udev rule that keeps it (JSON:
   mem_total, disks[].numa_node, findings[] {code io-scheduler, device, text, fix}).
   Findings are advice: the exit status stays 0.

   On this machine (--root /) it reads the first and last 128 KiB of each device to find
   signatures (run as root) and asks LVM (pvs) for PV membership.

   --snapshot DIR copies every file it read into DIR (plus the signatures and PVs it found,
   and LVM's reports as DIR/lvm/lvs.json, pvs.json and vgs.json when lvm can be asked),
   so that   tbhost --root DIR inventory,   tbhost --root DIR lvm plan   (and lvm status,
   integrity status, monitor topology)
   replay this machine anywhere: plan on your laptop, review, then apply on the host.

   Where smartctl (smartmontools) is installed, the text output ends with each disk's SMART
   health (overall assessment, reallocated and pending sectors); a PV of a VG with concerns
   gets a WARNING naming the disk and the tbhost lvm replace command.

EXAMPLES:
   tbhost inventory
   tbhost inventory --json | jq '.disks[] | {name, role, serial}'
   tbhost inventory --snapshot /tmp/host-a && tar czf host-a.tgz -C /tmp host-a`,
		Flags: []cli.Flag{
			cliutil.JSONFlag(),
			&cli.StringFlag{Name: "snapshot", Usage: "also copy everything read into `DIR`, for --root DIR replays elsewhere"},
		},
		Action: func(c *cli.Context) error {
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
			return g.Output(inv, func(w io.Writer) error {
				if err := blockdev.WriteText(w, inv); err != nil {
					return err
				}
				if g.Root == "/" && c.String("snapshot") == "" { // the disks of a snapshot cannot be asked
					return writeSMART(c.Context, w, g.Runner, inv)
				}
				return nil
			})
		},
	}
}

// writeSMART prints each whole disk's SMART health, and a WARNING for a
// disk with concerns; nothing when smartctl is not installed.
func writeSMART(ctx context.Context, w io.Writer, r execx.Runner, inv *blockdev.Inventory) error {
	header := false
	for _, d := range inv.Disks {
		if d.Size == 0 || d.Removable {
			continue
		}
		h, err := smart.Read(ctx, r, d.Path)
		if errors.Is(err, smart.ErrNotInstalled) {
			return nil
		}
		if !header {
			fmt.Fprintln(w, "\nSMART")
			header = true
		}
		if err != nil {
			fmt.Fprintf(w, "  %-10s not read: %v\n", d.Name, err)
			continue
		}
		state := "no assessment"
		if h.Passed != nil && *h.Passed {
			state = "PASSED"
		} else if h.Passed != nil {
			state = "FAILED"
		}
		fmt.Fprintf(w, "  %-10s %-13s reallocated %s, pending %s\n", d.Name, state, count(h.Reallocated), count(h.Pending))
		if c := h.Concerns(); len(c) > 0 {
			advice := "replace it before it fails"
			if d.PV != nil && d.PV.VG != "" {
				advice = fmt.Sprintf("replace it: tbhost lvm replace --dry-run %s/LV --old %s --new /dev/NEWDISK (tbhost lvm status names the LV)", d.PV.VG, d.Path)
			}
			fmt.Fprintf(w, "  WARNING %s (serial %s): %s; %s\n", d.Path, orDash(h.Serial, d.Serial), strings.Join(c, "; "), advice)
		}
	}
	return nil
}

func count(n int64) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func orDash(a, b string) string {
	if a != "" {
		return a
	}
	if b != "" {
		return b
	}
	return "-"
}
