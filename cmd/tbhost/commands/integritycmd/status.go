package integritycmd

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tbhost/tbhost/integrity"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/sizes"
	"github.com/tbhost/tbhost/lvm"
	"github.com/urfave/cli/v2"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "integrity counters per image, the disk under each, raid mismatches, sync state, health",
		ArgsUsage: "[VG | VG/LV]...",
		Description: `Reads LVM's report (lvs -a) for every RAID LV with dm-integrity, or the ones named:
   integrity mode and block size, the mismatch counter of each _rimage_N with the disk under it,
   raid_mismatch_count (from the last --syncaction check), sync action and percent, health.

   A counter lvs reports in a form tbhost cannot read (not a count, not a percent) is a problem:
   tbhost cannot judge that image, so it is NOT OK.

   Exit 0 when clean, 1 when any image counted a mismatch or the array is unhealthy (the message
   names the image and its disk), or when a VG/LV named holds no RAID LV with dm-integrity;
   3 when LVM could not be asked or answered nothing usable (lvm missing or failing, a report
   that is not LVM's JSON), or when there is no RAID LV with dm-integrity at all (nothing to
   work on). Suitable for cron and Nagios: when all is clean it prints nothing without a
   terminal or with --quiet.`,
		Flags:  []cli.Flag{cliutil.QuietFlag(), cliutil.JSONFlag()},
		Action: runStatus,
	}
}

func runStatus(c *cli.Context) error {
	g := cliutil.Get(c)
	ctx, stop := cliutil.SignalContext(c)
	defer stop()
	arrays, err := integrity.Status(ctx, lvm.Client{Runner: g.LVMRunner()}, c.Args().Slice()...)
	if err != nil {
		return statusError(err)
	}
	bad := 0
	for _, a := range arrays {
		if !a.OK {
			bad++
		}
	}
	if bad == 0 && g.SilentOnSuccess(c) {
		return nil // cron: mail only problems
	}
	// an object, as every tbhost JSON document: {"arrays": [...]} (issue 18)
	doc := struct {
		Arrays []integrity.ArrayStatus `json:"arrays"`
	}{arrays}
	if err := g.Output(doc, func(w io.Writer) error { return printStatus(w, arrays) }); err != nil {
		return err
	}
	if bad > 0 {
		return cliutil.Reported(cliutil.ExitProblem, fmt.Sprintf("%d of %d arrays have integrity problems (see problems)", bad, len(arrays)))
	}
	return nil
}

// statusError applies the exit code rule to integrity.Status's error:
// LVM not asked or its answer unusable (lvm missing or failing, a VG it
// does not know, a snapshot report missing, a directory, empty, truncated,
// not JSON) and nothing to work on (no RAID LV with dm-integrity) are 3,
// could not run; what it refused of what it was given (a named LV or VG
// without one) is 1.
func statusError(err error) error {
	var lvmErr *integrity.LVMError
	if errors.As(err, &lvmErr) || errors.Is(err, integrity.ErrNoIntegrityLV) {
		return cliutil.CannotRun(err)
	}
	return cliutil.Problem(err)
}

func printStatus(w io.Writer, arrays []integrity.ArrayStatus) error {
	for i, a := range arrays {
		if i > 0 {
			fmt.Fprintln(w)
		}
		verdict := "OK"
		if !a.OK {
			verdict = "PROBLEM"
		}
		health := a.Health
		if health == "" {
			health = "healthy"
		}
		// An inactive LV has no sync state and no readable counter (JSON:
		// "" and -1): the text says unknown, as lvm status does.
		sync := orUnknown(a.SyncAction)
		if a.SyncPercent >= 0 {
			sync = fmt.Sprintf("%s %.2f%%", sync, a.SyncPercent)
		}
		raidMM := "unknown"
		if a.RaidMismatchCount >= 0 {
			raidMM = fmt.Sprint(a.RaidMismatchCount)
		}
		fmt.Fprintf(w, "%s %s: %s, %s, %d images; integrity %s, %d-byte blocks; %s; sync %s; raid_mismatch_count %s\n",
			verdict, a.LV, a.SegType, sizes.Format(a.Size), len(a.Images), orDash(a.IntegrityMode), a.IntegrityBlockSize, health, sync, raidMM)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  IMAGE\tDISK\tDM\tMISMATCHES\tHEALTH")
		for _, img := range a.Images {
			mm := fmt.Sprint(img.Mismatches)
			switch {
			case img.Mismatches >= 0:
			case img.SegType == "integrity":
				mm = "unknown" // has integrity, but no readable count (inactive, or a value tbhost cannot read: see the problems)
			default:
				mm = "no integrity"
			}
			h := img.Health
			if h == "" {
				h = "ok"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", img.Name, strings.Join(img.Disks, "+"), orDash(img.KernelDev), mm, h)
		}
		tw.Flush()
		for _, n := range a.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
		for _, p := range a.Problems {
			fmt.Fprintf(w, "  PROBLEM: %s\n", p)
		}
	}
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
