package labcmd

import (
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/urfave/cli/v2"
)

func rehearseCommand() *cli.Command {
	return &cli.Command{
		Name:      "rehearse",
		Usage:     "apply an lvm plan to virtual disks shaped like the plan's devices, scaled down, and report",
		ArgsUsage: "PLAN.yaml",
		Flags:     vmFlags(),
		Action: func(c *cli.Context) error {
			return cliutil.CannotRun(errNoPlanFormat)
		},
	}
}
