//go:build lab

package lab

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/lvm"
)

// guardPlan passes the plan made in TestLVMGuards's boot to TestLVMApply
// (test-only state of this test binary).
var guardPlan atomic.Pointer[[]byte]

// lvmDisks are the suite's host: 6 x 256 MiB HDD and 2 x 128 MiB NVMe.
func lvmDisks(t *testing.T) []Disk {
	hdd, err := Disks(HDD, 6, 256, "512n")
	if err != nil {
		t.Fatal(err)
	}
	nvme, _ := Disks(NVMe, 2, 128, "512n")
	return append(hdd, nvme...)
}

// headTail prints "<serial> <md5 of the first 4 MiB> <md5 of the last MiB>"
// for every lab disk: where labels and signatures live.
const headTail = `for e in $LAB_DISKS; do s=${e#*:}; s=${s%%:*}; d=$(lab_dev $s) || continue
  n=$(( $(cat /sys/block/${d#/dev/}/size) / 2048 ))
  echo "$s $(dd if=$d bs=1M count=4 2>/dev/null | md5sum | cut -c1-32) $(dd if=$d bs=1M skip=$((n-1)) 2>/dev/null | md5sum | cut -c1-32)"
done`

func checksums(t *testing.T, images map[string]string) map[string]string {
	sums := map[string]string{}
	for name, p := range images {
		s, err := ImageChecksum(p)
		if err != nil {
			t.Fatal(err)
		}
		sums[name] = s
	}
	return sums
}

func requireSteps(t *testing.T, res map[string]StepResult, want map[string]int) {
	t.Helper()
	for name, code := range want {
		if r := res[name]; r.ExitCode != code {
			t.Errorf("step %s: exit %d, want %d; its log:\n%s", name, r.ExitCode, code, r.LogTail(25))
		}
	}
}

// TestLVMGuards is lab scenario 2 (part 1): a disk carrying an ext4 file
// system makes apply refuse, and the refusal writes nothing: every disk
// image is bit-identical after the boot. The same boot saves a plan (with
// --wipe for the ext4 disk) for TestLVMApply's swapped-disk refusal.
func TestLVMGuards(t *testing.T) {
	shared.prepare(t)
	work := t.TempDir()
	disks := lvmDisks(t)
	images := map[string]string{}
	for i := range disks {
		p := filepath.Join(work, disks[i].Name+".img")
		os.WriteFile(p, nil, 0o644)
		os.Truncate(p, disks[i].SizeMiB<<20)
		disks[i].Image, images[disks[i].Name] = p, p
	}
	c, _ := NewCache(os.Getenv("TBHOST_LAB_CACHE"), execx.Exec{}, nil)
	if err := c.WriteExt4(context.Background(), images["hdd6"]); err != nil {
		t.Fatal(err)
	}
	before := checksums(t, images)
	steps := []Step{
		{Name: "ext4-refused", Script: `tbhost lvm plan -o $LAB_OUT/plan.yaml
tbhost lvm apply --yes $LAB_OUT/plan.yaml > $LAB_OUT/apply.txt 2>&1
echo $? > $LAB_OUT/apply.exit
cat $LAB_OUT/apply.txt
pvs --noheadings 2>/dev/null | wc -l | tr -d ' ' > $LAB_OUT/pvs.count
blkid -o value -s TYPE $(lab_dev HDD6) > $LAB_OUT/hdd6.type`},
		{Name: "plan-wipe", Script: `tbhost lvm plan --wipe $(lab_dev HDD6) -o $LAB_OUT/plan.yaml`},
	}
	l := &Lab{Base: shared.base}
	res, _, err := l.RunBatch(t.Context(), Config{Name: "guards", WorkDir: work, Disks: disks, Tbhost: shared.tbhost, Timeout: 20 * time.Minute}, steps)
	if err != nil {
		t.Fatal(err)
	}
	requireSteps(t, res, map[string]int{"ext4-refused": 0, "plan-wipe": 0})
	r := res["ext4-refused"]
	if code := strings.TrimSpace(string(r.Outputs["apply.exit"])); code != "1" {
		t.Errorf("apply on a disk with ext4: exit %s, want 1 (refused); output:\n%s", code, r.Outputs["apply.txt"])
	}
	if out := string(r.Outputs["apply.txt"]); !strings.Contains(out, "ext4") {
		t.Errorf("the refusal must name what is on the disk:\n%s", out)
	}
	if n := strings.TrimSpace(string(r.Outputs["pvs.count"])); n != "0" {
		t.Errorf("%s PVs exist after a refused apply", n)
	}
	if typ := strings.TrimSpace(string(r.Outputs["hdd6.type"])); typ != "ext4" {
		t.Errorf("HDD6 is %q after the refusal, want ext4 untouched", typ)
	}
	after := checksums(t, images)
	for name := range before {
		if before[name] != after[name] {
			t.Errorf("disk %s changed during a refused apply", name)
		}
	}
	if p := res["plan-wipe"].Outputs["plan.yaml"]; len(p) > 0 {
		guardPlan.Store(&p)
	}
}

