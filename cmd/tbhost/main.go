// Command tbhost plans, builds, checks and monitors the storage of a chess
// endgame tablebase server: LVM RAID 5 + dm-integrity over the HDDs, a RAID 0
// prefix store on NVMe, integrity scrubs, per-disk monitoring and runbooks.
package main

import (
	"os"

	"github.com/tbhost/tbhost/cmd/tbhost/commands/benchcmd"
	"github.com/tbhost/tbhost/cmd/tbhost/commands/integritycmd"
	"github.com/tbhost/tbhost/cmd/tbhost/commands/inventorycmd"
	"github.com/tbhost/tbhost/cmd/tbhost/commands/labcmd"
	"github.com/tbhost/tbhost/cmd/tbhost/commands/lvmcmd"
	"github.com/tbhost/tbhost/cmd/tbhost/commands/monitorcmd"
	"github.com/tbhost/tbhost/cmd/tbhost/commands/playbookcmd"
	"github.com/tbhost/tbhost/cmd/tbhost/commands/prefixcmd"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/urfave/cli/v2"
)

func main() {
	os.Exit(run(os.Args, cliutil.DefaultEnv()))
}

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func newApp(env *cliutil.Env) *cli.App {
	app := cliutil.NewApp(env, commands())
	app.Usage = "build and run the storage of a Syzygy tablebase server"
	app.Version = version
	app.EnableBashCompletion = true
	app.Description = description
	return app
}

const description = `tbhost turns the hard-won recipe of a public 7-piece Syzygy server into commands:
   plan and apply the LVM arrays (RAID 5 + dm-integrity over the HDDs, RAID 0 over NVMe),
   build and verify the table-prefix store, check integrity, watch per-disk reads, and run
   runbooks for provisioning, cutover and nightly health checks.

   Start with:  tbhost lvm plan --example     (the reference host, from an embedded snapshot)
                tbhost inventory              (this machine's disks)

EXIT CODES:
   0 ok, 1 a check found a problem or tbhost refused, 2 usage error, 3 could not run.
   (monitor check uses the Nagios convention: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.)`

// commands lists the command groups; each lives in its own package under
// cmd/tbhost/commands and is a thin layer over the library package.
func commands() []*cli.Command {
	return []*cli.Command{
		inventorycmd.Command(),
		lvmcmd.Command(),
		prefixcmd.Command(),
		monitorcmd.Command(),
		integritycmd.Command(),
		playbookcmd.Command(),
		benchcmd.Command(),
		labcmd.Command(),
	}
}

// run executes tbhost with args and returns the process exit code.
func run(args []string, env *cliutil.Env) int {
	return cliutil.Run(newApp(env), env, args)
}
