package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/execx"
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