// TestLVMApply is lab scenarios 1, 2 (part 2) and 3 in one boot:
//   - a plan made before HDD3 was swapped for another disk is refused,
//     nothing written (first and last MiBs of every disk unchanged);
//   - plan + apply on 6 HDD + 2 NVMe, verified shape, apply again is a no-op;
//   - everything removed, apply killed right after the VG step, apply
//     again converges.
//
// Apply does not wait for the initial sync here (lvm status accepts a sync
// in progress; TestRehearseExamplePlan covers --wait-sync): two syncs would
// double the boot's time.
func TestLVMApply(t *testing.T) {
	shared.prepare(t)
	pp := guardPlan.Load()
	if pp == nil {
		t.Skip("needs the plan saved by TestLVMGuards (run both: -run 'TestLVM')")
	}
	p := *pp
	disks := lvmDisks(t)
	for i := range disks {
		if disks[i].Name == "hdd3" {
			disks[i].Serial = "HDD3-NEW" // another disk in HDD3's slot
			disks[i].WWN = 0x5000c500deadbeef
		}
	}
	steps := []Step{
		{Name: "swapped-refused", Script: headTail + ` > /tmp/before
tbhost lvm apply --yes /lab/plan-old.yaml > $LAB_OUT/apply.txt 2>&1
echo $? > $LAB_OUT/apply.exit
cat $LAB_OUT/apply.txt
` + headTail + ` > /tmp/after
cmp /tmp/before /tmp/after && echo same > $LAB_OUT/disks.txt || diff /tmp/before /tmp/after > $LAB_OUT/disks.txt`},
		{Name: "apply", StopOnFailure: true, Script: `set -e
tbhost lvm plan --wipe $(lab_dev HDD6) -o $LAB_OUT/plan.yaml
tbhost lvm apply --yes --json $LAB_OUT/plan.yaml > $LAB_OUT/apply.json`},
		{Name: "reapply", Script: `tbhost lvm apply --yes --json /lab/out/steps/apply/plan.yaml > $LAB_OUT/apply.json`},
		{Name: "status", Script: `tbhost lvm status --plan /lab/out/steps/apply/plan.yaml --json > $LAB_OUT/status.json`},
		{Name: "teardown", StopOnFailure: true, Script: `set -e
lvremove -y vg-hdd/tables vg-nvme/prefix
vgremove -y vg-hdd vg-nvme
for e in $LAB_DISKS; do s=${e#*:}; s=${s%%:*}; d=$(lab_dev $s); pvremove -y $d; wipefs -a $d; done
pvs --noheadings | wc -l`},
		{Name: "interrupted", Script: `tbhost lvm plan -o $LAB_OUT/plan.yaml || exit 10
# an lvm in front of the real one kills tbhost (SIGKILL) the moment apply
# reaches its first lvcreate: right after the VG step
mkdir -p /tmp/killer
printf '#!/bin/sh\nif [ "$1" = lvcreate ]; then kill -9 $PPID; exit 137; fi\nexec /sbin/lvm "$@"\n' > /tmp/killer/lvm
chmod +x /tmp/killer/lvm
PATH=/tmp/killer:$PATH tbhost lvm apply --yes $LAB_OUT/plan.yaml > $LAB_OUT/apply1.txt 2>&1
echo "apply killed: $?"
vgs --noheadings -o vg_name 2>/dev/null | tr -d ' ' > $LAB_OUT/vgs-at-kill.txt
lvs --noheadings -o lv_name vg-hdd 2>/dev/null | tr -d ' ' > $LAB_OUT/lvs-at-kill.txt
tbhost lvm apply --yes --json $LAB_OUT/plan.yaml > $LAB_OUT/apply2.json
echo $? > $LAB_OUT/apply2.exit
tbhost lvm status --plan $LAB_OUT/plan.yaml --json > $LAB_OUT/status.json`},
	}
	l := &Lab{Base: shared.base}
	res, _, err := l.RunBatch(t.Context(), Config{Name: "apply", WorkDir: t.TempDir(), Disks: disks, Tbhost: shared.tbhost,
		Files: map[string][]byte{"/lab/plan-old.yaml": p}, Timeout: 40 * time.Minute}, steps)
	if err != nil {
		t.Fatal(err)
	}
	requireSteps(t, res, map[string]int{"swapped-refused": 0, "apply": 0, "reapply": 0, "status": 0, "teardown": 0, "interrupted": 0})

	// scenario 2: the swapped disk
	sw := res["swapped-refused"]
	if code := strings.TrimSpace(string(sw.Outputs["apply.exit"])); code != "1" {
		t.Errorf("apply of a plan whose HDD3 was swapped: exit %s, want 1; output:\n%s", code, sw.Outputs["apply.txt"])
	}
	if d := strings.TrimSpace(string(sw.Outputs["disks.txt"])); d != "same" {
		t.Errorf("a refused apply changed disks:\n%s", d)
	}

	// scenario 1: shape, and apply again is a no-op
	var ap lvm.ApplyReport
	if err := json.Unmarshal(res["apply"].Outputs["apply.json"], &ap); err != nil || !ap.Verified {
		t.Errorf("apply not verified (%v): %s", err, res["apply"].Outputs["apply.json"])
	}
	var again lvm.ApplyReport
	if err := json.Unmarshal(res["reapply"].Outputs["apply.json"], &again); err != nil {
		t.Errorf("reapply JSON: %v", err)
	}
	for _, s := range again.Steps {
		if s.Action != "skip" {
			t.Errorf("apply again ran %s (%s), want every step skipped", strings.Join(s.Argv, " "), s.Action)
		}
	}
	checkShape(t, res["status"].Outputs["status.json"])

	// scenario 3: interrupted after the VG step, converges
	in := res["interrupted"]
	if !strings.Contains(string(in.Outputs["vgs-at-kill.txt"]), "vg-hdd") {
		t.Errorf("apply was not killed after the VG step (vgs at kill: %q)", in.Outputs["vgs-at-kill.txt"])
	}
	if lvs := strings.TrimSpace(string(in.Outputs["lvs-at-kill.txt"])); lvs != "" {
		t.Errorf("apply was killed before lvcreate, yet vg-hdd has LVs %q", lvs)
	}
	if code := strings.TrimSpace(string(in.Outputs["apply2.exit"])); code != "0" {
		t.Errorf("apply after the kill: exit %s, want 0 (converged):\n%s", code, in.Outputs["apply2.json"])
	}
	checkShape(t, in.Outputs["status.json"])
}

