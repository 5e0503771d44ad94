package labcmd

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/lab/rehearse"
	"github.com/tbhost/tbhost/internal/sizes"
	"github.com/tbhost/tbhost/lvm"
	"github.com/urfave/cli/v2"
)

func rehearseCommand() *cli.Command {
	flags := append([]cli.Flag{
		&cli.StringFlag{Name: "hdd-size", Value: "256MiB", Usage: "virtual size of the largest planned HDD (the others keep their ratio)"},
		&cli.StringFlag{Name: "nvme-size", Value: "128MiB", Usage: "virtual size of the largest planned NVMe disk or partition"},
		&cli.DurationFlag{Name: "monitor-for", Value: 20 * time.Second, Usage: "how long monitor check samples under a read load"},
	}, vmFlags()...)
	return &cli.Command{
		Name:      "rehearse",
		Usage:     "build the plan's arrays on virtual disks shaped like its devices (scaled down) and report",
		ArgsUsage: "PLAN.yaml",
		Description: `Reads a plan (tbhost lvm plan -o PLAN.yaml, or --example) and boots the lab with one
virtual disk per planned device: same count, role (HDD: rotational SCSI; NVMe), block
sizes (512n/512e/4Kn), serials and WWNs, planned partitions at the same numbers; sizes
scaled down per role (the report says by how much). Inside the VM it re-plans the same
arrays for the scaled devices (tbhost lvm plan --hdd ... --nvme ...), applies that plan
(--yes --wait-sync), applies it again (must change nothing), runs tbhost lvm status
--plan, and tbhost monitor check under an O_DIRECT read load of every array; then it
compares each array's shape (type, stripes, data stripes, devices, integrity mode and
block size) with the original plan. Nothing on this machine's disks is touched.

Exit 0 when everything matched and passed, 1 when the rehearsal found a problem,
3 when the lab could not run. A rehearsal of 6 HDD + 2 NVMe takes 3-10 minutes.

EXAMPLES:
   tbhost lvm plan --example -o ref.yaml && tbhost lab rehearse ref.yaml
   tbhost lab rehearse --json --quiet plan.yaml`,
		Flags:  flags,
		Action: rehearseAction,
	}
}

func rehearseAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return cliutil.Usagef("lab rehearse needs exactly one PLAN.yaml (see tbhost lab rehearse --help)")
	}
	plan, err := lvm.LoadPlan(c.Args().First())
	if err != nil {
		return cliutil.InputError(err)
	}
	hs, err := sizes.Parse(c.String("hdd-size"))
	if err != nil || hs < 64<<20 {
		return cliutil.Usagef("--hdd-size %q: at least 64MiB", c.String("hdd-size"))
	}
	ns, err := sizes.Parse(c.String("nvme-size"))
	if err != nil || ns < 32<<20 {
		return cliutil.Usagef("--nvme-size %q: at least 32MiB", c.String("nvme-size"))
	}
	reh, err := rehearse.New(plan, rehearse.Options{HDDSizeMiB: int64(hs) >> 20, NVMeSizeMiB: int64(ns) >> 20, MonitorFor: c.Duration("monitor-for")})
	if err != nil {
		return cliutil.Problem(fmt.Errorf("cannot rehearse %s: %w", c.Args().First(), err))
	}
	ctx, stop := cliutil.SignalContext(c)
	defer stop()
	s, err := newSession(c, ctx)
	if err != nil {
		return err
	}
	cfg := s.config("rehearse")
	cfg.Disks = reh.Disks
	steps, res, err := s.lab().RunBatch(ctx, cfg, reh.Steps)
	if lerr := s.copyLog(res); lerr != nil && err == nil {
		err = lerr
	}
	if err != nil {
		s.cleanup(false)
		return cliutil.CannotRun(err)
	}
	rep := reh.Report(steps)
	rep.Plan = c.Args().First()
	rep.Duration = res.Duration.Round(time.Second).String()
	if !rep.OK || c.Bool("keep") || !s.ownWork {
		rep.Log, rep.WorkDir = res.LogPath, s.workDir
	}
	s.cleanup(rep.OK)
	if err := s.g.Output(rep, func(w io.Writer) error { return writeRehearsal(w, rep) }); err != nil {
		return err
	}
	if !rep.OK {
		return cliutil.WithCode(cliutil.ExitProblem, nil)
	}
	return nil
}

func writeRehearsal(w io.Writer, r *rehearse.Report) error {
	verdict := "OK: the plan's arrays build, verify and monitor clean on scaled-down virtual disks"
	if !r.OK {
		verdict = fmt.Sprintf("PROBLEM: %d finding(s)", len(r.Problems))
	}
	fmt.Fprintf(w, "rehearsal of %s: %s (%s)\n\n", r.Plan, verdict, r.Duration)
	for _, s := range r.Scales {
		fmt.Fprintf(w, "scale %-4s: 1:%.0f (largest %s -> %s)\n", s.Role, s.Factor, sizes.Format(s.Real), sizes.Format(s.Lab))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ARRAY\tTYPE\tSTRIPES\tDATA\tDEVICES\tINTEGRITY\tSIZE\tSTATE")
	for _, a := range r.Arrays {
		integ := func(s rehearse.ArrayShape) string {
			if !s.Integrity {
				return "no"
			}
			return fmt.Sprintf("%s/%d", s.IntegrityMode, s.IntegrityBlockSize)
		}
		p, g := a.Planned, a.Rehearsed
		fmt.Fprintf(tw, "%s (planned)\t%s\t%d\t%d\t%d\t%s\t%s\t\n", a.Array, p.Type, p.Stripes, p.DataStripes, p.Devices, integ(p), sizes.Format(p.Size))
		fmt.Fprintf(tw, "%s (lab)\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", a.Array, g.Type, g.Stripes, g.DataStripes, g.Devices, integ(g), sizes.Format(g.Size), a.State)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, s := range r.Steps {
		fmt.Fprintf(w, "step %-8s exit %d\n", s.Name, s.ExitCode)
	}
	fmt.Fprintf(w, "apply again changed nothing: %v\n", r.ReapplyNoop)
	fmt.Fprintf(w, "monitor check under read load: %s %s\n", r.MonitorStatus, r.MonitorLine)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if len(r.Problems) > 0 {
		fmt.Fprintln(w, "\nproblems:")
		for _, p := range r.Problems {
			fmt.Fprintf(w, "  - %s\n", strings.ReplaceAll(p, "\n", "\n    "))
		}
	}
	if r.WorkDir != "" {
		fmt.Fprintf(w, "\nwork dir %s, serial log %s\n", r.WorkDir, r.Log)
	}
	return nil
}
