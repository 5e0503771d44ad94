package lvm

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/execx"
)

const halfBuiltRemove = "run: lvm lvremove --yes -- vg-hdd/tables vg-hdd/tables_rimage_0_imeta vg-hdd/tables_rimage_1_imeta vg-hdd/tables_rimage_2_imeta vg-hdd/tables_rimage_3_imeta vg-hdd/tables_rimage_4_imeta vg-hdd/tables_rimage_5_imeta"

// halfBuiltLab is the VM lab's guest after apply's lvcreate --raidintegrity
// was killed in its bare-raid5 window and the guest rebooted
// (internal/lab TestLVMApplyLvcreateCut recorded these reports with
// TBHOST_LAB_RECORD): the plan, and a runner answering lvm's reports.
func halfBuiltLab(t *testing.T) (*Plan, *execx.Recorded, []LV) {
	t.Helper()
	p, err := LoadPlan(filepath.Join(realLab, "plan-halfbuilt.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rec := realReports(t, "lvs-halfbuilt.json", "pvs-halfbuilt.json", "vgs-halfbuilt.json")
	return p, rec, parseLVs(t, "lab-apply-2.03.16/lvs-halfbuilt.json")
}

// Real lvm2 2.03.16 metadata of the cut lvcreate: apply refuses, names the
// raid5 and all six metadata LVs in one lvremove, and runs nothing.
func TestRealLabHalfBuiltLvcreateIsExplained(t *testing.T) {
	p, rec, _ := halfBuiltLab(t)
	a := Applier{Runner: rec, Inventory: func(ctx context.Context) (*blockdev.Inventory, error) {
		return blockdev.Read(ctx, blockdev.Options{Root: realTree(t, "lab-guest-halfbuilt")})
	}, ProbeLV: func(string) ([]blockdev.Signature, error) { return nil, nil }}
	_, err := a.Apply(context.Background(), p, ApplyOptions{Yes: true})
	var re *RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("want a refusal, got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"LV vg-hdd/tables is a raid5 without integrity", "tables_rimage_5_imeta), not attached", "stopped half-way", halfBuiltRemove} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "another shape") || strings.Contains(msg, "is active") {
		t.Errorf("the refusal of an inactive half-built LV:\n%s", msg)
	}
	for _, c := range rec.Calls {
		if c[1] != "pvs" && c[1] != "vgs" && c[1] != "lvs" {
			t.Errorf("a refusal ran %v", c)
		}
	}
}

func TestHalfBuiltProblemVariants(t *testing.T) {
	p, _, lvs := halfBuiltLab(t)
	ar := p.Arrays[0]
	if ar.LV != "tables" || !ar.Integrity.Enabled {
		t.Fatalf("the plan's first array is %s/%s (integrity %v)", ar.VG, ar.LV, ar.Integrity.Enabled)
	}
	byName := map[string]string{}
	for _, d := range p.Devices {
		byName["/dev/"+d.Name] = d.ID
	}
	checks := func(lvs []LV) []Check {
		return VerifyArray(ar, lvs, p.ExtentSize, func(pv string) string { return byName[pv] })
	}
	without := func(drop func(LV) bool) []LV {
		var out []LV
		for _, l := range lvs {
			if !drop(l) {
				out = append(out, l)
			}
		}
		return out
	}

	// as recorded (inactive)
	if got := halfBuiltProblem(ar, lvs, checks(lvs)); !strings.Contains(got, halfBuiltRemove) {
		t.Errorf("recorded state: %q", got)
	}

	// cut before the first metadata LV: the raid5 alone
	bare := without(func(l LV) bool { return strings.HasSuffix(l.Name, "_imeta") })
	if got := halfBuiltProblem(ar, bare, checks(bare)); !strings.Contains(got, "next to no integrity metadata LV yet") ||
		!strings.HasSuffix(got, "run: lvm lvremove --yes -- vg-hdd/tables") {
		t.Errorf("bare raid5: %q", got)
	}

	// the raid5 removed by hand (apply's old advice), the metadata LVs left
	metaOnly := without(func(l LV) bool { return !strings.HasSuffix(l.Name, "_imeta") })
	got := halfBuiltProblem(ar, metaOnly, nil)
	if !strings.Contains(got, "VG vg-hdd holds tables_rimage_0_imeta, ") || !strings.Contains(got, "run: lvm lvremove --yes -- vg-hdd/tables_rimage_0_imeta ") || strings.Contains(got, "-- vg-hdd/tables ") {
		t.Errorf("metadata LVs alone: %q", got)
	}

	// active (the kill without a reboot) and syncing: wait first
	active := append([]LV(nil), lvs...)
	for i := range active {
		if active[i].Name == "tables" {
			active[i].KernelMajor, active[i].SyncPercent = 254, 37.5
		}
	}
	if got := halfBuiltProblem(ar, active, checks(active)); !strings.Contains(got, "initial sync is at 37.50 %") || !strings.Contains(got, halfBuiltRemove) {
		t.Errorf("active, syncing: %q", got)
	}

	// another difference as well (two stripes fewer): not this case
	other := append([]LV(nil), lvs...)
	for i := range other {
		if other[i].Name == "tables" {
			segs := append([]Segment(nil), other[i].Segments...)
			segs[0].Stripes = 4
			other[i].Segments = segs
		}
	}
	if got := halfBuiltProblem(ar, other, checks(other)); got != "" {
		t.Errorf("an LV of another shape was taken for a half-built one: %q", got)
	}

	// nothing left over, no LV: nothing to say
	if got := halfBuiltProblem(ar, nil, nil); got != "" {
		t.Errorf("empty VG: %q", got)
	}
	// an array without integrity is never this case
	plain := ar
	plain.Integrity.Enabled = false
	if got := halfBuiltProblem(plain, lvs, checks(lvs)); got != "" {
		t.Errorf("no integrity planned: %q", got)
	}
}
