package lab

import (
	"errors"
	"strings"
	"testing"
)

func TestHangWatcherReportsTheBlockedTasksOnce(t *testing.T) {
	const mark = "TBHOST-LAB-0123"
	serial := "[  364.1] md: recovery of RAID array mdX\r\n" +
		mark + " HUNG\r\n" +
		"[ 1330.6] INFO: task lvchange:1161 blocked for more than 966 seconds.\r\n" +
		"[ 1332.0] sysrq: Show Blocked State\r\n" +
		"[ 1332.0] task:lvchange        state:D stack:0     pid:1161\r\n" +
		"[ 1332.0]  stop_sync_thread+0x12a/0x1d0 [md_mod]\r\n" +
		"[ 1332.1] random noise " + mark + " HUNG-END\r\n" +
		mark + " HUNG\r\nsecond report\r\n" + mark + " HUNG-END\r\n"
	var reports []string
	w := newHangWatcher(mark, func(r string) { reports = append(reports, r) })
	// the console arrives in arbitrary pieces
	for i := 0; i < len(serial); i += 7 {
		w.Write([]byte(serial[i:min(i+7, len(serial))]))
	}
	if len(reports) != 1 {
		t.Fatalf("%d reports, want 1: %q", len(reports), reports)
	}
	for _, want := range []string{"lvchange:1161 blocked for more than 966 seconds", "stop_sync_thread", "state:D"} {
		if !strings.Contains(reports[0], want) {
			t.Errorf("report lacks %q:\n%s", want, reports[0])
		}
	}
	if strings.Contains(reports[0], "md: recovery") || strings.Contains(reports[0], mark) {
		t.Errorf("report holds lines outside the markers:\n%s", reports[0])
	}
	err := error(&HangError{Report: reports[0], LogPath: "/tmp/serial.log"})
	var h *HangError
	if !errors.As(err, &h) || !strings.Contains(err.Error(), "lvchange:1161 blocked for more than 966 seconds") || !strings.Contains(err.Error(), "/tmp/serial.log") {
		t.Errorf("error: %v", err)
	}
}

func TestHangWatcherIgnoresAConsoleWithoutTheEndMarker(t *testing.T) {
	const mark = "TBHOST-LAB-0123"
	fired := false
	w := newHangWatcher(mark, func(string) { fired = true })
	w.Write([]byte("[  120.0] INFO: task dd:99 blocked for more than 120 seconds.\n" + mark + " HUNG\npartial report\n"))
	w.Write([]byte("OTHER-MARK HUNG-END\n"))
	if fired {
		t.Error("fired without this run's HUNG-END")
	}
}

// The report of the lab's lvcreate deadlock (TestLVMApplyLvcreateCut's
// first version, 2026-12-03; trimmed), and others that are not it.
func TestHangErrorLvcreateDeadlock(t *testing.T) {
	const lvcreate = "[  243.059831] INFO: task mdX_resync:1320 blocked for more than 120 seconds.\n" +
		"blocked task 1070: lvm lvcreate --yes --wipesignatures y --type raid5 --stripes 5 --raidintegrity y --name tables -- vg-hdd /dev/sda ; parent 296: tbhost lvm apply --yes /lab/out/plan.yaml \n" +
		"blocked task 1320: ; parent 2: \n" +
		"[  485.405266] task:lvm             state:D stack:0     pid:1070  ppid:296    flags:0x00004006\n" +
		"[  485.405574]  kthread_stop+0x66/0x170\n" +
		"[  485.405734]  raid_dtr+0x23/0x40 [dm_raid]\n" +
		"[  485.405755]  dm_table_destroy+0x5c/0x120 [dm_mod]\n"
	if !(&HangError{Report: lvcreate}).LvcreateDeadlock() {
		t.Error("the lab's lvcreate deadlock was not recognised")
	}
	// the same deadlock under a scenario's own lvcreate (the integrity
	// boot of a clean-clone run, 2026-12-04: it failed the suite, not
	// retried, as the pattern wanted "lvm lvcreate")
	for _, argv0 := range []string{"lvcreate -y", "/sbin/lvcreate -y"} {
		if !(&HangError{Report: strings.ReplaceAll(lvcreate, "lvm lvcreate --yes", argv0)}).LvcreateDeadlock() {
			t.Errorf("the deadlock of a scenario's %q was not recognised", argv0)
		}
	}
	for name, report := range map[string]string{
		"lvchange reload":      strings.ReplaceAll(strings.ReplaceAll(lvcreate, "lvm lvcreate", "lvm lvchange"), "raid_dtr", "raid_postsuspend"),
		"lvcreate elsewhere":   strings.ReplaceAll(lvcreate, "raid_dtr", "raid_ctr"),
		"lvremove in raid_dtr": strings.ReplaceAll(lvcreate, "lvm lvcreate", "lvm lvremove"),
		"lvcreateX":            strings.ReplaceAll(lvcreate, "lvm lvcreate", "lvcreatex"),
		"no command lines":     "[  485.405734]  raid_dtr+0x23/0x40 [dm_raid]\nlvm lvcreate\n",
	} {
		if (&HangError{Report: report}).LvcreateDeadlock() {
			t.Errorf("%s: taken for lvcreate's deadlock", name)
		}
	}
}
