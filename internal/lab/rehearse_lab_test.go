//go:build lab

package lab

import (
	"testing"
	"time"
)

// TestRehearseExamplePlan is the acceptance check of `tbhost lab
// rehearse`: the plan of `tbhost lvm plan --example` (6 x 6 TB 512e HDD,
// two 201 GiB NVMe partitions) builds, verifies, re-applies as a no-op and
// monitors clean on scaled-down virtual disks, with the planned shape.
func TestRehearseExamplePlan(t *testing.T) {
	shared.prepare(t)
	r, err := NewRehearsal(examplePlan(t), RehearseOptions{MonitorFor: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	l := &Lab{Base: shared.base}
	steps, res, err := l.RunBatch(t.Context(), Config{Name: "rehearse", WorkDir: t.TempDir(), Disks: r.Disks, Tbhost: shared.tbhost, Timeout: 40 * time.Minute}, r.Steps)
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
