package blockdev

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tbhost/tbhost/internal/sizes"
)

// WriteText prints the inventory as a table a sysadmin reads, followed by
// the details (id, signatures, users) of each device.
func WriteText(w io.Writer, inv *Inventory) error {
	ram := "unknown (no /proc/meminfo)"
	if inv.MemTotal > 0 {
		ram = fmt.Sprintf("%s (MemTotal %d kB)", sizes.Format(inv.MemTotal), inv.MemTotal>>10)
	}
	fmt.Fprintf(w, "RAM %s\n\n", ram)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE\tROLE\tSIZE\tBLOCKS\tROT\tTRANSPORT\tSCHED\tNUMA\tMODEL\tSERIAL\tIN USE / CONTENT")
	for _, d := range inv.All() {
		name := d.Name
		if d.Kind == "part" {
			name = "  " + d.Name
		}
		rot := "0"
		if d.Rotational {
			rot = "1"
		}
		use := append(d.Busy(), d.Content()...)
		if d.Kind == "disk" {
			use = append(directBusy(d), d.Content()...)
		}
		u := strings.Join(use, "; ")
		if u == "" {
			u = "-"
		}
		model, serial, transport, sched, numa := d.Model, d.Serial, d.Transport, d.Scheduler, "none"
		if d.NUMANode >= 0 {
			numa = fmt.Sprint(d.NUMANode)
		}
		if d.Kind == "part" {
			model, serial, transport, sched, numa = "", "", "", "", ""
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, d.Role, sizes.Format(d.Size),
			fmt.Sprintf("%d/%d %s", d.LogicalBlockSize, d.PhysicalBlockSize, d.BlockFormat()),
			rot, dash(transport), dash(sched), dash(numa), dash(model), dash(serial), u)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, d := range inv.All() {
		fmt.Fprintf(w, "%s: %s", d.Name, d.Ref())
		if d.WWN != "" {
			fmt.Fprintf(w, "  wwn %s", d.WWN)
		}
		if d.Kind == "disk" {
			fmt.Fprintf(w, "  role %s (%s)", d.Role, d.RoleWhy)
		}
		fmt.Fprintln(w)
		if d.ProbeError != "" {
			fmt.Fprintf(w, "  ! %s\n", d.ProbeError)
		}
	}
	if len(inv.Findings) > 0 {
		fmt.Fprintln(w, "\nFINDINGS")
		for _, f := range inv.Findings {
			fmt.Fprintf(w, "  %s [%s]\n", f.Text, f.Code)
			for _, c := range f.Fix {
				fmt.Fprintf(w, "    %s\n", c)
			}
		}
	}
	if !inv.PVsKnown {
		fmt.Fprintln(w, "\nLVM PV membership: unknown (lvm was not asked, or failed: see the warnings; it needs lvm2, and root)")
	}
	for _, warn := range inv.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	fmt.Fprintf(w, "fingerprint %s\n", inv.Fingerprint)
	return nil
}

// directBusy is Busy without the partitions' uses (they have their own rows).
func directBusy(d *Device) []string {
	c := *d
	c.Partitions = nil
	return c.Busy()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
