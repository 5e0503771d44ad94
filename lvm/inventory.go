package lvm

import (
	"context"
	"fmt"

	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/execx"
)

// InventoryOptions are the blockdev options tbhost uses for a root: on the
// real machine ("/") devices are probed for signatures and LVM is asked
// (pvs) for PV membership; under a snapshot root the snapshot's own
// findings are replayed and nothing runs.
func InventoryOptions(root string, r execx.Runner) blockdev.Options {
	opts := blockdev.Options{Root: root}
	if root == "" || root == "/" {
		opts.Probe = true
		opts.PVs = func(ctx context.Context) ([]blockdev.PV, error) { return listPVs(ctx, Client{Runner: r}) }
	}
	return opts
}

func listPVs(ctx context.Context, c Client) ([]blockdev.PV, error) {
	pvs, err := c.PVs(ctx)
	if err != nil {
		if execx.NotFound(err) {
			return nil, fmt.Errorf("lvm is not installed (apt-get install lvm2): %w", err)
		}
		return nil, err
	}
	out := make([]blockdev.PV, 0, len(pvs))
	for _, p := range pvs {
		out = append(out, blockdev.PV{Device: p.Name, VG: p.VG, UUID: p.UUID})
	}
	return out, nil
}
