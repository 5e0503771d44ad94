package cliutil

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/sysread"
)

// LVMRunner is the runner for LVM's reports. On this host (--root /) it is
// the command's runner. Under --root DIR holding an lvm/ directory (a
// snapshot or a lab capture) it answers `lvm lvs`, `lvm pvs` and `lvm vgs`
// from DIR/lvm/lvs.json, pvs.json and vgs.json, as monitor does, so
// `--root DIR lvm status` and `--root DIR integrity status` describe the
// snapshot, not this machine; it refuses every other command (a snapshot is
// read, never changed). A DIR that does not exist fails every command. A
// DIR without lvm/ fails them too: this machine's lvm would describe this
// machine's arrays as the snapshot's (a snapshot taken where lvm could not
// be asked has no lvm/). Only a runner that runs nothing real (unit tests)
// or an lvm on PATH declared a stand-in for DIR's (Env.RootLVMOnPath: the
// Ansible tests' fake lvm2) is kept there.
func (g *Globals) LVMRunner() execx.Runner {
	if g.Root == "/" || g.Root == "" {
		return g.Runner
	}
	if _, err := os.Stat(g.Root); err != nil {
		return missingRoot{err: fmt.Errorf("--root %s: %w", g.Root, err)}
	}
	dir := filepath.Join(g.Root, "lvm")
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		if !g.RunsThisHost() || g.RootLVMOnPath {
			return g.Runner
		}
		return missingRoot{err: CannotRun(fmt.Errorf("--root %s has no lvm/ directory with LVM's reports (lvs.json, pvs.json, vgs.json), and this machine's lvm is not asked about another tree: take the snapshot with tbhost inventory --snapshot on a host where lvm runs as root, or run the command on that host", g.Root))}
	}
	return snapshotLVM{dir: dir}
}

// RunsThisHost reports whether the runner runs this machine's programs
// (tbhost itself), not a fake of them (tests).
func (g *Globals) RunsThisHost() bool {
	switch g.Runner.(type) {
	case execx.Exec, *execx.Exec:
		return true
	}
	return false
}

type missingRoot struct{ err error }

func (m missingRoot) Run(_ context.Context, argv ...string) (execx.Result, error) {
	return execx.Result{Argv: argv}, m.err
}

type snapshotLVM struct{ dir string }

func (s snapshotLVM) Run(_ context.Context, argv ...string) (execx.Result, error) {
	res := execx.Result{Argv: argv}
	if len(argv) < 2 || argv[0] != "lvm" || (argv[1] != "lvs" && argv[1] != "pvs" && argv[1] != "vgs") {
		return res, fmt.Errorf("%s: not run under --root %s (a snapshot is only read: its lvm/lvs.json, pvs.json, vgs.json)", strings.Join(argv[:min(len(argv), 2)], " "), filepath.Dir(s.dir))
	}
	path := filepath.Join(s.dir, argv[1]+".json")
	b, err := sysread.File(path, sysread.ReportLimit)
	if err != nil {
		return res, fmt.Errorf("--root snapshot without LVM's %s report (a lab capture or tbhost inventory --snapshot has %s): %w", argv[1], filepath.Base(path), err)
	}
	res.Stdout = b
	return res, nil
}
