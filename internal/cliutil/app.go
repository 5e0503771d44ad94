package cliutil

import (
	"errors"
	"fmt"

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
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return Usage(err)
		},
	}
	Install(app, env)
	return app
}

// Run runs app with args (args[0] is the program name), prints an error to
// env.Stderr as "tbhost: ...", and returns the process exit code. An error
// with an exit code and no text (a check that already printed its report)
// prints nothing.
func Run(app *cli.App, env *Env, args []string) int {
	err := app.Run(args)
	if err == nil {
		return ExitOK
	}
	var ec cli.ExitCoder
	if !(errors.As(err, &ec) && err.Error() == "") {
		fmt.Fprintf(env.Stderr, "tbhost: %v\n", err)
	}
	return CodeOf(err)
}
