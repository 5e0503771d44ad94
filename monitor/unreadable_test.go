package monitor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/fixturetree"
	"github.com/tbhost/tbhost/lvm"
)

// Failing to read LVM health is UNKNOWN, never a silent fallback to sysfs
// (issue 12, defect 3).

func TestLVMCommandFailureIsUnreadable(t *testing.T) {
	failed := &execx.CommandError{Argv: []string{"lvm", "lvs"}, ExitCode: 5, Stderr: "  Reading VG vg-hdd failed: locking", Err: errors.New("exit status 5")}
	_, err := Discover(context.Background(), DiscoverOptions{Root: derived(t, "balanced"), LVM: failingLVM{failed}})
	if !errors.Is(err, ErrLVMUnreadable) || !strings.Contains(err.Error(), "lvm") {
		t.Fatalf("lvm exit 5: want ErrLVMUnreadable naming lvm, got %v", err)
	}
	// the same on a host whose sysfs shows no LVM array: lvm ran and failed
	_, err = Discover(context.Background(), DiscoverOptions{Root: mdOnlyRoot(t), LVM: failingLVM{failed}})
	if !errors.Is(err, ErrLVMUnreadable) {
		t.Fatalf("lvm exit 5 without dm arrays: %v", err)
	}
}

func TestLVMNotInstalledWithLVMArraysIsUnreadable(t *testing.T) {
	notFound := &execx.CommandError{Argv: []string{"lvm", "lvs"}, ExitCode: -1, Err: exec.ErrNotFound}
	_, err := Discover(context.Background(), DiscoverOptions{Root: derived(t, "balanced"), LVM: failingLVM{notFound}})
	if !errors.Is(err, ErrLVMUnreadable) || !strings.Contains(err.Error(), "vg-hdd/tables") || !strings.Contains(err.Error(), "not installed") {
		t.Fatalf("want ErrLVMUnreadable naming the arrays sysfs shows, got %v", err)
	}
}

func TestLVMNotInstalledWithoutLVMIsNoError(t *testing.T) {
	notFound := &execx.CommandError{Argv: []string{"lvm", "lvs"}, ExitCode: -1, Err: exec.ErrNotFound}
	topo, err := Discover(context.Background(), DiscoverOptions{Root: mdOnlyRoot(t), LVM: failingLVM{notFound}})
	if err != nil {
		t.Fatalf("a host without LVM (no dm device) is not an error: %v", err)
	}
	if len(topo.Arrays) != 1 || topo.Arrays[0].Name != "md0" || len(topo.Notes) != 1 || !strings.Contains(topo.Notes[0], "not installed") {
		t.Errorf("arrays %+v notes %q", topo.Arrays, topo.Notes)
	}
}

func TestUnparseableSavedLVSIsUnreadable(t *testing.T) {
	good, err := os.ReadFile(derived(t, "balanced") + "/lvm/lvs.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"empty":     "",
		"garbage":   "\x00\x01 not json at all",
		"truncated": string(good[:len(good)/2]),
		"no report": `{"log":[]}`,
	} {
		root := fixturetree.Copy(t, derived(t, "balanced"))
		lvs := filepath.Join(root, "lvm/lvs.json")
		if err := os.WriteFile(lvs, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Check(context.Background(), Env{Root: root}, CheckOptions{For: 10 * time.Second, Interval: 5 * time.Second, Thresholds: DefaultThresholds()})
		if !errors.Is(err, ErrLVMUnreadable) || !strings.Contains(err.Error(), lvs) {
			t.Errorf("%s lvs.json: want ErrLVMUnreadable naming %s, got %v", name, lvs, err)
		}
	}
}

// An LVM report that leaves out an array /sys/block shows (a filtered or
// foreign VG, an edited snapshot) cannot vouch for its health.
func TestArrayMissingFromLVMReportIsUnknown(t *testing.T) {
	root := fixturetree.Copy(t, derived(t, "balanced"))
	if err := os.WriteFile(filepath.Join(root, "lvm/lvs.json"), []byte(`{"report":[{"lv":[]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := checkTree(t, root, "vg-hdd/tables")
	if r.Status != Unknown || len(r.Arrays) != 1 {
		t.Fatalf("%s %q", r.Status, r.Summary)
	}
	p := r.Arrays[0].Problems
	if len(p) == 0 || p[0].Code != lvm.CodeLVMUnreadable || !strings.Contains(r.Summary, "not in LVM's report") {
		t.Errorf("problems %+v summary %q", p, r.Summary)
	}
}

// mdOnlyRoot is a host with one clean md raid5 and no device-mapper device.
func mdOnlyRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	w := func(p, s string) {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"sda", "sdb", "sdc"} {
		w("sys/block/"+d+"/"+d+"1/partition", "1\n")
		p := filepath.Join(root, "sys/block/md0/slaves", d+"1")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../../"+d+"/"+d+"1", p); err != nil {
			t.Fatal(err)
		}
		w("sys/block/md0/md/dev-"+d+"1/state", "in_sync\n")
	}
	w("sys/block/md0/md/level", "raid5\n")
	w("sys/block/md0/md/raid_disks", "3\n")
	w("sys/block/md0/md/degraded", "0\n")
	w("sys/block/md0/md/array_state", "clean\n")
	w("sys/block/md0/md/sync_action", "idle\n")
	return root
}
