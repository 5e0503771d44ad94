package lvm

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/blockdev/fixture"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/lvm/lvmfake"
)

// lab is the VM lab's machine: a plan made on it, a tree the applier reads
// (changed by the test to swap disks, add signatures, ...), and a fake LVM.
type lab struct {
	plan *Plan
	host fixture.Host
	dir  string
	lvm  *lvmfake.LVM
	out  strings.Builder
}

func newLab(t *testing.T, planOpts PlanOptions) *lab {
	t.Helper()
	l := &lab{host: fixture.LabGuest(), dir: t.TempDir(), lvm: lvmfake.New()}
	if err := l.host.Write(filepath.Join(l.dir, "plan-time")); err != nil {
		t.Fatal(err)
	}
	inv, err := blockdev.Read(context.Background(), blockdev.Options{Root: filepath.Join(l.dir, "plan-time")})
	if err != nil {
		t.Fatal(err)
	}
	l.plan = mustPlan(t, inv, planOpts)
	for _, d := range l.host.Disks {
		l.lvm.Disk("/dev/"+d.Name, d.Size)
	}
	for _, d := range inv.Disks {
		for _, link := range d.IDLinks {
			l.lvm.Disk(d.Path, d.Size, link)
		}
	}
	return l
}

// applier reads the lab's host as it is now (rewritten each time).
func (l *lab) applier(t *testing.T) Applier {
	n := 0
	return Applier{
		Runner: l.lvm,
		Inventory: func(ctx context.Context) (*blockdev.Inventory, error) {
			n++
			dir := filepath.Join(l.dir, fmt.Sprintf("now-%d-%d", time.Now().UnixNano(), n))
			if err := l.host.Write(dir); err != nil {
				return nil, err
			}
			return blockdev.Read(ctx, blockdev.Options{Root: dir})
		},
		Out:     &l.out,
		ProbeLV: func(string) ([]blockdev.Signature, error) { return nil, nil },
		Sleep:   func(context.Context, time.Duration) error { return nil },
	}
}

func (l *lab) apply(t *testing.T, opts ApplyOptions) (*ApplyReport, error) {
	t.Helper()
	return l.applier(t).Apply(context.Background(), l.plan, opts)
}

