// Package cliutil is the plumbing every tbhost command group shares: the
// global flags (--json, --root, --log-level), exit codes, JSON/human output
// and terminal detection. Command groups stay thin layers over their packages.
package cliutil

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/tbhost/tbhost/internal/execx"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// Exit codes of tbhost (monitor check uses the Nagios codes 0-3 instead).
const (
	ExitOK        = 0 // all is well
	ExitProblem   = 1 // the check found a problem, or tbhost refused to act
	ExitUsage     = 2 // bad command line
	ExitCannotRun = 3 // tbhost could not do its job (missing program, unreadable file, ...)
)

// Env is what a command may touch outside itself. main fills it with the
// real process's streams and an execx.Exec; tests fill it with buffers and
// an execx.Recorded runner.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Runner execx.Runner
	// IsTerminal reports whether stdin is an interactive terminal (for
	// confirmations and progress bars). nil means "no".
	IsTerminal func() bool
	// RootLVMOnPath: under --root DIR without DIR/lvm/, the lvm on PATH
	// answers for DIR's arrays. Only for rigs whose lvm is a stand-in for
	// DIR's (the Ansible tests' fake lvm2 over fixture trees);
	// otherwise this machine's lvm is never asked about another tree.
	// DefaultEnv sets it from TBHOST_ROOT_LVM_ON_PATH=1.
	RootLVMOnPath bool
}

// RootLVMOnPathEnv is the environment variable that sets Env.RootLVMOnPath.
const RootLVMOnPathEnv = "TBHOST_ROOT_LVM_ON_PATH"

// DefaultEnv is the real process's environment.
func DefaultEnv() *Env {
	return &Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Runner:        execx.Exec{Blocked: os.Stderr},
		IsTerminal:    TerminalStreams(os.Stdin, os.Stderr),
		RootLVMOnPath: os.Getenv(RootLVMOnPathEnv) == "1",
	}
}

// TerminalStreams is an Env.IsTerminal for the given streams: true when
// both are files open on a terminal (for confirmations and progress bars on
// stderr). A pipe, a file or a buffer is no terminal.
func TerminalStreams(stdin, stderr any) func() bool {
	return func() bool {
		for _, s := range []any{stdin, stderr} {
			f, ok := s.(interface{ Fd() uintptr })
			if !ok || !term.IsTerminal(int(f.Fd())) {
				return false
			}
		}
		return true
	}
}

const (
	envKey     = "tbhost.env"
	versionKey = "tbhost.version"
)

// Install puts env into the app so commands can find it with Get.
func Install(app *cli.App, env *Env) {
	setMetadata(app, envKey, env)
}

// SetVersion gives the app its version: --version prints v's text, and
// --json --version v itself (Run).
func SetVersion(app *cli.App, v VersionJSON) {
	app.Version = v.String()
	setMetadata(app, versionKey, v)
}

func setMetadata(app *cli.App, key string, v any) {
	if app.Metadata == nil {
		app.Metadata = map[string]any{}
	}
	app.Metadata[key] = v
}

// Globals are the global flags and the environment, as one command sees them.
type Globals struct {
	*Env
	JSON bool
	Root string // "/" unless --root was given
	Log  *slog.Logger
}

// GlobalFlags are accepted before any command: tbhost --json --root DIR lvm plan.
func GlobalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "json", Usage: "machine-readable JSON on stdout instead of human text"},
		&cli.StringFlag{Name: "root", Value: "/", Usage: "read /sys, /proc, /dev/disk/by-id and /run/udev under `DIR` (fixture trees, or a snapshot of another host)"},
		&cli.StringFlag{Name: "log-level", Value: "warn", Usage: "log detail on stderr: debug, info, warn or error",
			Action: func(_ *cli.Context, v string) error {
				var level slog.Level
				if err := level.UnmarshalText([]byte(v)); err != nil {
					return Usagef("--log-level %q: give debug, info, warn or error", v)
				}
				return nil
			}},
	}
}

// JSONFlag lets a leaf command accept --json after its name as well
// (tbhost lvm plan --example --json); Get honours it wherever it appears.
func JSONFlag() cli.Flag {
	return &cli.BoolFlag{Name: "json", Usage: "machine-readable JSON on stdout instead of human text"}
}

// Get returns the globals for the running command.
func Get(c *cli.Context) *Globals {
	env, _ := c.App.Metadata[envKey].(*Env)
	if env == nil {
		env = DefaultEnv()
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		level = slog.LevelWarn
	}
	root := c.String("root")
	if root == "" {
		root = "/"
	}
	json := false
	for _, cc := range c.Lineage() { // --json may come before or after the command
		json = json || cc.Bool("json")
	}
	return &Globals{
		Env:  env,
		JSON: json,
		Root: root,
		Log:  slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: level})),
	}
}

