package cliutil

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// NewApp is tbhost's cli.App with the given command groups: the global
// flags, streams from env, usage errors as exit 2, unknown commands as
// usage errors, and errors left to Run (not printed or exited by urfave/cli).
// main adds the name's description; tests build the same app with only the
// groups they exercise.
func NewApp(env *Env, commands []*cli.Command) *cli.App {
	app := &cli.App{
		Name:           "tbhost",
		Flags:          GlobalFlags(),
		Commands:       commands,
		Reader:         env.Stdin,
		Writer:         env.Stdout,
		ErrWriter:      env.Stderr,
		ExitErrHandler: func(*cli.Context, error) {}, // Run maps errors to exit codes
		Action:         GroupAction,
		OnUsageError:   usageError,
	}
	// urfave/cli calls a command's own OnUsageError only, so every command
	// and subcommand needs it: an unknown flag or a bad flag value
	// (--jobs abc) anywhere is exit 2, not 3. A command with its own
	// (monitor check: Nagios UNKNOWN) keeps it.
	walkCommands(commands, func(c *cli.Command) {
		if c.OnUsageError == nil {
			c.OnUsageError = usageError
		}
		// --json is global; every leaf takes it after its name too
		// (tbhost monitor serve --json fails as JSON, not as an unknown flag).
		if len(c.Subcommands) == 0 && !hasFlag(c.Flags, "json") {
			c.Flags = append(c.Flags, JSONFlag())
		}
		refuseArguments(c)
	})
	Install(app, env)
	return app
}

// refuseArguments makes a leaf command that names no arguments in its
// usage (ArgsUsage "") refuse any with a usage error: urfave/cli passes
// them to the action, which ignored them, so "prefix verify --tables A B"
// verified A only and exited 0.
func refuseArguments(c *cli.Command) {
	if len(c.Subcommands) > 0 || c.ArgsUsage != "" || c.Action == nil {
		return
	}
	action := c.Action
	c.Action = func(ctx *cli.Context) error {
		if ctx.Args().Present() {
			hint := "every input is a flag"
			if hasFlag(c.Flags, "tables") {
				hint = "give each table directory with its own --tables"
			}
			path := commandPath(ctx)
			return Usagef("%s takes no arguments (got %q): %s (see %s --help)", strings.TrimPrefix(path, ctx.App.Name+" "), ctx.Args().Slice(), hint, path)
		}
		return action(ctx)
	}
}

// usageError makes a flag parsing error a usage error (exit 2) that points
// at the command's help.
func usageError(c *cli.Context, err error, _ bool) error {
	return Usagef("%w (see %s --help)", err, commandPath(c))
}

// commandPath is the running command as typed: "tbhost prefix verify".
func commandPath(c *cli.Context) string {
	var names []string
	for _, cc := range c.Lineage() {
		if cc.Command != nil && cc.Command.Name != "" && cc.Command.Name != c.App.Name {
			names = append([]string{cc.Command.Name}, names...)
		}
	}
	return strings.Join(append([]string{c.App.Name}, names...), " ")
}

// Run runs app with args (args[0] is the program name), prints an error to
// env.Stderr as "tbhost: ...", and returns the process exit code. An error
// with an exit code and no text (a check that already printed its report)
// prints nothing.
//
// Flags typed after a leaf command's arguments are moved before them first
// (FlagsFirst), so every command takes them where users type them.
//
// With --json anywhere on the command line, stdout gets exactly one JSON
// document, also when the command fails: see jsonout.go for the rule.
func Run(app *cli.App, env *Env, args []string) int {
	args = FlagsFirst(app, args)
	iv := parseInvocation(app, args)
	var c *capture
	if iv.json {
		c = &capture{under: env.Stdout}
		runEnv := *env
		runEnv.Stdout = c
		saved := app.Writer
		app.Writer = c
		Install(app, &runEnv)
		defer func() { app.Writer = saved; Install(app, env) }()
	}
	err := app.Run(args)
	code := CodeOf(err)
	var ec cli.ExitCoder
	if err != nil && !(errors.As(err, &ec) && err.Error() == "") {
		fmt.Fprintf(env.Stderr, "tbhost: %v\n", err)
	}
	if c != nil && iv.version && code == ExitOK {
		// the version as a document, not urfave/cli's line of text
		if v, ok := app.Metadata[versionKey].(VersionJSON); ok {
			c.buf.Reset()
			if err := json.NewEncoder(&c.buf).Encode(v); err != nil {
				fmt.Fprintf(env.Stderr, "tbhost: write JSON: %v\n", err)
				return ExitCannotRun
			}
		}
	}
	if c != nil {
		e := ErrorJSON{ExitCode: code, Command: iv.name()}
		if code != ExitOK {
			e.Message = errorMessage(err, code)
		}
		if werr := finishJSON(env.Stdout, c, c.streaming(), e); werr != nil {
			fmt.Fprintf(env.Stderr, "tbhost: write JSON: %v\n", werr)
			if code == ExitOK {
				code = ExitCannotRun
			}
		}
	}
	return code
}