func argvs(cs []Command) [][]string {
	out := make([][]string, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out
}

func TestApplyRunsExactlyThePlanThenVerifies(t *testing.T) {
	l := newLab(t, PlanOptions{})
	rep, err := l.apply(t, ApplyOptions{Yes: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, l.out.String())
	}
	if got := lvmfake.Writes(l.lvm.Calls); !reflect.DeepEqual(got, argvs(l.plan.Commands)) {
		t.Fatalf("apply ran\n%v\nplan says\n%v", got, l.plan.Commands)
	}
	if !rep.Verified {
		t.Fatalf("not verified: %v", rep.Verification)
	}
	names := map[string]bool{}
	for _, c := range rep.Verification {
		names[c.Array+" "+c.Name] = c.OK
	}
	for _, want := range []string{"vg-hdd/tables data_stripes", "vg-hdd/tables integrity on every image", "vg-hdd/tables one image per device",
		"vg-hdd/tables one rmeta per device", "vg-nvme/prefix one image per device", "vg-nvme/prefix segtype"} {
		if ok, seen := names[want]; !seen || !ok {
			t.Errorf("check %q: seen %v ok %v", want, seen, ok)
		}
	}
	// a second apply changes nothing
	l.lvm.Calls = nil
	rep, err = l.apply(t, ApplyOptions{})
	if err != nil {
		t.Fatalf("second apply: %v", err)
	}
	if w := lvmfake.Writes(l.lvm.Calls); len(w) != 0 {
		t.Errorf("second apply wrote: %v", w)
	}
	for _, s := range rep.Steps {
		if s.Action != "skip" {
			t.Errorf("second apply: %s %v", s.Action, s.Argv)
		}
	}
	if !rep.Verified {
		t.Error("second apply not verified")
	}
}

func TestApplyAfterInterruptionConverges(t *testing.T) {
	l := newLab(t, PlanOptions{})
	l.lvm.FailOn = "--name tables"
	rep, err := l.apply(t, ApplyOptions{Yes: true})
	var sf *StepFailedError
	if !errors.As(err, &sf) || !strings.Contains(strings.Join(sf.Argv, " "), "--name tables") {
		t.Fatalf("want a failed step, got %v", err)
	}
	notReached := 0
	for _, s := range rep.Steps {
		if s.Action == "not-reached" {
			notReached++
		}
	}
	if notReached != 4 { // the NVMe pvcreate x2, vgcreate, lvcreate
		t.Errorf("%d steps not reached: %+v", notReached, rep.Steps)
	}
	l.lvm.FailOn, l.lvm.Calls = "", nil
	rep, err = l.apply(t, ApplyOptions{Yes: true})
	if err != nil || !rep.Verified {
		t.Fatalf("second apply: %v", err)
	}
	w := lvmfake.Writes(l.lvm.Calls)
	if len(w) != 5 || w[0][1] != "lvcreate" || !strings.Contains(strings.Join(w[0], " "), "--name tables") {
		t.Errorf("the second apply must run only what was left: %v", w)
	}
}

func TestApplyRefusesAConflictingLV(t *testing.T) {
	l := newLab(t, PlanOptions{NoNVMe: true})
	// someone built tables by hand without --stripes: 2 data stripes on 3 disks
	ctx := context.Background()
	for _, d := range []string{"a", "b", "c", "d", "e", "f"} {
		l.lvm.Run(ctx, "lvm", "pvcreate", "/dev/sd"+d)
	}
	l.lvm.Run(ctx, "lvm", "vgcreate", "--physicalextentsize", "4096k", "--", "vg-hdd", "/dev/sda", "/dev/sdb", "/dev/sdc", "/dev/sdd", "/dev/sde", "/dev/sdf")
	l.lvm.Run(ctx, "lvm", "lvcreate", "--type", "raid5", "--stripes", "2", "--raidintegrity", "y", "--raidintegritymode", "journal", "--raidintegrityblocksize", "4096", "--extents", "100", "--name", "tables", "--", "vg-hdd", "/dev/sda", "/dev/sdb", "/dev/sdc")
	l.lvm.Calls = nil
	_, err := l.apply(t, ApplyOptions{Yes: true})
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "exists with another shape") || !strings.Contains(err.Error(), "data_stripes: want 5, got 2") {
		t.Fatalf("err %v", err)
	}
	if w := lvmfake.Writes(l.lvm.Calls); len(w) != 0 {
		t.Errorf("a refusal ran %v", w)
	}
}

func TestApplyRefusesAStalePlan(t *testing.T) {
	l := newLab(t, PlanOptions{})
	l.host.Disks[2].Serial = "HDD9" // sdc swapped for another disk
	_, err := l.apply(t, ApplyOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "stale") || !strings.Contains(err.Error(), "scsi-0QEMU_QEMU_HARDDISK_HDD3") {
		t.Fatalf("err %v", err)
	}
	if len(l.lvm.Calls) != 0 {
		t.Errorf("a stale plan ran %v", l.lvm.Calls)
	}
	l = newLab(t, PlanOptions{})
	l.host.Disks[0].Size = 512 << 20 // same serial, other size
	if _, err := l.apply(t, ApplyOptions{Yes: true}); err == nil || !strings.Contains(err.Error(), "size 512 MiB, planned 256 MiB") {
		t.Fatalf("err %v", err)
	}
}

func TestApplyRefusesADiskWithAFilesystem(t *testing.T) {
	l := newLab(t, PlanOptions{})
	l.host.Probes = map[string][]blockdev.Signature{"sdd": {{Type: "ext4", Offset: 1080, Source: "probe"}}}
	_, err := l.apply(t, ApplyOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "sdd") || !strings.Contains(err.Error(), "ext4") || !strings.Contains(err.Error(), "--wipe sdd") {
		t.Fatalf("err %v", err)
	}
	if w := lvmfake.Writes(l.lvm.Calls); len(w) != 0 {
		t.Errorf("refused apply wrote %v", w)
	}
	// dry-run refuses the same way
	if _, err := l.apply(t, ApplyOptions{DryRun: true}); err == nil {
		t.Error("dry-run must show the refusal")
	}
}

