package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/fixturetree"
	"github.com/tbhost/tbhost/lvm"
)

// noLVM is a host without the lvm binary.
type noLVM struct{}

func (noLVM) Run(_ context.Context, argv ...string) (execx.Result, error) {
	return execx.Result{Argv: argv}, &execx.CommandError{Argv: argv, ExitCode: -1, Err: exec.ErrNotFound}
}

// Issue 18: `--root DIR lvm status` and `--root DIR integrity status` ran
// the real lvm (here: the recorded runner, which knows no command, so exit
// 3 "program not found") instead of reading the snapshot's lvm/lvs.json as
// monitor does.
func TestRootSnapshotReplaysLVMForStatusCommands(t *testing.T) {
	for _, tc := range []struct {
		capture string
		args    []string
		code    int
		want    string
	}{
		{"raid5-integrity-stripes5", []string{"lvm", "status"}, 0, "vg-hdd/tables  OK  raid5, 5 data stripes of 6 devices"},
		{"raid5-member-dropped", []string{"lvm", "status"}, 1, `vg-hdd/tables  PROBLEM`},
		{"raid5-integrity-stripes5", []string{"integrity", "status"}, 0, "OK vg-hdd/tables: raid5"},
		{"raid5-member-dropped", []string{"integrity", "status"}, 1, "PROBLEM vg-hdd/tables"},
	} {
		args := append([]string{"--root", captured(t, tc.capture)}, tc.args...)
		code, out, stderr := runTBTerminal(t, nil, args...) // clean is silent without a terminal

		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%s %s: exit %d, want %d and %q\n%s%s", tc.capture, strings.Join(tc.args, " "), code, tc.code, tc.want, out, stderr)
		}
	}
	// a snapshot without an LVM report: could not run, naming the file
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "lvm"), 0o755)
	for _, args := range [][]string{{"integrity", "status"}, {"lvm", "status"}} {
		code, _, stderr := runTB(t, nil, append([]string{"--root", root}, args...)...)
		if code != 3 || !strings.Contains(stderr, "lvm/lvs.json") {
			t.Errorf("%v, no lvs.json: exit %d %s", args, code, stderr)
		}
		code, _, stderr = runTB(t, nil, append([]string{"--root", filepath.Join(root, "typo")}, args...)...)
		if code != 3 || !strings.Contains(stderr, "typo") {
			t.Errorf("%v, --root missing: exit %d %s", args, code, stderr)
		}
	}
}

// "lvm is not installed" dumped the whole `lvs -o` field list (21 fields).
func TestLVMNotInstalledNamesTheProgramNotItsFields(t *testing.T) {
	for _, args := range [][]string{{"lvm", "status"}, {"integrity", "status"}} {
		code, _, stderr := runTB(t, noLVM{}, args...)
		if code != 3 || !strings.Contains(stderr, "lvm: program not found") || strings.Contains(stderr, "lv_name,vg_name") || !strings.Contains(stderr, "apt-get install lvm2") {
			t.Errorf("%v: exit %d\n%s", args, code, stderr)
		}
	}
}

// `inventory --snapshot DIR` saves LVM's reports as DIR/lvm/{lvs,pvs}.json,
// so `--root DIR lvm status` elsewhere replays the snapshotted host's
// arrays, not the replaying machine's.
func TestInventorySnapshotSavesLVMReportsForReplay(t *testing.T) {
	host := captured(t, "raid5-member-dropped")
	lvs, _ := os.ReadFile(filepath.Join(host, "lvm", "lvs.json"))
	pvs, _ := os.ReadFile(filepath.Join(host, "lvm", "pvs.json"))
	vgs, _ := os.ReadFile(filepath.Join(host, "lvm", "vgs.json"))
	os.RemoveAll(filepath.Join(host, "lvm")) // the host's lvm answers through the runner
	rec := execx.NewRecorded().
		On(execx.Reply{Stdout: string(lvs)}, lvm.LVsArgv()...).
		On(execx.Reply{Stdout: string(pvs)}, lvm.PVsArgv()...).
		On(execx.Reply{Stdout: string(vgs)}, lvm.VGsArgv()...)
	snap := filepath.Join(t.TempDir(), "snap")
	if code, _, stderr := runTB(t, rec, "--root", host, "inventory", "--snapshot", snap); code != 0 {
		t.Fatalf("snapshot: exit %d %s", code, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(snap, "lvm", "lvs.json")); err != nil || string(b) != string(lvs) {
		t.Fatalf("lvm/lvs.json in the snapshot: %v", err)
	}
	// replayed with a runner that knows nothing: the snapshot answers
	code, out, stderr := runTB(t, noLVM{}, "--root", snap, "lvm", "status")
	if code != 1 || !strings.Contains(out, "vg-hdd/tables  PROBLEM") {
		t.Errorf("replay: exit %d\n%s%s", code, out, stderr)
	}
	// without lvm the snapshot has no report, and says so
	snap2 := filepath.Join(t.TempDir(), "snap2")
	code, _, stderr = runTB(t, noLVM{}, "--root", host, "inventory", "--snapshot", snap2)
	if _, err := os.Stat(filepath.Join(snap2, "lvm")); code != 0 || err == nil || !strings.Contains(stderr, "no LVM report") {
		t.Errorf("no lvm: exit %d, lvm/ %v\n%s", code, err, stderr)
	}
}

// The README: plan another host from its snapshot, and under --root DIR
// "lvm apply and lvm replace read DIR's reports". apply asks vgs too, and
// the snapshot held only lvs.json and pvs.json: `--root SNAP lvm apply
// --dry-run` of a blank host exited 3, "tbhost inventory --snapshot has
// vgs.json", which it had not.
func TestInventorySnapshotIsEnoughForApplyDryRun(t *testing.T) {
	host := fixturetree.Dir(t, "../../internal/blockdev/testdata/lab-guest-real.tar.gz")
	rec := execx.NewRecorded(). // a blank host: lvm answers, with no PV, VG or LV
					On(execx.Reply{Stdout: `{"report":[{"lv":[]}]}`}, lvm.LVsArgv()...).
					On(execx.Reply{Stdout: `{"report":[{"pv":[]}]}`}, lvm.PVsArgv()...).
					On(execx.Reply{Stdout: `{"report":[{"vg":[]}]}`}, lvm.VGsArgv()...)
	snap := filepath.Join(t.TempDir(), "snap")
	if code, _, stderr := runTB(t, rec, "--root", host, "inventory", "--snapshot", snap); code != 0 {
		t.Fatalf("snapshot: exit %d %s", code, stderr)
	}
	for _, name := range []string{"lvs.json", "pvs.json", "vgs.json"} {
		if _, err := os.Stat(filepath.Join(snap, "lvm", name)); err != nil {
			t.Errorf("the snapshot lacks lvm/%s: %v", name, err)
		}
	}
	plan := filepath.Join(t.TempDir(), "plan.yaml")
	if code, _, stderr := runTB(t, noLVM{}, "--root", snap, "lvm", "plan", "-o", plan); code != 0 {
		t.Fatalf("plan from the snapshot: exit %d %s", code, stderr)
	}
	code, out, stderr := runTB(t, noLVM{}, "--root", snap, "lvm", "apply", "--dry-run", plan)
	if code != 0 || !strings.Contains(out, "would-run lvm lvcreate") {
		t.Errorf("apply --dry-run replayed from the snapshot: exit %d\n%s%s", code, out, stderr)
	}
}
