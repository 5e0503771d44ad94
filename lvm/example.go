package lvm

import (
	"context"
	_ "embed"
	"fmt"
	"os"

	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/treearchive"
)

// referenceHostTar is a snapshot (`tbhost inventory --snapshot`) of the
// reference tablebase host: six 5.46 TiB 512e HDDs, two 476 GiB NVMe disks
// with the OS on md RAID 1 and a free 201 GiB partition each. It is the one
// committed copy of the reference host: written by the test-fixture builder
// (internal/blockdev/fixture.ReferenceHost, whose test checks this archive
// and rewrites it with -update) and read by the tests as a fixture tree.
//
//go:embed refhost/reference-host.tar.gz
var referenceHostTar []byte

// ReferenceInventory reads the embedded reference host's snapshot like a
// real --root tree (it is unpacked into a temporary directory, removed
// before returning).
func ReferenceInventory(ctx context.Context) (*blockdev.Inventory, error) {
	dir, err := os.MkdirTemp("", "tbhost-reference-host-")
	if err != nil {
		return nil, fmt.Errorf("reference host: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := treearchive.Unpack(referenceHostTar, dir); err != nil {
		return nil, fmt.Errorf("reference host: %w", err)
	}
	inv, err := blockdev.Read(ctx, blockdev.Options{Root: dir})
	if err != nil {
		return nil, fmt.Errorf("reference host: %w", err)
	}
	inv.Root = "embedded reference host (tbhost lvm plan --example)"
	return inv, nil
}