func TestApplyWipeNeedsYesOrATerminal(t *testing.T) {
	l := newLab(t, PlanOptions{Wipe: []string{"sdd"}})
	l.host.Probes = map[string][]blockdev.Signature{"sdd": {{Type: "ext4", Offset: 1080, Source: "probe"}}}
	_, err := l.apply(t, ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), "DESTROYING everything on sdd") || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("err %v", err)
	}
	if w := lvmfake.Writes(l.lvm.Calls); len(w) != 0 {
		t.Errorf("unconfirmed apply wrote %v", w)
	}
	a := l.applier(t)
	asked := ""
	a.Confirm = func(q string) error { asked = q; return errors.New("not confirmed") }
	if _, err := a.Apply(context.Background(), l.plan, ApplyOptions{}); err == nil || asked == "" {
		t.Fatalf("a terminal must be asked: %v %q", err, asked)
	}
	if w := lvmfake.Writes(l.lvm.Calls); len(w) != 0 {
		t.Errorf("declined apply wrote %v", w)
	}
	if _, err := l.apply(t, ApplyOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	w := lvmfake.Writes(l.lvm.Calls)
	if strings.Join(w[0], " ") != "wipefs --all /dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD4" {
		t.Errorf("first write %v", w[0])
	}
}

func TestApplyRefusesABusyDeviceEvenWithWipe(t *testing.T) {
	l := newLab(t, PlanOptions{Wipe: []string{"sdb"}})
	l.host.Mounts = append(l.host.Mounts, fixture.Mount{Dev: "/dev/sdb", Dir: "/mnt", FSType: "ext4"})
	_, err := l.apply(t, ApplyOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "mounted at /mnt") {
		t.Fatalf("err %v", err)
	}
	if w := lvmfake.Writes(l.lvm.Calls); len(w) != 0 {
		t.Errorf("wrote %v", w)
	}
}

func TestApplyDryRunWritesNothing(t *testing.T) {
	l := newLab(t, PlanOptions{})
	rep, err := l.apply(t, ApplyOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if w := lvmfake.Writes(l.lvm.Calls); len(w) != 0 {
		t.Errorf("dry-run wrote %v", w)
	}
	if len(rep.Steps) != len(l.plan.Commands) || rep.Steps[0].Action != "would-run" {
		t.Errorf("steps %+v", rep.Steps)
	}
	if !strings.Contains(l.out.String(), "would-run lvm lvcreate") {
		t.Errorf("dry-run output:\n%s", l.out.String())
	}
}

func TestApplyNoTerminalNoYes(t *testing.T) {
	l := newLab(t, PlanOptions{})
	_, err := l.apply(t, ApplyOptions{})
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "no terminal") {
		t.Fatalf("err %v", err)
	}
	if w := lvmfake.Writes(l.lvm.Calls); len(w) != 0 {
		t.Errorf("wrote %v", w)
	}
}

