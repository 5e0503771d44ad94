package lvm

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/fixturetree"
)

// Real captures of plan + apply in the VM lab (see testdata/lab-apply-2.03.16/README.md).
const realLab = "testdata/lab-apply-2.03.16"

// fixtureTree unpacks a committed fixture tree of internal/blockdev (the
// reference host: the archive this package embeds) and returns its root.
func fixtureTree(t testing.TB, name string) string {
	t.Helper()
	if name == "reference-host" {
		return fixturetree.Dir(t, filepath.Join("refhost", "reference-host.tar.gz"))
	}
	return fixturetree.Dir(t, filepath.Join("..", "internal", "blockdev", "testdata", name+".tar.gz"))
}

// labCapture unpacks a capture the VM lab recorded (internal/lab/testdata/captures:
// sysfs, procfs and lvm's JSON reports of one lab state) and returns its root.
func labCapture(t testing.TB, capture string) string {
	t.Helper()
	return fixturetree.Dir(t, filepath.Join("..", "internal", "lab", "testdata", "captures", capture+".tar.gz"))
}

func realTree(t *testing.T, name string) string {
	t.Helper()
	return fixtureTree(t, name)
}

func realRunner(t *testing.T) *execx.Recorded {
	t.Helper()
	return realReports(t, "lvs.json", "pvs.json", "vgs.json")
}

// realReports is a runner answering tbhost's lvs, pvs and vgs with the
// named reports of realLab.
func realReports(t *testing.T, lvs, pvs, vgs string) *execx.Recorded {
	t.Helper()
	rec := execx.NewRecorded()
	for file, argv := range map[string][]string{lvs: LVsArgv(), pvs: PVsArgv(), vgs: VGsArgv()} {
		b, err := os.ReadFile(filepath.Join(realLab, file))
		if err != nil {
			t.Fatal(err)
		}
		rec.On(execx.Reply{Stdout: string(b)}, argv...)
	}
	return rec
}

// beforeFreeExtents are arrays as the guest's plans (written before tbhost
// reported vg_free_extents) record them.
func beforeFreeExtents(as []Array) []Array {
	out := append([]Array(nil), as...)
	for i := range out {
		out[i].VGFreeExtents = 0
	}
	return out
}

