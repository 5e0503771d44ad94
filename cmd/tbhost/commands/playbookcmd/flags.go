package playbookcmd

import (
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/urfave/cli/v2"
)

// onePlaybook is the one playbook (NAME or FILE) a subcommand takes. Flags
// typed after it (tbhost playbook run provision-host --dry-run) were moved
// before it by cliutil.Run, as for every command.
func onePlaybook(c *cli.Context, verb string) (string, error) {
	if c.NArg() != 1 {
		return "", cliutil.Usagef("%s takes one playbook (NAME or FILE), got %q", verb, c.Args().Slice())
	}
	return c.Args().First(), nil
}
