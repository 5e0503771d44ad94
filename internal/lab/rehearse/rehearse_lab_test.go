//go:build lab

package rehearse

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/lab"
)

// TestMain: no qemu outlives the rehearsal tests (lab.GuardedTestRun).
func TestMain(m *testing.M) {
	os.Exit(lab.GuardedTestRun("rehearsetest", false, m.Run))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// prepareLab gets the lab's base (kernel, LVM packages; skips naming what is
// missing) and a static tbhost built from this module.
func prepareLab(t *testing.T) (*lab.Base, string) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	c, err := lab.NewCache(os.Getenv("TBHOST_LAB_CACHE"), execx.Exec{}, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	base, err := c.Prepare(ctx)
	var me *lab.MissingError
	if errors.As(err, &me) {
		t.Skip(me.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "tbhost")
	if err := lab.BuildStatic(ctx, execx.Exec{}, filepath.Dir(strings.TrimSpace(string(gomod))), bin); err != nil {
		t.Fatal(err)
	}
	return base, bin
}

// TestRehearseExamplePlan is the acceptance check of `tbhost lab
// rehearse`: the plan of `tbhost lvm plan --example` (6 x 6 TB 512e HDD,
// two 201 GiB NVMe partitions) builds, verifies, re-applies as a no-op and
// monitors clean on scaled-down virtual disks, with the planned shape.
func TestRehearseExamplePlan(t *testing.T) {
	base, tbhost := prepareLab(t)
	r, err := New(examplePlan(t), Options{MonitorFor: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	l := &lab.Lab{Base: base}
	steps, res, err := l.RunBatch(t.Context(), lab.Config{Name: "rehearse", WorkDir: t.TempDir(), Disks: r.Disks, Tbhost: tbhost, Timeout: 40 * time.Minute}, r.Steps)
	if err != nil {
		t.Fatal(err)
	}
	rep := r.Report(steps)
	t.Logf("rehearsal took %v; scales %+v; monitor %s %s", res.Duration.Round(time.Second), rep.Scales, rep.MonitorStatus, rep.MonitorLine)
	for _, a := range rep.Arrays {
		t.Logf("%s planned %+v lab %+v state %s", a.Array, a.Planned, a.Rehearsed, a.State)
	}
	if !rep.OK {
		for _, p := range rep.Problems {
			t.Error(p)
		}
	}
	if len(rep.Arrays) != 2 || rep.Arrays[0].Rehearsed.DataStripes != 5 || rep.Arrays[0].Rehearsed.IntegrityBlockSize != 4096 {
		t.Errorf("arrays %+v: want raid5 with 5 data stripes and 4096-byte integrity blocks (512e disks)", rep.Arrays)
	}
}
