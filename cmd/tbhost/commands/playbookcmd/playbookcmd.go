// Package playbookcmd is `tbhost playbook`: list, show, validate, run and
// schedule runbooks. It is a thin layer over package playbooks.
package playbookcmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/playbooks"
	"github.com/urfave/cli/v2"
)

// Command returns the `playbook` command group.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "playbook",
		Usage: "runbooks: provisioning, pre-cutover checks, nightly health checks",
		Description: `A playbook is a reviewed, resumable, logged runbook: parameters and ordered steps,
   each a tbhost command (run as a subprocess of this binary) or an explicit argv, with
   skip checks for idempotent re-runs, preconditions, typed confirmations, timeouts and
   retries. Built in: provision-host, migrate, pre-cutover, health-check, replace-disk
   (tbhost playbook list).

   tbhost playbook show provision-host                 what it does, its parameters
   tbhost playbook run --dry-run provision-host        every command it would run
   tbhost playbook run --set hdd=/dev/disk/by-id/wwn-0x5000c500a1b2c3d4,... provision-host
   tbhost playbook run --resume provision-host         continue after an interruption
   tbhost playbook schedule health-check --install     nightly, as a systemd timer

   The format is documented in docs/playbooks.md.`,
		Action: cliutil.GroupAction,
		Subcommands: []*cli.Command{
			listCommand(), showCommand(), validateCommand(), runCommand(), scheduleCommand(),
		},
	}
}

// load reads a playbook given as an embedded name or a file path.
func load(arg string) (*playbooks.Playbook, error) {
	if arg == "" {
		return nil, cliutil.Usagef("name a playbook (built in: %s) or a playbook file", strings.Join(playbooks.EmbeddedNames(), ", "))
	}
	if strings.ContainsAny(arg, "/") || strings.HasSuffix(arg, ".yaml") || strings.HasSuffix(arg, ".yml") {
		src, err := os.ReadFile(arg)
		if err != nil {
			return nil, cliutil.CannotRun(fmt.Errorf("read playbook: %w", err))
		}
		pb, err := playbooks.Parse(arg, src)
		if err != nil {
			return nil, cliutil.Problem(err)
		}
		return pb, nil
	}
	pb, err := playbooks.Embedded(arg)
	if err != nil {
		var list *playbooks.ErrorList
		if errors.As(err, &list) {
			return nil, cliutil.CannotRun(fmt.Errorf("built-in playbook is broken (a tbhost bug): %w", err))
		}
		return nil, cliutil.Usage(fmt.Errorf("%w; a playbook file needs a path such as ./%s.yaml", err, arg))
	}
	return pb, nil
}

func listCommand() *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "the built-in playbooks",
		Flags: []cli.Flag{cliutil.JSONFlag()},
		Action: func(c *cli.Context) error {
			g := cliutil.Get(c)
			type entry struct {
				Name        string   `json:"name"`
				Summary     string   `json:"summary"`
				Description string   `json:"description"`
				Steps       []string `json:"steps"`
			}
			var list []entry
			for _, name := range playbooks.EmbeddedNames() {
				pb, err := playbooks.Embedded(name)
				if err != nil {
					return cliutil.CannotRun(err)
				}
				list = append(list, entry{pb.Name, summary(pb.Description), pb.Description, pb.StepNames()})
			}
			// an object, as every tbhost JSON document (issue 18)
			return g.Output(map[string][]entry{"playbooks": list}, func(w io.Writer) error {
				for _, e := range list {
					fmt.Fprintf(w, "%-16s %s\n", e.Name, e.Summary)
				}
				fmt.Fprintln(w, "\nMore: tbhost playbook show NAME; a dry run: tbhost playbook run --dry-run NAME")
				return nil
			})
		},
	}
}

func showCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "a playbook's description, parameters and steps",
		ArgsUsage: "NAME|FILE",
		Flags:     []cli.Flag{cliutil.JSONFlag()},
		Action: func(c *cli.Context) error {
			arg, err := onePlaybook(c, "show")
			if err != nil {
				return err
			}
			g := cliutil.Get(c)
			pb, err := load(arg)
			if err != nil {
				return err
			}
			return g.Output(describe(pb), func(w io.Writer) error { return writeShow(w, pb) })
		},
	}
}

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:      "validate",
		Usage:     "check playbooks: syntax (with line:column), parameters, templates, and that every tbhost step names a command and flags this build has",
		ArgsUsage: "[NAME|FILE...]  (default: every built-in playbook)",
		Flags:     []cli.Flag{cliutil.JSONFlag()},
		Action: func(c *cli.Context) error {
			g := cliutil.Get(c)
			args := c.Args().Slice()
			if len(args) == 0 {
				args = playbooks.EmbeddedNames()
			}
			type result struct {
				Playbook string   `json:"playbook"`
				OK       bool     `json:"ok"`
				Errors   []string `json:"errors,omitempty"`
				Warnings []string `json:"warnings,omitempty"`
			}
			var results []result
			bad, unreadable := 0, 0
			for _, a := range args {
				res := result{Playbook: a}
				pb, err := load(a)
				if cliutil.CodeOf(err) == cliutil.ExitCannotRun {
					unreadable++ // the file could not be read: exit 3
				}
				if err == nil {
					var warns playbooks.ErrorList
					warns, err = playbooks.Validate(pb, liveCommands{c.App})
					for _, w := range warns {
						res.Warnings = append(res.Warnings, w.Error())
					}
				}
				if err != nil {
					if cliutil.CodeOf(err) == cliutil.ExitUsage {
						return err // not a playbook name or file at all
					}
					res.Errors = strings.Split(err.Error(), "\n")
					bad++
				}
				res.OK = len(res.Errors) == 0
				results = append(results, res)
			}
			err := g.Output(map[string][]result{"playbooks": results}, func(w io.Writer) error {
				for _, r := range results {
					for _, e := range r.Errors {
						fmt.Fprintf(w, "%s\n", e)
					}
					for _, e := range r.Warnings {
						fmt.Fprintf(w, "warning: %s\n", e)
					}
					if r.OK {
						fmt.Fprintf(w, "ok: %s\n", r.Playbook)
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			if unreadable > 0 {
				return cliutil.CannotRun(fmt.Errorf("%d of %d playbooks could not be read (named above)", unreadable, len(results)))
			}
			if bad > 0 {
				return cliutil.WithCode(cliutil.ExitProblem, fmt.Errorf("%d of %d playbooks have errors", bad, len(results)))
			}
			return nil
		},
	}
}

// setValue collects --set NAME=VALUE flags without splitting on commas
// (a list parameter takes commas itself).
type setValue struct{ list []string }

func (s *setValue) Set(v string) error { s.list = append(s.list, v); return nil }
func (s *setValue) String() string     { return strings.Join(s.list, " ") }

func setFlag() cli.Flag {
	return &cli.GenericFlag{Name: "set", Value: &setValue{}, Usage: "set a parameter: `NAME=VALUE` (repeatable; list parameters take commas or repeats)"}
}

func sets(c *cli.Context) []string {
	if v, ok := c.Generic("set").(*setValue); ok {
		return append([]string(nil), v.list...)
	}
	return nil
}

// defaultStateDir is /var/lib/tbhost/playbooks for root, else under
// $XDG_STATE_HOME (~/.local/state).
func defaultStateDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/tbhost/playbooks"
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "tbhost", "playbooks")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "tbhost", "playbooks")
	}
	return filepath.Join(os.TempDir(), "tbhost-playbooks")
}

// selfArgv is how steps run this tbhost: the binary, with the global flags
// that must carry over (--root, --log-level).
func selfArgv(c *cli.Context) ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the tbhost binary to run steps with: %w", err)
	}
	argv := []string{exe}
	for _, cc := range c.Lineage() {
		if cc.IsSet("root") && cc.String("root") != "/" {
			argv = append(argv, "--root", cc.String("root"))
			break
		}
	}
	for _, cc := range c.Lineage() {
		if cc.IsSet("log-level") {
			argv = append(argv, "--log-level", cc.String("log-level"))
			break
		}
	}
	return argv, nil
}

type prompter struct {
	g  *cliutil.Globals
	in *bufio.Reader
}

func (p *prompter) Terminal() bool { return p.g.Terminal() }

