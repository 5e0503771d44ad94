package benchcmd

import (
	"fmt"

	"github.com/tbhost/tbhost/internal/bench"
	"github.com/tbhost/tbhost/internal/cliutil"
)

// diskWatch finds the disks under the tables' filesystems for bench
// probe's per-disk table; when they cannot be found the probe still runs,
// with a note saying why there is no table.
func diskWatch(g *cliutil.Globals, set *bench.TableSet) (*bench.DiskWatch, []string) {
	dw, err := bench.NewDiskWatch(g.Root, set.Paths())
	if err != nil {
		return nil, []string{fmt.Sprintf("no per-disk reads: %v", err)}
	}
	var notes []string
	for _, v := range dw.Via {
		notes = append(notes, "tables on "+v)
	}
	return dw, notes
}
