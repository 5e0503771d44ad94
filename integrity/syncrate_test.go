package integrity

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/lvm"
)

// writeRecord leaves the record a run killed while capped leaves.
func writeRecord(t *testing.T, rec capRecord) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "syncaction-rate.json")
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func budgetRun(t *testing.T, run execx.Runner, capBytes int64, record string) (SyncCheckReport, error) {
	clk := newFakeClock()
	return SyncCheck(context.Background(), SyncCheckOptions{VG: "vg-hdd", LV: "tables", Runner: run, MaxRecoveryRate: capBytes,
		Clock: clk, Poll: 10 * time.Second, Deadline: clk.Now().Add(20 * time.Second), RateRecord: record})
}

// The LV's own rate is on disk before tbhost caps it, and gone once it is
// back.
func TestSyncCheckRecordsTheOwnRateBeforeCapping(t *testing.T) {
	record := filepath.Join(t.TempDir(), "sub", "syncaction-rate.json")
	run := newIdleAfterMessage(t, syncRunner(t, "128000"))
	checked := false
	run.hook = func(argv []string) {
		if slices.Equal(argv, lvm.SetMaxRecoveryRateArgv("vg-hdd", "tables", 51200)) {
			r, err := readCapRecord(record, "vg-hdd/tables")
			if err != nil || r == nil || r.OwnKiB != 128000 || r.CapKiB != 51200 || r.PID != os.Getpid() {
				t.Errorf("record when capping: %+v, %v; want own 128000, cap 51200, this pid", r, err)
			}
			checked = true
		}
	}
	rep, err := budgetRun(t, run, 50<<20, record)
	if err != nil || !checked || !rep.RecoveryRateRestored {
		t.Fatalf("err %v, record checked %v, restored %v", err, checked, rep.RecoveryRateRestored)
	}
	if _, err := os.Stat(record); !os.IsNotExist(err) {
		t.Fatalf("record still there after the rate was put back: %v", err)
	}
}

// A run killed with SIGKILL while capped leaves the cap on the LV; the next
// run must put the recorded rate back, not take the cap for the LV's own.
func TestSyncCheckPutsBackTheRateOfAKilledRun(t *testing.T) {
	killed := capRecord{LV: "vg-hdd/tables", OwnKiB: 128000, CapKiB: 51200, PID: 999999999, Started: time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)}
	t.Run("plain run, idle LV: back before the check", func(t *testing.T) {
		record := writeRecord(t, killed)
		run := syncRunner(t, "51200") // the LV still has the killed run's cap
		rep, err := budgetRun(t, run, 0, record)
		if err != nil {
			t.Fatal(err)
		}
		if got := rateCalls(run.Calls); strings.Join(got, ",") != "128000" {
			t.Fatalf("rate calls %v: want the killed run's own rate 128000 put back", got)
		}
		if i, j := slices.IndexFunc(run.Calls, func(c []string) bool { return len(c) > 2 && c[2] == "--maxrecoveryrate" }),
			slices.IndexFunc(run.Calls, func(c []string) bool { return len(c) > 2 && c[2] == "--syncaction" }); i < 0 || j < i {
			t.Fatalf("calls %q: the rate must be back before the check starts (a reload during it can hang the array)", run.Calls)
		}
		if !rep.RecoveryRateRestored || !strings.Contains(strings.Join(rep.Notes, "\n"), "was killed") {
			t.Errorf("restored %v, notes %q", rep.RecoveryRateRestored, rep.Notes)
		}
		if _, err := os.Stat(record); !os.IsNotExist(err) {
			t.Errorf("record kept: %v", err)
		}
	})
	t.Run("capped run: restores the recorded rate, not the cap", func(t *testing.T) {
		record := writeRecord(t, killed)
		run := newIdleAfterMessage(t, syncRunner(t, "51200"))
		rep, err := budgetRun(t, run, 50<<20, record)
		if err != nil {
			t.Fatal(err)
		}
		if got := rateCalls(run.Calls); strings.Join(got, ",") != "51200,128000" {
			t.Fatalf("rate calls %v: want the cap, then the recorded 128000", got)
		}
		reads := 0
		for _, c := range run.Calls {
			if slices.Equal(c, lvm.MaxRecoveryRateArgv("vg-hdd", "tables")) {
				reads++
			}
		}
		if reads != 1 {
			t.Errorf("read the LV's rate %d times, want once", reads)
		}
		if rep.RecoveryRateBefore == nil || *rep.RecoveryRateBefore != 128000 {
			t.Errorf("rate before %v, want 128000", rep.RecoveryRateBefore)
		}
		if _, err := os.Stat(record); !os.IsNotExist(err) {
			t.Errorf("record kept: %v", err)
		}
	})
	t.Run("rate changed since: record dropped", func(t *testing.T) {
		record := writeRecord(t, killed)
		run := syncRunner(t, "64000")
		rep, err := budgetRun(t, run, 0, record)
		if err != nil {
			t.Fatal(err)
		}
		if got := rateCalls(run.Calls); len(got) != 0 {
			t.Fatalf("rate calls %v: the operator's rate must stay", got)
		}
		if !strings.Contains(strings.Join(rep.Notes, "\n"), "record dropped") {
			t.Errorf("notes %q", rep.Notes)
		}
		if _, err := os.Stat(record); !os.IsNotExist(err) {
			t.Errorf("record kept: %v", err)
		}
	})
	t.Run("a check still running: back when tbhost stops waiting", func(t *testing.T) {
		record := writeRecord(t, killed)
		rec := execx.NewRecorded()
		recordLVS(rec, t, "lvs-a-2.03.16-tables-check-running.json", "vg-hdd")
		rec.On(execx.Reply{Stdout: `{"report":[{"lv":[{"raid_max_recovery_rate":"51200"}]}]}`}, lvm.MaxRecoveryRateArgv("vg-hdd", "tables")...)
		rec.On(execx.Reply{}, lvm.SetMaxRecoveryRateArgv("vg-hdd", "tables", 128000)...)
		run := newIdleAfterMessage(t, rec)
		rep, err := budgetRun(t, run, 0, record)
		if err != nil {
			t.Fatal(err)
		}
		if got := reloadsDuringCheck(append([][]string{lvm.SyncActionCheckArgv("vg-hdd", "tables")}, run.Calls...)); len(got) != 0 {
			t.Fatalf("reloaded during the check: %v (calls %q)", got, run.Calls)
		}
		if got := rateCalls(run.Calls); strings.Join(got, ",") != "128000" || !rep.RecoveryRateRestored {
			t.Fatalf("rate calls %v, restored %v", got, rep.RecoveryRateRestored)
		}
	})
}