func TestApplyWaitsForSync(t *testing.T) {
	l := newLab(t, PlanOptions{})
	l.lvm.Sync = []string{"11.06", "48.15", "97.11", "100.00"}
	a := l.applier(t)
	var seen []float64
	a.Progress = func(lv string, pct float64) { seen = append(seen, pct) }
	if _, err := a.Apply(context.Background(), l.plan, ApplyOptions{Yes: true, WaitSync: true}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(seen, []float64{11.06, 48.15, 97.11, 100}) {
		t.Errorf("progress %v", seen)
	}
}

// The exact argv with a Recorded runner (unrecorded commands fail): the
// lab plan on an empty LVM.
func TestApplyExactArgvRecorded(t *testing.T) {
	l := newLab(t, PlanOptions{})
	rec := execx.NewRecorded()
	empty := func(key string) execx.Reply { return execx.Reply{Stdout: `{"report":[{"` + key + `":[]}]}`} }
	rep := func(cmd, key string, fields []string, extra ...string) {
		rec.On(empty(key), append([]string{"lvm", cmd, "--reportformat", "json", "--units", "b", "--nosuffix", "-o", strings.Join(fields, ",")}, extra...)...)
	}
	rep("pvs", "pv", pvFields)
	rep("vgs", "vg", vgFields)
	rep("lvs", "lv", lvFields, "-a")
	for _, c := range l.plan.Commands {
		rec.On(execx.Reply{}, c...)
	}
	a := l.applier(t)
	a.Runner = rec
	_, err := a.Apply(context.Background(), l.plan, ApplyOptions{Yes: true})
	var vf *VerifyFailedError // the recorded lvs still says "no LVs" afterwards
	if !errors.As(err, &vf) {
		t.Fatalf("want a verification failure from the empty recorded lvs, got %v", err)
	}
	want := [][]string{
		{"lvm", "pvcreate", "--", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD1"},
		{"lvm", "pvcreate", "--", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD2"},
		{"lvm", "pvcreate", "--", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD3"},
		{"lvm", "pvcreate", "--", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD4"},
		{"lvm", "pvcreate", "--", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD5"},
		{"lvm", "pvcreate", "--", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD6"},
		{"lvm", "vgcreate", "--physicalextentsize", "4096k", "--", "vg-hdd", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD1", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD2", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD3", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD4", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD5", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD6"},
		{"lvm", "lvcreate", "--yes", "--wipesignatures", "y", "--type", "raid5", "--stripes", "5", "--raidintegrity", "y", "--raidintegritymode", "journal", "--raidintegrityblocksize", "4096", "--extents", "295", "--name", "tables", "--", "vg-hdd", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD1", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD2", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD3", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD4", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD5", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD6"},
		{"lvm", "pvcreate", "--", "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME1"},
		{"lvm", "pvcreate", "--", "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME2"},
		{"lvm", "vgcreate", "--physicalextentsize", "4096k", "--", "vg-nvme", "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME1", "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME2"},
		{"lvm", "lvcreate", "--yes", "--wipesignatures", "y", "--type", "raid0", "--stripes", "2", "--extents", "62", "--name", "prefix", "--", "vg-nvme", "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME1", "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME2"},
	}
	if got := lvmfake.Writes(rec.Calls); !reflect.DeepEqual(got, want) {
		t.Errorf("argv:\n%v\nwant\n%v", got, want)
	}
}

func TestApplyMakesTheFilesystemOnceAndNeverReformats(t *testing.T) {
	l := newLab(t, PlanOptions{TablesFS: "ext4"})
	if _, err := l.apply(t, ApplyOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	w := lvmfake.Writes(l.lvm.Calls)
	mkfs := strings.Join(w[8], " ")
	if mkfs != "mkfs.ext4 -b 4096 -I 256 -i 4194304 -m 1 -U 0b3c2f1e-1111-4222-8333-444455556666 -L tables /dev/vg-hdd/tables" {
		t.Fatalf("9th write %q", mkfs)
	}
	// again: the filesystem is there, nothing runs
	a := l.applier(t)
	a.ProbeLV = func(p string) ([]blockdev.Signature, error) {
		return []blockdev.Signature{{Type: "ext4", UUID: "0b3c2f1e-1111-4222-8333-444455556666"}}, nil
	}
	l.lvm.Calls = nil
	if _, err := a.Apply(context.Background(), l.plan, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if w := lvmfake.Writes(l.lvm.Calls); len(w) != 0 {
		t.Errorf("wrote %v", w)
	}
	// another filesystem on the LV: refused, not reformatted
	a.ProbeLV = func(p string) ([]blockdev.Signature, error) {
		return []blockdev.Signature{{Type: "xfs", UUID: "x"}}, nil
	}
	if _, err := a.Apply(context.Background(), l.plan, ApplyOptions{Yes: true}); err == nil || !strings.Contains(err.Error(), "does not reformat") {
		t.Fatalf("err %v", err)
	}
	if w := lvmfake.Writes(l.lvm.Calls); len(w) != 0 {
		t.Errorf("wrote %v", w)
	}
}

// Without /dev/disk/by-id the plan names kernel devices; SCSI probing can
// swap sda and sdb between boots (seen in the lab), and apply must notice.
func TestApplyWithoutByIDRefusesShuffledNames(t *testing.T) {
	l := &lab{host: fixture.LabGuest(), dir: t.TempDir(), lvm: lvmfake.New()}
	for i := range l.host.Disks {
		l.host.Disks[i].NoByID = true
	}
	if err := l.host.Write(filepath.Join(l.dir, "plan-time")); err != nil {
		t.Fatal(err)
	}
	inv, err := blockdev.Read(context.Background(), blockdev.Options{Root: filepath.Join(l.dir, "plan-time")})
	if err != nil {
		t.Fatal(err)
	}
	l.plan = mustPlan(t, inv, PlanOptions{})
	if l.plan.Devices[0].Path != "/dev/sda" || !strings.Contains(strings.Join(l.plan.Warnings, "\n"), "sda has no /dev/disk/by-id link") {
		t.Fatalf("path %s, warnings %v", l.plan.Devices[0].Path, l.plan.Warnings)
	}
	for _, d := range l.host.Disks {
		l.lvm.Disk("/dev/"+d.Name, d.Size)
	}
	l.host.Disks[0].Serial, l.host.Disks[1].Serial = "HDD2", "HDD1" // next boot: sda and sdb swapped
	_, err = l.apply(t, ApplyOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "/dev/sda (now sda): serial HDD2, planned HDD1") {
		t.Fatalf("err %v", err)
	}
	if len(l.lvm.Calls) != 0 {
		t.Errorf("ran %v", l.lvm.Calls)
	}
}

// A plan whose serial or WWN was left empty (by hand: tbhost lvm plan
// writes every disk's) is no plan without identity: with kernel names and
// no serial to compare, a disk of the same size swapped in behind sdc
// would pass every other check.
func TestApplyRefusesAPlanWithoutTheSerialOrWWNTheDiskHas(t *testing.T) {
	noByID := func(t *testing.T) *lab {
		l := &lab{host: fixture.LabGuest(), dir: t.TempDir(), lvm: lvmfake.New()}
		for i := range l.host.Disks {
			l.host.Disks[i].NoByID = true
		}
		l.host.Disks[2].WWN = "0x5000c500a1b2c3d4"
		if err := l.host.Write(filepath.Join(l.dir, "plan-time")); err != nil {
			t.Fatal(err)
		}
		inv, err := blockdev.Read(context.Background(), blockdev.Options{Root: filepath.Join(l.dir, "plan-time")})
		if err != nil {
			t.Fatal(err)
		}
		l.plan = mustPlan(t, inv, PlanOptions{NoNVMe: true})
		for _, d := range l.host.Disks {
			l.lvm.Disk("/dev/"+d.Name, d.Size)
		}
		return l
	}
	sdc := func(t *testing.T, l *lab) *PlanDevice {
		for i := range l.plan.Devices {
			if l.plan.Devices[i].Path == "/dev/sdc" {
				return &l.plan.Devices[i]
			}
		}
		t.Fatalf("no /dev/sdc in the plan: %+v", l.plan.Devices)
		return nil
	}
	for _, c := range []struct {
		name, want string
		edit       func(*lab, *PlanDevice)
	}{
		{"serial emptied, the disk swapped", "/dev/sdc (now sdc): serial HDD9, planned -", func(l *lab, pd *PlanDevice) {
			pd.Serial, pd.WWN = "", ""
			l.host.Disks[2].Serial, l.host.Disks[2].WWN = "HDD9", "" // another disk of the same size
		}},
		{"serial emptied, the same disk", "/dev/sdc (now sdc): serial HDD3, planned -", func(l *lab, pd *PlanDevice) {
			pd.Serial = ""
		}},
		{"WWN emptied", "WWN 0x5000c500a1b2c3d4, planned -", func(l *lab, pd *PlanDevice) {
			pd.WWN = ""
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := noByID(t)
			pd := sdc(t, l)
			if pd.Serial != "HDD3" || pd.WWN != "0x5000c500a1b2c3d4" {
				t.Fatalf("the plan names sdc with serial %q WWN %q, want HDD3 and the fixture's WWN", pd.Serial, pd.WWN)
			}
			if _, err := l.apply(t, ApplyOptions{Yes: true}); err != nil {
				// the unedited plan applies: the refusal below is the edit's
				t.Fatalf("the plan as made: %v", err)
			}
			l = noByID(t)
			c.edit(l, sdc(t, l))
			l.lvm.Calls = nil
			_, err := l.apply(t, ApplyOptions{Yes: true})
			if err == nil || !strings.Contains(err.Error(), "stale") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want a stale plan naming %q", err, c.want)
			}
			if len(l.lvm.Calls) != 0 {
				t.Errorf("a plan without the disk's identity ran %v", l.lvm.Calls)
			}
		})
	}
}

// Issue 12 item 8: a plan made before a disk's block size changed is stale
// (the integrity block size and extents were chosen for the old one).
func TestApplyRefusesAPlanMadeBeforeABlockSizeChange(t *testing.T) {
	l := newLab(t, PlanOptions{})
	l.host.Disks[1].LBS, l.host.Disks[1].PBS = 4096, 4096 // sdb reformatted to 4Kn, same serial and size
	_, err := l.apply(t, ApplyOptions{DryRun: true})
	if err == nil || !strings.Contains(err.Error(), "stale") || !strings.Contains(err.Error(), "block sizes 4096/4096 (logical/physical), planned 512/512") {
		t.Fatalf("err %v", err)
	}
	if len(l.lvm.Calls) != 0 {
		t.Errorf("a stale plan ran %v", l.lvm.Calls)
	}
	l = newLab(t, PlanOptions{})
	l.host.Disks[0].PBS = 4096 // 512n became 512e
	if _, err := l.apply(t, ApplyOptions{DryRun: true}); err == nil || !strings.Contains(err.Error(), "block sizes 512/4096") {
		t.Fatalf("physical block size change: err %v", err)
	}
}

// Apply checks a plan it is handed in code the same way as one read from a
// file: a plan whose devices disagree with its commands is refused.
func TestApplyRefusesAnInconsistentPlanInMemory(t *testing.T) {
	l := newLab(t, PlanOptions{})
	l.plan.Arrays[0].DataStripes = 2
	l.plan.Commands = BuildCommands(l.plan)
	if _, err := l.apply(t, ApplyOptions{DryRun: true}); err == nil || !strings.Contains(err.Error(), "data_stripes 2") {
		t.Fatalf("err %v", err)
	}
	l = newLab(t, PlanOptions{})
	l.plan.Commands[0] = Command{"lvm", "pvcreate", "--", "/dev/nvme0n1"}
	if _, err := l.apply(t, ApplyOptions{DryRun: true}); err == nil || !strings.Contains(err.Error(), "commands") {
		t.Fatalf("err %v", err)
	}
	if len(l.lvm.Calls) != 0 {
		t.Errorf("ran %v", l.lvm.Calls)
	}
}

// Two applies on one machine (an Ansible run and one by hand): apply
// decides its steps from one reading of the machine, so the second,
// having read it before the first one's pvcreate, would wipefs (--wipe)
// or pvcreate the disks the first just made its VG's PVs. The second is
// refused while the first holds the lock, names it, and runs nothing; a
// dry run is not held back; once the first has ended, apply runs.
func TestApplyRefusesWhileAnotherApplyRuns(t *testing.T) {
	l := newLab(t, PlanOptions{})
	lock := filepath.Join(t.TempDir(), "run", "lock", "apply.lock")
	unlock, err := lockApply(lock) // the first apply, at work
	if err != nil {
		t.Fatal(err)
	}
	a := l.applier(t)
	a.LockPath = lock
	_, err = a.Apply(context.Background(), l.plan, ApplyOptions{Yes: true})
	var refused *RefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), lock) || !strings.Contains(err.Error(), "another tbhost lvm apply") {
		t.Fatalf("apply while another holds the lock: %v; want a refusal naming the lock", err)
	}
	if w := lvmfake.Writes(l.lvm.Calls); len(w) != 0 {
		t.Fatalf("the refused apply ran %q", w)
	}
	if _, err := a.Apply(context.Background(), l.plan, ApplyOptions{DryRun: true}); err != nil {
		t.Fatalf("dry run beside a running apply: %v", err)
	}
	unlock()
	if _, err := a.Apply(context.Background(), l.plan, ApplyOptions{Yes: true}); err != nil {
		t.Fatalf("apply after the other ended: %v", err)
	}
	if got := lvmfake.Writes(l.lvm.Calls); !reflect.DeepEqual(got, argvs(l.plan.Commands)) {
		t.Fatalf("ran %q, want the plan's commands", got)
	}
}
