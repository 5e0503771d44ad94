package rehearse

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/lab"
	"github.com/tbhost/tbhost/lvm"
)

// examplePlan is the plan of `tbhost lvm plan --example` (the reference
// host: 6 x 6 TB 512e HDD, NVMe partitions 4 of 201 GiB).
func examplePlan(t *testing.T) *lvm.Plan {
	t.Helper()
	inv, err := lvm.ReferenceInventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p, err := lvm.MakePlan(inv, lvm.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRehearsalShapesDisksLikeThePlan(t *testing.T) {
	p := examplePlan(t)
	r, err := New(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var hdd, nvme []lab.Disk
	for _, d := range r.Disks {
		if d.Kind == lab.HDD {
			hdd = append(hdd, d)
		} else {
			nvme = append(nvme, d)
		}
	}
	if len(hdd) != 6 || len(nvme) != 2 {
		t.Fatalf("disks: %d HDD, %d NVMe", len(hdd), len(nvme))
	}
	for _, d := range hdd {
		if d.SizeMiB != 256 || d.LogicalBlockSize != 512 || d.PhysicalBlockSize != 4096 || d.WWN>>32 != 0x5000c500 {
			t.Errorf("HDD %+v: want 256 MiB, 512e, the plan's WWN", d)
		}
	}
	for _, d := range nvme {
		if len(d.PartitionsMiB) != 4 || d.PartitionsMiB[3] != 128 || d.PartitionsMiB[0] != 4 {
			t.Errorf("NVMe %s partitions %v: want the planned partition 4 at 128 MiB", d.Name, d.PartitionsMiB)
		}
		if d.SizeMiB != lab.PartitionedSize(mibs(d.PartitionsMiB))>>20 {
			t.Errorf("NVMe %s size %d", d.Name, d.SizeMiB)
		}
	}
	if len(r.Scales) != 2 || r.Scales[0].Role != "hdd" || r.Scales[0].Factor < 22000 || r.Scales[0].Factor > 23000 {
		t.Errorf("scales %+v (6 TB -> 256 MiB is ~22355x)", r.Scales)
	}
	plan := r.Steps[0].Script
	for _, want := range []string{"tbhost lvm plan --hdd /dev/disk/by-id/wwn-0x5000c500a1b2c301",
		"--nvme /dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_S4GENX0N123401-part4", "--integrity-mode journal", "-o $LAB_OUT/plan.yaml"} {
		if !strings.Contains(plan, want) {
			t.Errorf("plan step lacks %q:\n%s", want, plan)
		}
	}
	if strings.Contains(plan, "--no-nvme") {
		t.Error("the example plan has an NVMe array")
	}
}

func TestRehearsalReportJudgesShapes(t *testing.T) {
	p := examplePlan(t)
	r, err := New(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	status := func(dataStripes int) []byte {
		st := lvm.StatusReport{OK: true, Arrays: []lvm.ArrayStatus{
			{VG: "vg-hdd", LV: "tables", Exists: true, SegType: "raid5", Stripes: 6, DataStripes: dataStripes, State: "ok",
				Images: make([]lvm.ImageStatus, 6), Integrity: &lvm.Integrity{Enabled: true, Mode: "journal", BlockSize: 4096}},
			{VG: "vg-nvme", LV: "prefix", Exists: true, SegType: "raid0", Stripes: 2, DataStripes: 2, State: "ok", Images: make([]lvm.ImageStatus, 2)},
		}}
		b, _ := json.Marshal(st)
		return b
	}
	noop, _ := json.Marshal(lvm.ApplyReport{Steps: []lvm.Step{{Action: "skip"}, {Action: "skip"}}, Verified: true})
	results := map[string]lab.StepResult{
		"plan": {ExitCode: 0}, "apply": {ExitCode: 0}, "lvs": {ExitCode: 0},
		"reapply": {ExitCode: 0, Outputs: map[string][]byte{"apply.json": noop}},
		"status":  {ExitCode: 0, Outputs: map[string][]byte{"status.json": status(5)}},
		"monitor": {ExitCode: 0, Outputs: map[string][]byte{"monitor.json": []byte(`{"status":"OK","arrays":[{"name":"vg-hdd/tables","members":[{"disk":"sda","reads_per_s":101.5},{"disk":"sdb","reads_per_s":98}],"problems":[]}]}`)}},
	}
	rep := r.Report(results)
	if !rep.OK || !rep.ReapplyNoop || rep.MonitorStatus != "OK" || rep.MonitorLine != "vg-hdd/tables: 2 members at 98-102 reads/s" {
		t.Fatalf("a good rehearsal judged bad: %+v", rep)
	}
	// a misbuilt array, a reapply that runs something, a CRITICAL monitor
	ran, _ := json.Marshal(lvm.ApplyReport{Steps: []lvm.Step{{Action: "run", Argv: lvm.Command{"lvm", "lvcreate"}}}})
	results["status"] = lab.StepResult{Outputs: map[string][]byte{"status.json": status(2)}}
	results["reapply"] = lab.StepResult{Outputs: map[string][]byte{"apply.json": ran}}
	results["monitor"] = lab.StepResult{ExitCode: 2}
	rep = r.Report(results)
	all := strings.Join(rep.Problems, "\n")
	for _, want := range []string{"data stripes: planned 5, rehearsed 2", "apply again did run: lvm lvcreate", "CRITICAL"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
	if rep.OK {
		t.Error("a bad rehearsal judged OK")
	}
}