func (p *prompter) Ask(prompt string) (string, error) {
	fmt.Fprint(p.g.Stderr, prompt)
	line, err := p.in.ReadString('\n')
	if err != nil && line == "" {
		return "", err
	}
	return strings.TrimSpace(line), nil
}

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run a playbook (a built-in NAME or a FILE)",
		ArgsUsage: "NAME|FILE",
		Description: `Runs the steps in order, streaming their output, and prints a summary (done /
   skipped (already done) / failed, with times). Every run appends to a JSON-lines log and
   rewrites a state file in --state-dir/NAME/; --resume continues after the last completed
   step, and refuses if the playbook or its parameters changed since (--accept-changes).
   Ctrl-C or SIGTERM kills the running step and everything it started (a step marked
   on_interrupt: finish, like lvm apply, completes first; a second Ctrl-C kills it); the
   state file says where the run stopped.

   Exit codes: 0 done, 1 a step failed or was refused, 2 usage error, 3 could not run,
   130 interrupted. Playbooks marked nagios (health-check) exit with the worst step's
   Nagios status (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN) and print nothing when all is OK.`,
		Flags: []cli.Flag{
			setFlag(),
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "print every step with its resolved command and checks; run nothing"},
			&cli.BoolFlag{Name: "resume", Usage: "continue after the last completed step of the previous run"},
			&cli.StringFlag{Name: "from", Usage: "start at step `STEP` (the steps before it are not run)"},
			&cli.BoolFlag{Name: "accept-changes", Usage: "with --resume/--from: continue although the playbook or its parameters changed since the last run"},
			&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "pass every confirmation gate (unattended runs: review with --dry-run first)"},
			&cli.StringFlag{Name: "hold-file", Usage: "set the playbook's hold_file parameter: its final step waits while `FILE` exists"},
			&cli.StringFlag{Name: "state-dir", Value: defaultStateDir(), Usage: "keep the state file, log and lock under `DIR`/NAME"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no step headers or step output, only the summary (and nothing at all from a nagios playbook that is OK)"},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "nagios playbooks: show step output and the summary even when all is OK"},
			cliutil.JSONFlag(),
		},
		Action: runAction,
	}
}

