// Package tbhostapp builds tbhost's whole command tree: main runs it, and the
// packaging tool (cmd/mkdeb) renders man pages from the same tree, so the
// pages can never describe commands the binary does not have.
package tbhostapp

import (
	"github.com/tbhost/tbhost/cmd/tbhost/commands/benchcmd"
	"github.com/tbhost/tbhost/cmd/tbhost/commands/integritycmd"
	"github.com/tbhost/tbhost/cmd/tbhost/commands/inventorycmd"
	"github.com/tbhost/tbhost/cmd/tbhost/commands/labcmd"
	"github.com/tbhost/tbhost/cmd/tbhost/commands/lvmcmd"
	"github.com/tbhost/tbhost/cmd/tbhost/commands/monitorcmd"
	"github.com/tbhost/tbhost/cmd/tbhost/commands/playbookcmd"
	"github.com/tbhost/tbhost/cmd/tbhost/commands/prefixcmd"
	"github.com/tbhost/tbhost/cmd/tbhost/commands/tablescmd"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/urfave/cli/v2"
)

// Build is what the linker stamps into the binary (-ldflags -X).
type Build struct {
	Version string // e.g. 0.0~git20261201.189c88f; "dev" for go run
	Commit  string // the git commit the binary was built from
}

// String is what tbhost --version prints after "tbhost version ".
func (b Build) String() string { return b.json().String() }

// json is what tbhost --version prints, with "dev" and "unknown" for what
// the linker did not stamp in.
func (b Build) json() cliutil.VersionJSON {
	j := cliutil.VersionJSON{Version: b.Version, Commit: b.Commit}
	if j.Version == "" {
		j.Version = "dev"
	}
	if j.Commit == "" {
		j.Commit = "unknown"
	}
	return j
}

// New is tbhost's cli.App: every command group, the global flags, and
// shell completion (--generate-bash-completion, used by the shipped
// bash and zsh completion scripts).
func New(env *cliutil.Env, b Build) *cli.App {
	app := cliutil.NewApp(env, Commands())
	app.Usage = "build and run the storage of a Syzygy tablebase server"
	cliutil.SetVersion(app, b.json())
	app.EnableBashCompletion = true
	app.Description = Description
	return app
}

// Description is the long help of tbhost (and the DESCRIPTION of tbhost(8)).
const Description = `tbhost turns the hard-won recipe of a public 7-piece Syzygy server into commands:
   plan and apply the LVM arrays (RAID 5 + dm-integrity over the HDDs, RAID 0 over NVMe),
   build and verify the table-prefix store, check integrity, watch per-disk reads, and run
   runbooks for provisioning, cutover and nightly health checks.

   Start with:  tbhost lvm plan --example     (the reference host, from an embedded snapshot)
                tbhost inventory              (this machine's disks)

EXIT CODES (the same rule in every command):
   0 ok; 1 a check found a problem, or tbhost refused what it was given (a plan, playbook
   or checksum list it read but does not accept); 2 usage error (the command line);
   3 could not run (a file, directory or program it needs is missing or unreadable, or
   nothing to work on: no array, no tables). monitor check uses the Nagios convention:
   0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (a usage error is 2 there too).

JSON:
   With --json stdout holds exactly one JSON document (snake_case keys), also when the
   command fails: then it has an "error" object {message, exit_code, command} next to
   whatever result there is. Schemas: docs/schemas/.`

// Commands lists the command groups; each lives in its own package under
// cmd/tbhost/commands and is a thin layer over the library package.
func Commands() []*cli.Command {
	return []*cli.Command{
		inventorycmd.Command(),
		lvmcmd.Command(),
		prefixcmd.Command(),
		tablescmd.Command(),
		monitorcmd.Command(),
		integritycmd.Command(),
		playbookcmd.Command(),
		benchcmd.Command(),
		labcmd.Command(),
	}
}
