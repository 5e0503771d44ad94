package lvm

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/blockdev/fixture"
)

// A reboot that gives the reference host's disks other kernel names (sdb
// and sdc swapped, or the two NVMe disks) changes no disk: lvm apply used
// to note "the machine's disks changed since planning (fingerprint
// differs)" for it. Now it says the names moved; a disk that really
// changed still gets the old note.
func TestApplyNoteAfterKernelNamesReshuffled(t *testing.T) {
	dir := t.TempDir()
	read := func(name string, h fixture.Host) *blockdev.Inventory {
		t.Helper()
		if err := h.Write(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		inv, err := blockdev.Read(context.Background(), blockdev.Options{Root: filepath.Join(dir, name)})
		if err != nil {
			t.Fatal(err)
		}
		return inv
	}
	p := mustPlan(t, read("plan-time", fixture.ReferenceHost()), PlanOptions{})
	swap := func(h fixture.Host, a, b string) fixture.Host {
		for i := range h.Disks {
			switch h.Disks[i].Name {
			case a:
				h.Disks[i].Name = b
			case b:
				h.Disks[i].Name = a
			}
		}
		return h
	}
	for _, c := range []struct {
		name string
		host fixture.Host
		want string
	}{
		{"hdds", swap(fixture.ReferenceHost(), "sdb", "sdc"), "other kernel names than at planning time (sdb is now sdc, sdc is now sdb"},
		{"nvme", swap(fixture.ReferenceHost(), "nvme0n1", "nvme1n1"), "(nvme0n1p4 is now nvme1n1p4, nvme1n1p4 is now nvme0n1p4"},
		{"hdds and a changed disk", func() fixture.Host {
			h := swap(fixture.ReferenceHost(), "sdb", "sdc")
			h.Disks = append(h.Disks, fixture.Disk{Name: "sdg", Size: 1 << 40, Rotational: true, Serial: "NEW1"})
			return h
		}(), "the machine's disks changed since planning"},
	} {
		inv := read(c.name, c.host)
		if inv.Fingerprint == p.InventoryFingerprint {
			t.Fatalf("%s: the fingerprint did not change", c.name)
		}
		if got := fingerprintNote(p, inv); !strings.Contains(got, c.want) {
			t.Errorf("%s: note %q, want %q", c.name, got, c.want)
		}
	}
}
