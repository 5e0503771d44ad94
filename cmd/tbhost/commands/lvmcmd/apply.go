package lvmcmd

import (
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/urfave/cli/v2"
)

func applyCommand() *cli.Command {
	return &cli.Command{Name: "apply", Usage: "apply a saved plan (not yet)", Action: func(c *cli.Context) error {
		return cliutil.CannotRun(nil)
	}}
}

func statusCommand() *cli.Command {
	return &cli.Command{Name: "status", Usage: "shape and health of the arrays (not yet)", Action: func(c *cli.Context) error {
		return cliutil.CannotRun(nil)
	}}
}
