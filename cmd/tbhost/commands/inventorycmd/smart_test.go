package inventorycmd

import (
	"os"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/smart"
)

func TestInventorySMARTWarnsNamingTheDiskAndTheReplace(t *testing.T) {
	read := func(n string) string {
		b, err := os.ReadFile("../../../../internal/smart/testdata/" + n)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	r := execx.NewRecorded()
	r.On(execx.Reply{Stdout: read("ata-healthy.json")}, smart.Argv("/dev/sda")...)
	r.On(execx.Reply{Stdout: read("ata-failed.json"), ExitCode: 72}, smart.Argv("/dev/sdc")...)
	inv := &blockdev.Inventory{Disks: []*blockdev.Device{
		{Name: "sda", Path: "/dev/sda", Kind: "disk", Size: 1 << 40, PV: &blockdev.PV{Device: "/dev/sda", VG: "vg-hdd"}},
		{Name: "sdc", Path: "/dev/sdc", Kind: "disk", Size: 1 << 40, Serial: "ZAD0C3D4", PV: &blockdev.PV{Device: "/dev/sdc", VG: "vg-hdd"}},
	}}
	var b strings.Builder
	if err := writeSMART(t.Context(), &b, r, inv); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"sda        PASSED", "sdc        FAILED", "WARNING /dev/sdc (serial ZAD0C3D4): SMART overall-health assessment FAILED", "tbhost lvm replace --dry-run vg-hdd/LV --old /dev/sdc"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "WARNING /dev/sda") {
		t.Errorf("a healthy disk warned:\n%s", out)
	}
}