func runAction(c *cli.Context) error {
	arg, err := onePlaybook(c, "playbook run")
	if err != nil {
		return err
	}
	g := cliutil.Get(c)
	pb, err := load(arg)
	if err != nil {
		return err
	}
	setArgs := sets(c)
	if hf := c.String("hold-file"); hf != "" {
		if _, ok := paramNamed(pb, "hold_file"); !ok {
			return cliutil.Usagef("--hold-file: playbook %s has no hold_file parameter", pb.Name)
		}
		setArgs = append(setArgs, "hold_file="+hf)
	}
	set, err := playbooks.ParseSet(setArgs)
	if err != nil {
		return cliutil.Usage(err)
	}
	vals, err := playbooks.Resolve(pb, set)
	if err != nil {
		return cliutil.Usage(err)
	}
	self, err := selfArgv(c)
	if err != nil {
		return cliutil.CannotRun(err)
	}
	cmds := liveCommands{c.App}
	warns, verr := playbooks.ValidateWith(pb, cmds, vals)
	for _, w := range warns {
		if !pb.Nagios || c.Bool("verbose") {
			fmt.Fprintf(g.Stderr, "warning: %v\n", w)
		}
	}
	quiet := c.Bool("quiet") || (pb.Nagios && !c.Bool("verbose"))
	var stepOut io.Writer = g.Stdout
	if g.JSON {
		stepOut = g.Stderr
	}
	if quiet {
		// The engine then writes only what needs a human: a hold-file wait, a log it cannot write.
		stepOut = g.Stderr
	}
	eng := &playbooks.Engine{
		Runner:   playbooks.ProcRunner{},
		Self:     self,
		Commands: cmds,
		Prompt:   &prompter{g: g, in: bufio.NewReader(g.Stdin)},
		Out:      stepOut,
	}
	if c.Bool("dry-run") {
		steps, err := eng.Plan(pb, vals)
		if err != nil {
			return cliutil.Problem(err)
		}
		out := g.Output(map[string]any{"playbook": pb.Name, "file": pb.File, "params": vals.Canonical(pb), "steps": steps},
			func(w io.Writer) error { playbooks.WritePlan(w, pb, vals, self, steps); return nil })
		if out != nil {
			return out
		}
		if verr != nil {
			return cliutil.Problem(fmt.Errorf("the playbook does not validate against this build:\n%w", verr))
		}
		return nil
	}
	if verr != nil {
		return nagiosOr(pb, cliutil.ExitProblem, fmt.Errorf("the playbook does not validate against this build; nothing was run:\n%w", verr), g)
	}
	ctx, force, stop := interrupts(contextOf(c))
	defer stop()
	store := &playbooks.Store{Dir: filepath.Join(c.String("state-dir"), pb.Name)}
	rep, err := eng.Run(ctx, pb, playbooks.Options{
		Values: vals, Store: store, Resume: c.Bool("resume"), From: c.String("from"),
		AcceptChanges: c.Bool("accept-changes"), Yes: c.Bool("yes"), Quiet: quiet, Force: force,
	})
	if err != nil {
		var refused *playbooks.RefusedError
		var usage *playbooks.UsageError
		switch {
		case errors.As(err, &usage):
			return cliutil.Usage(err)
		case errors.As(err, &refused):
			return nagiosOr(pb, cliutil.ExitProblem, err, g)
		}
		return nagiosOr(pb, cliutil.ExitCannotRun, err, g)
	}
	if g.JSON {
		if err := cliutil.PrintJSON(g.Stdout, rep); err != nil {
			return err
		}
	} else if pb.Nagios {
		if rep.ExitCode != 0 || c.Bool("verbose") {
			rep.WriteNagios(g.Stdout)
		}
	} else if rep.ResumeArgs = resumeArgs(c); rep.WriteSummary(g.Stdout) != nil {
		return cliutil.CannotRun(err)
	}
	if rep.ExitCode != 0 {
		return cliutil.WithCode(rep.ExitCode, nil)
	}
	return nil
}

// resumeArgs are the flags a --resume of this run must repeat: a
// --state-dir that is not the default (the state is there) and every
// --set (the state is checked against the parameters). Issue 18: the hint
// said "tbhost playbook run --resume NAME" and then refused.
func resumeArgs(c *cli.Context) []string {
	var args []string
	if c.IsSet("state-dir") {
		args = append(args, "--state-dir", c.String("state-dir"))
	}
	for _, s := range sets(c) {
		args = append(args, "--set", s)
	}
	return args
}

// nagiosOr reports a run that could not start: Nagios playbooks print an
// UNKNOWN status line and exit 3, others exit with code.
func nagiosOr(pb *playbooks.Playbook, code int, err error, g *cliutil.Globals) error {
	if pb.Nagios {
		fmt.Fprintf(g.Stdout, "%s UNKNOWN - %v\n", strings.ToUpper(pb.Name), err)
		return cliutil.WithCode(3, nil)
	}
	return cliutil.WithCode(code, err)
}

// interrupts turns the first SIGINT/SIGTERM into ctx's cancellation (the
// run stops after killing, or finishing, the running step) and a second one
// into force's (even a step marked on_interrupt: finish is killed).
func interrupts(parent context.Context) (ctx, force context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	force, cancelForce := context.WithCancel(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for n := 0; ; n++ {
			select {
			case <-sigs:
				if n == 0 {
					cancel()
					continue
				}
				cancelForce()
				return
			case <-done:
				return
			}
		}
	}()
	return ctx, force, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
		cancelForce()
	}
}

func contextOf(c *cli.Context) context.Context {
	if c.Context != nil {
		return c.Context
	}
	return context.Background()
}

func paramNamed(pb *playbooks.Playbook, name string) (playbooks.Param, bool) {
	for _, p := range pb.Params {
		if p.Name == name {
			return p, true
		}
	}
	return playbooks.Param{}, false
}

// summary is the first sentence of a description (up to the first colon).
func summary(desc string) string {
	s := strings.Join(strings.Fields(desc), " ")
	if i := strings.IndexAny(s, ".:"); i > 0 {
		s = s[:i]
	}
	return s
}
