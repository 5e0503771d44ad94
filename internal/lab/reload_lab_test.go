//go:build lab

package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestReloadDuringSync (opt-in: TBHOST_LAB_RELOAD=1, about 8 min) proves
// the fix of docs/integrity.md's defect on a raid5 + integrity LV under an
// O_DIRECT read load: a check is stopped with dm-raid's idle message
// (dmsetup message VG-LV 0 idle, no table reload) 20 times, the pattern in
// which the 8th lvchange --maxrecoveryrate (a reload) hung the 6.1 kernel
// on 2026-12-02; then tbhost integrity scrub --syncaction
// --maxrecoveryrate --budget, five times: each must stop its check, leave
// the LV idle and put the LV's own rate back; without --maxrecoveryrate the
// check must go on in the kernel after the budget. The guest's hang watch
// ends the boot with the stacks of a task blocked for 300 s.
//
// TBHOST_LAB_RELOAD=kernel adds the evidence of the kernel's hang first:
// one lvchange --maxrecoveryrate during each of 20 checks and 40 during a
// rebuild (tbhost lvm replace, case a), which may hang the boot (it did at
// the 8th reload during a check, lvchange in raid5_quiesce from
// dm_suspend's raid_postsuspend; no hang in 80 reloads during rebuilds).
func TestReloadDuringSync(t *testing.T) {
	mode := os.Getenv("TBHOST_LAB_RELOAD")
	if mode == "" {
		t.Skip("opt-in: TBHOST_LAB_RELOAD=1 (about 8 minutes; =kernel adds the reloads that can hang the guest kernel)")
	}
	shared.prepare(t)
	files, err := realTablesAndChecksums()
	if err != nil {
		t.Skipf("needs the real Syzygy tables: %v", err)
	}
	disks, _ := Disks(HDD, 7, 256, "512e")
	toggle := `toggle() { # WHAT N: reload N times while a sync action runs
  i=0; while [ $i -lt $2 ]; do
    a=$(lvs --noheadings -o raid_sync_action vg-hdd/tables | tr -d ' ')
    [ "$a" = idle ] && break
    t0=$(cut -d' ' -f1 /proc/uptime)
    timeout 120 lvchange --maxrecoveryrate $(( (i % 2 + 1) * 512 )) vg-hdd/tables >/dev/null 2>&1; rc=$?
    echo "$1 reload $i during $a: exit $rc, $(cut -d' ' -f1 /proc/uptime) - $t0 s" | tee -a $LAB_OUT/reloads.txt
    i=$((i+1)); sleep 1
  done
  echo "$1: $i reloads" >> $LAB_OUT/summary.txt
}
`
	look := `look() { echo "$1: $(lvs --noheadings -o raid_sync_action,raid_max_recovery_rate vg-hdd/tables | tr -s ' ' | sed 's/^ //')" | tee -a $LAB_OUT/looks.txt; }
`
	steps := []Step{replaceBoot1[0]} // build: plan + apply, tables copied
	if mode == "kernel" {
		steps = append(steps,
			// a reload ends a check: start one before each of 20 reloads
			Step{Name: "check", Script: replaceCommon + toggle + `echo 30 > /proc/sys/kernel/hung_task_timeout_secs
lab_rebuild_rate 2048
load_start
j=0; while [ $j -lt 20 ]; do
  lvchange --syncaction check vg-hdd/tables >/dev/null 2>&1; sleep 3
  toggle check 1; j=$((j+1))
done
load_stop
lab_rebuild_rate 0
lvchange --maxrecoveryrate 0 vg-hdd/tables
lab_wait_idle vg-hdd/tables 600`},
			Step{Name: "rebuild", Script: replaceCommon + toggle + `echo 30 > /proc/sys/kernel/hung_task_timeout_secs
lab_rebuild_rate 2048
tbhost lvm replace --yes --poll 1s --state-dir /tmp/rs --plan /lab/out/steps/build/plan.yaml vg-hdd/tables --old $(lab_dev HDD1) --new $(lab_dev HDD7) > $LAB_OUT/replace.txt 2>&1 &
wait_for $LAB_OUT/replace.txt 'wait-rebuild: ' 600
load_start
toggle rebuild 40
load_stop
lab_rebuild_rate 0
lvchange --maxrecoveryrate 0 vg-hdd/tables
wait`})
	}
	steps = append(steps,
		// the fix's own mechanism: 20 checks stopped with the idle message
		Step{Name: "idle", Script: replaceCommon + `echo 30 > /proc/sys/kernel/hung_task_timeout_secs
lab_wait_idle vg-hdd/tables 600
lab_rebuild_rate 2048
load_start
j=0; while [ $j -lt 20 ]; do
  lvchange --syncaction check vg-hdd/tables >/dev/null 2>&1; sleep 3
  a=$(lvs --noheadings -o raid_sync_action vg-hdd/tables | tr -d ' ')
  t0=$(cut -d' ' -f1 /proc/uptime)
  timeout 120 dmsetup message vg--hdd-tables 0 idle; rc=$?
  k=0; while [ $k -lt 30 ] && [ "$(lvs --noheadings -o raid_sync_action vg-hdd/tables | tr -d ' ')" != idle ]; do sleep 1; k=$((k+1)); done
  b=$(lvs --noheadings -o raid_sync_action vg-hdd/tables | tr -d ' ')
  echo "idle $j: $a -> $b, exit $rc, $(cut -d' ' -f1 /proc/uptime) - $t0 s" | tee -a $LAB_OUT/idles.txt
  j=$((j+1))
done
load_stop
lab_rebuild_rate 0`},
		// the product path: a capped check stopped by its budget
		Step{Name: "scrub-budget", Script: replaceCommon + look + `echo 30 > /proc/sys/kernel/hung_task_timeout_secs
lab_wait_idle vg-hdd/tables 600
lvchange --maxrecoveryrate 4096 vg-hdd/tables
look "before"
load_start
j=0; while [ $j -lt 5 ]; do
  tbhost integrity scrub --json --syncaction --maxrecoveryrate 2MiB/s --budget 10s vg-hdd/tables > $LAB_OUT/scrub$j.json 2>$LAB_OUT/scrub$j.err; echo "scrub $j exit $?" >> $LAB_OUT/looks.txt
  look "after capped scrub $j"
  j=$((j+1))
done
lab_rebuild_rate 2048
tbhost integrity scrub --syncaction --budget 10s vg-hdd/tables > $LAB_OUT/plain.txt 2>&1; echo "plain exit $?" >> $LAB_OUT/looks.txt
look "after plain scrub"
dmsetup message vg--hdd-tables 0 idle
load_stop
lab_rebuild_rate 0
lab_wait_idle vg-hdd/tables 60
lvchange --maxrecoveryrate 0 vg-hdd/tables
cat $LAB_OUT/plain.txt`})
	l := &Lab{Base: shared.base}
	res, r, err := l.RunBatch(t.Context(), Config{Name: "reload", WorkDir: t.TempDir(), Disks: disks, Tbhost: shared.tbhost,
		Files: files, Timeout: 40 * time.Minute, MemMiB: 1024}, steps)
	var hang *HangError
	if errors.As(err, &hang) {
		t.Fatalf("the guest kernel hung: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("boot %v", r.Duration.Round(time.Second))
	if mode == "kernel" {
		for _, s := range []string{"check", "rebuild"} {
			t.Logf("%s (exit %d):\n%s\n%s", s, res[s].ExitCode, strings.TrimSpace(string(res[s].Outputs["summary.txt"])), res[s].Outputs["reloads.txt"])
		}
	}
	idles := strings.TrimSpace(string(res["idle"].Outputs["idles.txt"]))
	t.Logf("idle (exit %d):\n%s", res["idle"].ExitCode, idles)
	stopped := 0
	for _, l := range strings.Split(idles, "\n") {
		if strings.Contains(l, ": check -> idle, exit 0,") {
			stopped++
		}
	}
	if stopped != 20 {
		t.Errorf("%d of 20 running checks stopped by the idle message within 30 s", stopped)
	}
	checkScrubBudget(t, res["scrub-budget"])
}

// checkScrubBudget holds the scrub-budget step of TestReloadDuringSync:
// every capped budgeted scrub exits 0, says it stopped its check and put
// the rate back, and leaves the LV idle at its own rate (4096 KiB/s); the
// plain one leaves its check running.
func checkScrubBudget(t *testing.T, st StepResult) {
	t.Helper()
	looks := string(st.Outputs["looks.txt"])
	t.Logf("scrub-budget (exit %d):\n%s\n%s", st.ExitCode, looks, st.Outputs["scrub0.json"])
	for j := range 5 {
		var rep struct {
			Stopped      string `json:"stopped"`
			CheckStopped bool   `json:"check_stopped"`
			Restored     bool   `json:"recovery_rate_restored"`
		}
		if err := json.Unmarshal(st.Outputs[fmt.Sprintf("scrub%d.json", j)], &rep); err != nil {
			t.Errorf("capped scrub %d: %v\n%s", j, err, st.Outputs[fmt.Sprintf("scrub%d.err", j)])
			continue
		}
		if rep.Stopped != "budget" || !rep.CheckStopped || !rep.Restored {
			t.Errorf("capped scrub %d: stopped %q, check_stopped %v, recovery_rate_restored %v", j, rep.Stopped, rep.CheckStopped, rep.Restored)
		}
		if !strings.Contains(looks, fmt.Sprintf("scrub %d exit 0\n", j)) {
			t.Errorf("capped scrub %d did not exit 0", j)
		}
		if want := fmt.Sprintf("after capped scrub %d: idle 4096\n", j); !strings.Contains(looks, want) {
			t.Errorf("want %q: the LV idle at its own rate after the budget stop", strings.TrimSpace(want))
		}
	}
	if !strings.Contains(looks, "after plain scrub: check ") {
		t.Errorf("a scrub without --maxrecoveryrate must leave its check running after the budget")
	}
}
