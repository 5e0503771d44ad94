// Package integritycmd is `tbhost integrity`: status, scrub and
// verify-tables, a thin layer over package integrity.
package integritycmd

import (
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/urfave/cli/v2"
)

// Command returns the `integrity` command group.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "integrity",
		Usage: "dm-integrity status, a scrub that finishes under load, table checksums",
		Description: `dm-integrity verifies a block only when something reads it: a block nobody reads can rot
   for years. These commands close that gap:

     tbhost integrity status                 mismatch counters per image, the disk under each, health
     tbhost integrity scrub vg-hdd/tables    read every block of every image, throttled and resumable
     tbhost integrity verify-tables ...      table files against the published checksum lists

   Exit codes: 0 all clean, 1 a mismatch or an unhealthy array was found, 2 usage, 3 could not run.`,
		Action:      cliutil.GroupAction,
		Subcommands: []*cli.Command{statusCommand(), scrubCommand(), verifyCommand()},
	}
}

// progressBar draws a byte progress bar on stderr when a terminal is
// attached and --json is off; otherwise it returns nil.
func progressBar(g *cliutil.Globals, desc string, total int64) *progressbar.ProgressBar {
	if g.JSON || !g.Terminal() || total <= 0 {
		return nil
	}
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(g.Stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowBytes(true),
		progressbar.OptionUseIECUnits(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
}
