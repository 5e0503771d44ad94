// Command tbhost plans, builds, checks and monitors the storage of a chess
// endgame tablebase server: LVM RAID 5 + dm-integrity over the HDDs, a RAID 0
// prefix store on NVMe, integrity scrubs, per-disk monitoring and runbooks.
package main

import (
	"os"

	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/tbhostapp"
	"github.com/urfave/cli/v2"
)

func main() {
	os.Exit(run(os.Args, cliutil.DefaultEnv()))
}

// version and commit are set at build time (make build, make deb):
// -ldflags "-X main.version=... -X main.commit=...". The command tree lives
// in internal/tbhostapp so the packaging tool renders man pages from it.
var (
	version = "dev"
	commit  = "unknown"
)

func newApp(env *cliutil.Env) *cli.App {
	return tbhostapp.New(env, tbhostapp.Build{Version: version, Commit: commit})
}

// run executes tbhost with args and returns the process exit code.
func run(args []string, env *cliutil.Env) int {
	return cliutil.Run(newApp(env), env, args)
}