// checkShape asserts the arrays of the suite's host from lvm status JSON.
func checkShape(t *testing.T, data []byte) {
	t.Helper()
	var st lvm.StatusReport
	if err := json.Unmarshal(data, &st); err != nil {
		t.Errorf("status JSON: %v: %s", err, data)
		return
	}
	if !st.OK {
		t.Errorf("lvm status not OK: %s", data)
	}
	found := map[string]bool{}
	for _, a := range st.Arrays {
		found[a.VG+"/"+a.LV] = true
		switch a.VG + "/" + a.LV {
		case "vg-hdd/tables":
			if a.SegType != "raid5" || a.Stripes != 6 || a.DataStripes != 5 || len(a.Images) != 6 || a.Integrity == nil || !a.Integrity.Enabled {
				t.Errorf("tables: %s %d/%d stripes, %d images, integrity %+v; want raid5 6/5, 6 images, integrity", a.SegType, a.Stripes, a.DataStripes, len(a.Images), a.Integrity)
			}
			for _, im := range a.Images {
				if im.SegType != "integrity" {
					t.Errorf("tables image %s is %s, want integrity", im.Name, im.SegType)
				}
			}
		case "vg-nvme/prefix":
			if a.SegType != "raid0" || a.Stripes != 2 {
				t.Errorf("prefix: %s %d stripes, want raid0 over 2", a.SegType, a.Stripes)
			}
		}
	}
	if !found["vg-hdd/tables"] || !found["vg-nvme/prefix"] {
		t.Errorf("arrays %v, want vg-hdd/tables and vg-nvme/prefix", found)
	}
}