func TestSyncCheckRefusesARecordItCannotTrust(t *testing.T) {
	for name, rec := range map[string]capRecord{
		"another LV": {LV: "vg-hdd/other", OwnKiB: 1, CapKiB: 2},
		"no cap":     {LV: "vg-hdd/tables", OwnKiB: 1, CapKiB: 0},
		"huge":       {LV: "vg-hdd/tables", OwnKiB: 1 << 40, CapKiB: 2},
	} {
		run := syncRunner(t, "2")
		if _, err := budgetRun(t, run, 50<<20, writeRecord(t, rec)); err == nil || !strings.Contains(err.Error(), "rate record") {
			t.Errorf("%s: err %v", name, err)
		}
		if got := rateCalls(run.Calls); len(got) != 0 {
			t.Errorf("%s: changed the rate: %v", name, got)
		}
	}
	// not JSON
	path := filepath.Join(t.TempDir(), "r.json")
	os.WriteFile(path, []byte("garbage"), 0o644)
	run := syncRunner(t, "2")
	if _, err := budgetRun(t, run, 50<<20, path); err == nil || len(rateCalls(run.Calls)) != 0 {
		t.Errorf("garbage record: err %v, rate calls %v", err, rateCalls(run.Calls))
	}
}

// A record whose writer is still a running tbhost is another check of the
// LV, not a killed one: refused, nothing changed.
func TestSyncCheckRefusesWhileAnotherRunHoldsTheCap(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(t.TempDir(), "tbhost")
	if err := os.WriteFile(fake, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(fake, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// until the child has exec'd, its cmdline is still this test binary's
	// (a clean-clone CI run on a loaded machine saw it so)
	cmdline := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline"
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if b, _ := os.ReadFile(cmdline); strings.HasPrefix(string(b), fake+"\x00") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never ran as %s", cmdline, fake)
		}
	}
	record := writeRecord(t, capRecord{LV: "vg-hdd/tables", OwnKiB: 128000, CapKiB: 51200, PID: cmd.Process.Pid})
	run := syncRunner(t, "51200")
	if _, err := budgetRun(t, run, 0, record); err == nil || !strings.Contains(err.Error(), "wait for it to end") {
		t.Fatalf("err %v", err)
	}
	if got := rateCalls(run.Calls); len(got) != 0 {
		t.Fatalf("changed the rate under another run: %v", got)
	}
}
