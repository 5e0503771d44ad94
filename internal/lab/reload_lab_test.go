//go:build lab

package lab

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// TestReloadDuringSync (opt-in: TBHOST_LAB_RELOAD=1, 6-8 min) reloads a
// raid5 + integrity LV's table (lvchange --maxrecoveryrate, as tbhost
// integrity scrub --syncaction --maxrecoveryrate does when it puts the
// rate back) under an O_DIRECT read load: once during each of 20 checks
// (a reload ends a check), then 40 times during a rebuild (tbhost lvm
// replace, case a); then it runs tbhost's budgeted scrub and looks at the
// check right after. The guest's hang watch ends the boot on a reload that
// never returns, with the stacks (2026-12-02: the 8th reload during a
// check, lvchange in raid5_quiesce for over 300 s; no hang in 80 reloads
// during rebuilds). It fails on docs/integrity.md's known defect (tbhost's
// budget stop ends the check it says goes on) until that is fixed.
func TestReloadDuringSync(t *testing.T) {
	if os.Getenv("TBHOST_LAB_RELOAD") == "" {
		t.Skip("opt-in: TBHOST_LAB_RELOAD=1 (about 10 minutes)")
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
	steps := []Step{
		replaceBoot1[0], // build: plan + apply, tables copied
		// a reload ends a check: start one before each of 20 reloads
		{Name: "check", Script: replaceCommon + toggle + `echo 30 > /proc/sys/kernel/hung_task_timeout_secs
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
		{Name: "rebuild", Script: replaceCommon + toggle + `echo 30 > /proc/sys/kernel/hung_task_timeout_secs
lab_rebuild_rate 2048
tbhost lvm replace --yes --poll 1s --state-dir /tmp/rs --plan /lab/out/steps/build/plan.yaml vg-hdd/tables --old $(lab_dev HDD1) --new $(lab_dev HDD7) > $LAB_OUT/replace.txt 2>&1 &
wait_for $LAB_OUT/replace.txt 'wait-rebuild: ' 600
load_start
toggle rebuild 40
load_stop
lab_rebuild_rate 0
lvchange --maxrecoveryrate 0 vg-hdd/tables
wait`},
		// the product path: a check stopped by its budget, its rate put
		// back (a reload): does the check go on in the kernel, as tbhost
		// says, and does a plain reload during a check end it?
		{Name: "scrub-budget", Script: replaceCommon + `look() { echo "$1: $(lvs --noheadings -o sync_percent,raid_sync_action vg-hdd/tables | tr -s ' ') | $(dmsetup status vg--hdd-tables | cut -d' ' -f3-)" | tee -a $LAB_OUT/looks.txt; }
lab_wait_idle vg-hdd/tables 600
tbhost integrity scrub --syncaction --maxrecoveryrate 2MiB/s --budget 15s vg-hdd/tables > $LAB_OUT/scrub.txt 2>&1; echo $? > $LAB_OUT/scrub.rc
look "right after tbhost's budget stop"
sleep 3; look "3 s later"
cat $LAB_OUT/scrub.txt
lab_wait_idle vg-hdd/tables 600
lab_rebuild_rate 2048
lvchange --syncaction check vg-hdd/tables
sleep 5; look "plain check, 5 s in"
lvchange --maxrecoveryrate 1024 vg-hdd/tables
look "right after a reload"
sleep 3; look "3 s later"
lab_rebuild_rate 0
lvchange --maxrecoveryrate 0 vg-hdd/tables
lab_wait_idle vg-hdd/tables 600`},
	}
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
	looks := string(res["scrub-budget"].Outputs["looks.txt"])
	t.Logf("scrub-budget (exit %d):\n%s", res["scrub-budget"].ExitCode, looks)
	// tbhost says the check goes on in the kernel after its budget stop:
	// it does not while putting the rate back is a reload (the known
	// defect of docs/integrity.md; this fails until it is fixed)
	for _, l := range strings.Split(looks, "\n") {
		if strings.HasPrefix(l, "right after tbhost's budget stop:") && !strings.Contains(l, " check ") {
			t.Errorf("tbhost integrity scrub --syncaction --maxrecoveryrate --budget ended the check it says goes on: %s\n%s", l, res["scrub-budget"].Outputs["scrub.txt"])
		}
	}
	for _, s := range []string{"check", "rebuild"} {
		t.Logf("%s (exit %d):\n%s\n%s", s, res[s].ExitCode, strings.TrimSpace(string(res[s].Outputs["summary.txt"])), res[s].Outputs["reloads.txt"])
	}
}