// The plan made in the guest is what tbhost plans from the guest's snapshot.
func TestRealLabSnapshotReplansTheSame(t *testing.T) {
	guest, err := LoadPlan(filepath.Join(realLab, "plan.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	inv, err := blockdev.Read(context.Background(), blockdev.Options{Root: realTree(t, "lab-guest-real")})
	if err != nil {
		t.Fatal(err)
	}
	here := mustPlan(t, inv, PlanOptions{})
	// 6 x 256 MiB: 63 extents per PV = 59 image + 1 rmeta + 2 imeta + 1 spare
	if got := here.Arrays[0].VGFreeExtents; got != 6 {
		t.Errorf("vg-hdd free extents %d, want 6 (one spare per PV)", got)
	}
	if got := here.Arrays[1].VGFreeExtents; got != 0 {
		t.Errorf("vg-nvme free extents %d, want 0 (2 x 31 extents, all in the LV)", got)
	}
	if !reflect.DeepEqual(here.Commands, guest.Commands) || !reflect.DeepEqual(here.Devices, guest.Devices) || !reflect.DeepEqual(beforeFreeExtents(here.Arrays), guest.Arrays) {
		t.Errorf("replayed plan differs from the guest's:\n%v\n%v", here.Commands, guest.Commands)
	}
	if here.InventoryFingerprint != guest.InventoryFingerprint {
		t.Errorf("fingerprint %s, guest %s", here.InventoryFingerprint, guest.InventoryFingerprint)
	}
}

// Applying the plan again to the machine it built (real lvs/pvs/vgs, real
// sysfs with the dm holders) writes nothing and verifies.
func TestRealLabSecondApplyWritesNothing(t *testing.T) {
	p, err := LoadPlan(filepath.Join(realLab, "plan.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rec := realRunner(t)
	a := Applier{Runner: rec, Inventory: func(ctx context.Context) (*blockdev.Inventory, error) {
		return blockdev.Read(ctx, blockdev.Options{Root: realTree(t, "lab-guest-real-applied")})
	}, ProbeLV: func(string) ([]blockdev.Signature, error) { return nil, nil }}
	for _, dry := range []bool{true, false} {
		rep, err := a.Apply(context.Background(), p, ApplyOptions{DryRun: dry})
		if err != nil {
			t.Fatalf("dry=%v: %v", dry, err)
		}
		if !rep.Verified {
			t.Errorf("dry=%v: not verified %v", dry, rep.Verification)
		}
		for _, s := range rep.Steps {
			if s.Action != "skip" {
				t.Errorf("dry=%v: %s %v", dry, s.Action, s.Argv)
			}
		}
	}
	for _, c := range rec.Calls {
		if c[1] != "pvs" && c[1] != "vgs" && c[1] != "lvs" {
			t.Errorf("wrote %v", c)
		}
	}
}

// A plan for other disks must not take the built machine's PVs: the
// applied machine's HDDs are PVs of vg-hdd, busy with dm holders.
func TestRealLabBuiltDisksAreNotPlannedAgain(t *testing.T) {
	inv, err := blockdev.Read(context.Background(), blockdev.Options{Root: realTree(t, "lab-guest-real-applied")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = MakePlan(inv, fixedOpts(PlanOptions{HDDVG: "vg-other", NVMeVG: "vg-other2"}))
	if err == nil || !strings.Contains(err.Error(), "sda is in use: held by vg--hdd-tables_rmeta_0 (dm-0)") {
		t.Fatalf("err %v", err)
	}
}

// status from the real capture: healthy, in sync, the plan's shape.
func TestRealLabStatus(t *testing.T) {
	p, err := LoadPlan(filepath.Join(realLab, "plan.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	inv, err := blockdev.Read(context.Background(), blockdev.Options{Root: realTree(t, "lab-guest-real-applied")})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Status(context.Background(), realRunner(t), StatusOptions{Plan: p, Inventory: inv})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Arrays[0].State != "ok" || rep.Arrays[0].SyncPercent != 100 || len(rep.Arrays[0].Images) != 6 {
		t.Fatalf("%+v", rep.Arrays[0])
	}
	if got := rep.Arrays[0].Images[3].Devices; len(got) != 1 || got[0] != "/dev/sdd (serial HDD4)" {
		t.Errorf("image 3 on %v", got)
	}
}

// A member deleted from the kernel (real lvm2 2.03.16 report): status says
// which image lost its disk, and exits with a problem.
func TestRealLabDegradedStatus(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(realLab, "lvs-degraded.json"))
	if err != nil {
		t.Fatal(err)
	}
	rec := execx.NewRecorded()
	rec.On(execx.Reply{Stdout: string(b), Stderr: "  WARNING: VG vg-hdd is missing PV"},
		"lvm", "lvs", "--reportformat", "json", "--units", "b", "--nosuffix", "-o", strings.Join(lvFields, ","), "-a")
	rep, err := Status(context.Background(), rec, StatusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || rep.Arrays[0].State != "problem" {
		t.Fatalf("degraded array reported %+v", rep.Arrays[0])
	}
	all := strings.Join(rep.Arrays[0].Problems, "\n")
	for _, w := range []string{`vg-hdd/tables: health "partial"`, "partial (a PV is missing)", "tables_rimage_2 has lost its disk"} {
		if !strings.Contains(all, w) {
			t.Errorf("problems lack %q:\n%s", w, all)
		}
	}
	if rep.Arrays[1].State != "ok" {
		t.Errorf("prefix %+v", rep.Arrays[1])
	}
}

// The 512e boot: integrity block size 4096 and bitmap mode verified on real lvs output.
func TestRealLab512eVerifies(t *testing.T) {
	p, err := LoadPlan(filepath.Join(realLab, "plan-512e-wipe-fs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lvs := parseLVs(t, "lab-apply-2.03.16/lvs-512e-bitmap-ext4.json")
	byName := map[string]string{}
	for _, d := range p.Devices {
		byName["/dev/"+d.Name] = d.ID
	}
	for _, a := range p.Arrays {
		for _, c := range VerifyArray(a, lvs, p.ExtentSize, func(pv string) string { return byName[pv] }) {
			if !c.OK {
				t.Errorf("%s", c)
			}
		}
	}
	if p.Arrays[0].Integrity.BlockSize != 4096 || p.Arrays[0].Integrity.Mode != "bitmap" || !strings.Contains(p.Arrays[0].Integrity.Why, "512e") {
		t.Errorf("%+v", p.Arrays[0].Integrity)
	}
}

// The free partition of a system disk (real guest sysfs): planned from the
// snapshot exactly as in the guest, and the applied machine is not planned again.
func TestRealLabPartitionsOfTheSystemDisk(t *testing.T) {
	guest, err := LoadPlan(filepath.Join(realLab, "plan-partitions.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	inv, err := blockdev.Read(context.Background(), blockdev.Options{Root: realTree(t, "lab-guest-real-partitions")})
	if err != nil {
		t.Fatal(err)
	}
	if d := inv.Find("nvme0n1"); d.Role != blockdev.RoleSystem {
		t.Errorf("nvme0n1 role %s", d.Role)
	}
	here := mustPlan(t, inv, PlanOptions{PrefixSize: 600 << 20})
	if !reflect.DeepEqual(here.Commands, guest.Commands) || !reflect.DeepEqual(beforeFreeExtents(here.Arrays), guest.Arrays) {
		t.Errorf("replayed plan differs:\n%v\n%v", here.Commands, guest.Commands)
	}
	if got := here.Arrays[1].Devices; len(got) != 2 || !strings.HasSuffix(got[0], "NVME1-part2") || !strings.HasSuffix(got[1], "NVME2-part2") {
		t.Errorf("prefix on %v", got)
	}
	refused(t, inv, PlanOptions{NVMes: []string{"nvme0n1", "nvme1n1p2"}}, "nvme0n1 is the system disk (holds /boot on nvme0n1p1)")
	refused(t, inv, PlanOptions{NVMes: []string{"nvme0n1p1", "nvme1n1p2"}}, "nvme0n1p1 is in use: mounted at /boot")
	after, err := blockdev.Read(context.Background(), blockdev.Options{Root: realTree(t, "lab-guest-real-partitions-applied")})
	if err != nil {
		t.Fatal(err)
	}
	if p := after.Find("nvme1n1p2"); p.PV == nil || p.PV.VG != "vg-nvme" || len(p.Holders) != 1 {
		t.Errorf("nvme1n1p2 after apply: %+v", p)
	}
}

// A member missing at boot (the lab's capture): lvm2 2.03.16 leaves
// raid+integrity inactive; status must say so.
func TestStatusInactiveArray(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(fixturetree.Dir(t, "../internal/lab/testdata/captures/raid5-missing-member-boot.tar.gz"), "lvm", "lvs.json"))
	if err != nil {
		t.Fatalf("committed lab capture: %v", err)
	}
	rec := execx.NewRecorded()
	rec.On(execx.Reply{Stdout: string(b)}, "lvm", "lvs", "--reportformat", "json", "--units", "b", "--nosuffix", "-o", strings.Join(lvFields, ","), "-a")
	rep, err := Status(context.Background(), rec, StatusOptions{Names: []string{"vg-hdd/tables"}})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(rep.Arrays[0].Problems, "\n")
	if rep.OK || !strings.Contains(all, "vg-hdd/tables is not active (attr rwi---r-p-)") {
		t.Errorf("problems:\n%s", all)
	}
}