// QuietFlag is --quiet of the checks cron runs (prefix verify, integrity
// status, integrity verify-tables; monitor check has its own).
func QuietFlag() cli.Flag {
	return &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing when all is well, also on a terminal (without one, e.g. from cron, that is the default); findings are always printed"}
}

// SilentOnSuccess reports whether a check that found nothing prints
// nothing (issue 18, cron-quiet): with --quiet, or without a terminal
// (cron, a pipe), so cron mails only problems. --json always prints its
// document. What a check finds is printed in every case.
func (g *Globals) SilentOnSuccess(c *cli.Context) bool {
	return !g.JSON && (c.Bool("quiet") || !g.Terminal())
}

// Path returns p (an absolute path such as /sys/block) under --root.
func (g *Globals) Path(p string) string {
	if g.Root == "/" || g.Root == "" {
		return p
	}
	return filepath.Join(g.Root, p)
}

// Terminal reports whether an interactive terminal is attached.
func (g *Globals) Terminal() bool { return g.IsTerminal != nil && g.IsTerminal() }

// PrintJSON writes v as indented JSON followed by a newline.
func PrintJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode JSON: %w", err)
	}
	return nil
}

// Output prints v as JSON with --json, otherwise calls human.
func (g *Globals) Output(v any, human func(w io.Writer) error) error {
	if g.JSON {
		return PrintJSON(g.Stdout, v)
	}
	return human(g.Stdout)
}

// exitError is an error with an exit code; main prints it and exits.
type exitError struct {
	code    int
	err     error
	summary string // for the JSON error object when err is nil (Reported)
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }
func (e *exitError) ExitCode() int { return e.code }

// WithCode attaches an exit code to err. A nil err with a code exits quietly.
func WithCode(code int, err error) error { return &exitError{code: code, err: err} }

// Reported exits with code after the command printed its report (a check's
// findings): nothing more is printed in text mode; under --json the error
// object's message is summary ("3 findings").
func Reported(code int, summary string) error {
	return &exitError{code: code, summary: summary}
}

// Problem: the check found a problem, or tbhost refused (exit 1).
func Problem(err error) error { return WithCode(ExitProblem, err) }

// Problemf formats a refusal (exit 1).
func Problemf(format string, a ...any) error { return Problem(fmt.Errorf(format, a...)) }

// Usage: bad command line (exit 2).
func Usage(err error) error { return WithCode(ExitUsage, err) }

// Usagef formats a usage error (exit 2).
func Usagef(format string, a ...any) error { return Usage(fmt.Errorf(format, a...)) }

// InputError is the exit code rule for a file or directory the user named
// (a plan, playbook, checksum list, script, table directory): 3 (could not
// run) when it could not be read at all (missing, no permission, an I/O
// error: an *fs.PathError in err's chain), 1 (refused) when it was read and
// its content is refused. An error that already has a code keeps it.
func InputError(err error) error {
	if err == nil {
		return nil
	}
	var ec interface{ ExitCode() int }
	if errors.As(err, &ec) {
		return err
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return CannotRun(err)
	}
	return Problem(err)
}

// CannotRun: tbhost could not do its job (exit 3).
func CannotRun(err error) error { return WithCode(ExitCannotRun, err) }

// CodeOf returns the exit code for err: 0 for nil, the attached code, or 3.
func CodeOf(err error) int {
	if err == nil {
		return ExitOK
	}
	var ec interface{ ExitCode() int }
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return ExitCannotRun
}

// Confirm asks a yes/no question on the terminal. Without a terminal it
// refuses (returns an error naming the flag that skips the question).
func (g *Globals) Confirm(question, skipFlag string) error {
	if !g.Terminal() {
		return Problemf("%s: no terminal to ask on; re-run with %s to confirm unattended", question, skipFlag)
	}
	fmt.Fprintf(g.Stderr, "%s [type yes to continue] ", question)
	var answer string
	if _, err := fmt.Fscanln(g.Stdin, &answer); err != nil || strings.TrimSpace(answer) != "yes" {
		return Problemf("%s: not confirmed", question)
	}
	return nil
}

// GroupAction is the Action of tbhost and of every command group: with no
// argument it shows help; with an unknown command it is a usage error (exit 2)
// rather than urfave/cli's default exit 3.
func GroupAction(c *cli.Context) error {
	if c.Args().Present() {
		return Usagef("no command %q in %q; see %s --help", c.Args().First(), c.Command.FullName(), c.App.Name)
	}
	return cli.ShowSubcommandHelp(c)
}
