package integrity

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/lvm"
)

// cancelOnSleep is a fake clock that cancels the run on its n-th sleep
// (SIGTERM in the middle of the wait).
type cancelOnSleep struct {
	*fakeClock
	n      int
	cancel context.CancelFunc
}

func (c *cancelOnSleep) Sleep(ctx context.Context, d time.Duration) error {
	c.n--
	if c.n == 0 {
		c.cancel()
	}
	return c.fakeClock.Sleep(ctx, d)
}

func syncRunner(t *testing.T, oldRate string) *execx.Recorded {
	rec := execx.NewRecorded()
	recordLVS(rec, t, "lvs-a-2.03.16-tables-clean.json", "vg-hdd")
	recordLVS(rec, t, "lvs-a-2.03.16-tables-check-running.json", "vg-hdd")
	rec.On(execx.Reply{Stdout: `{"report":[{"lv":[{"raid_max_recovery_rate":"` + oldRate + `"}]}]}`}, lvm.MaxRecoveryRateArgv("vg-hdd", "tables")...)
	rec.On(execx.Reply{}, lvm.SetMaxRecoveryRateArgv("vg-hdd", "tables", 51200)...)
	rec.On(execx.Reply{}, lvm.SetMaxRecoveryRateArgv("vg-hdd", "tables", 128000)...)
	rec.On(execx.Reply{}, lvm.SyncActionCheckArgv("vg-hdd", "tables")...)
	return rec
}

// idleAfterMessage is the kernel's side of dm-raid's idle message: lvs
// shows the check running until tbhost sends it, then idle.
type idleAfterMessage struct {
	*execx.Recorded
	t    *testing.T
	idle []byte
	sent bool
	hook func(argv []string) // called before each command, if set
}

func newIdleAfterMessage(t *testing.T, rec *execx.Recorded) *idleAfterMessage {
	b, err := os.ReadFile("testdata/lvs-a-2.03.16-tables-clean.json")
	if err != nil {
		t.Fatal(err)
	}
	rec.On(execx.Reply{}, lvm.StopSyncActionArgv("vg-hdd", "tables")...)
	return &idleAfterMessage{Recorded: rec, t: t, idle: b}
}

func (r *idleAfterMessage) Run(ctx context.Context, argv ...string) (execx.Result, error) {
	if r.hook != nil {
		r.hook(argv)
	}
	res, err := r.Recorded.Run(ctx, argv...)
	switch {
	case slices.Equal(argv, lvm.StopSyncActionArgv("vg-hdd", "tables")):
		r.sent = true
	case r.sent && slices.Equal(argv, lvm.LVsArgv("vg-hdd")):
		res.Stdout = r.idle
	}
	return res, err
}

// reloadsDuringCheck lists the lvchange --maxrecoveryrate calls made while
// the check ran: between lvchange --syncaction check and the idle message
// (or the end, if none was sent).
func reloadsDuringCheck(calls [][]string) []string {
	var out []string
	running := false
	for _, c := range calls {
		switch {
		case slices.Equal(c, lvm.SyncActionCheckArgv("vg-hdd", "tables")):
			running = true
		case slices.Equal(c, lvm.StopSyncActionArgv("vg-hdd", "tables")):
			running = false
		case running && len(c) > 3 && c[1] == "lvchange" && c[2] == "--maxrecoveryrate":
			out = append(out, c[3])
		}
	}
	return out
}

func rateCalls(calls [][]string) []string {
	var out []string
	for _, c := range calls {
		if len(c) > 3 && c[1] == "lvchange" && c[2] == "--maxrecoveryrate" {
			out = append(out, c[3])
		}
	}
	return out
}

// Issue 13: --syncaction set --maxrecoveryrate and never put it back, so
// the next real rebuild ran at the scrub's cap. Putting it back is a table
// reload, which ends a running check and can hang the array in the 6.1
// kernel (TestReloadDuringSync): an unfinished check is stopped with the
// idle message first, and only then is the rate restored.
func TestSyncCheckRestoresTheRecoveryRate(t *testing.T) {
	t.Run("budget", func(t *testing.T) {
		run := newIdleAfterMessage(t, syncRunner(t, "128000"))
		clk := newFakeClock()
		rep, err := SyncCheck(context.Background(), SyncCheckOptions{VG: "vg-hdd", LV: "tables", Runner: run, MaxRecoveryRate: 50 << 20,
			Clock: clk, Poll: 10 * time.Second, Deadline: clk.Now().Add(30 * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Stopped != "budget" || strings.Join(rateCalls(run.Calls), ",") != "51200,128000" || !rep.RecoveryRateRestored {
			t.Fatalf("stopped %q, rate calls %v, restored %v: want the cap, then 128000 back", rep.Stopped, rateCalls(run.Calls), rep.RecoveryRateRestored)
		}
		if got := reloadsDuringCheck(run.Calls); len(got) != 0 || !run.sent {
			t.Fatalf("rate changed during the check: %v (idle message sent: %v); calls %q", got, run.sent, run.Calls)
		}
		if !rep.CheckStopped || !strings.Contains(strings.Join(rep.Notes, "\n"), "starts again from 0%") {
			t.Errorf("check_stopped %v, notes %q: the report must say the check was stopped", rep.CheckStopped, rep.Notes)
		}
		if strings.Contains(strings.Join(rep.Notes, "\n"), "goes on in the kernel;") {
			t.Errorf("notes %q: a stopped check does not go on in the kernel", rep.Notes)
		}
		if rep.RecoveryRateBefore == nil || *rep.RecoveryRateBefore != 128000 {
			t.Errorf("rate before %v", rep.RecoveryRateBefore)
		}
	})
	t.Run("SIGTERM", func(t *testing.T) {
		run := newIdleAfterMessage(t, syncRunner(t, "128000"))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		clk := &cancelOnSleep{fakeClock: newFakeClock(), n: 2, cancel: cancel}
		rep, _ := SyncCheck(ctx, SyncCheckOptions{VG: "vg-hdd", LV: "tables", Runner: run, MaxRecoveryRate: 50 << 20, Clock: clk, Poll: 10 * time.Second})
		if rep.Stopped != "interrupted" {
			t.Fatalf("stopped %q, want interrupted", rep.Stopped)
		}
		if got := rateCalls(run.Calls); strings.Join(got, ",") != "51200,128000" {
			t.Fatalf("rate calls %v after cancellation: want 51200 then 128000 restored", got)
		}
		if got := reloadsDuringCheck(run.Calls); len(got) != 0 {
			t.Fatalf("rate changed during the check: %v", got)
		}
		// the stop and the restore must really run, not just be attempted
		// on the cancelled context (the recorded runner lists a call it
		// refuses)
		if !rep.RecoveryRateRestored || len(rep.Problems) != 0 {
			t.Fatalf("restored %v, problems %q: the restore must run on a context of its own", rep.RecoveryRateRestored, rep.Problems)
		}
	})
	t.Run("finished", func(t *testing.T) {
		rec := syncRunner(t, "128000")
		recordLVS(rec, t, "lvs-a-2.03.16-tables-clean.json", "vg-hdd")
		rep, err := SyncCheck(context.Background(), SyncCheckOptions{VG: "vg-hdd", LV: "tables", Runner: rec, MaxRecoveryRate: 50 << 20, Clock: newFakeClock()})
		if err != nil || !rep.Finished || !rep.RecoveryRateRestored || rep.CheckStopped {
			t.Fatalf("err %v, finished %v, restored %v, check stopped %v", err, rep.Finished, rep.RecoveryRateRestored, rep.CheckStopped)
		}
		for _, c := range rec.Calls {
			if c[0] == "dmsetup" {
				t.Fatalf("ran %q on an idle LV", c)
			}
		}
	})
	// a disk failed during the check and a rebuild runs: neither stop it
	// nor reload the LV under it
	t.Run("rebuild running", func(t *testing.T) {
		rec := syncRunner(t, "128000")
		b, err := os.ReadFile("testdata/lvs-a-2.03.16-tables-check-running.json")
		if err != nil {
			t.Fatal(err)
		}
		recover := strings.ReplaceAll(string(b), `"raid_sync_action":"check"`, `"raid_sync_action":"recover"`)
		if recover == string(b) {
			t.Fatal("fixture has no raid_sync_action check")
		}
		rec.On(execx.Reply{Stdout: recover}, lvm.LVsArgv("vg-hdd")...)
		clk := newFakeClock()
		rep, err := SyncCheck(context.Background(), SyncCheckOptions{VG: "vg-hdd", LV: "tables", Runner: rec, MaxRecoveryRate: 50 << 20,
			Clock: clk, Poll: 10 * time.Second, Deadline: clk.Now().Add(10 * time.Second)})
		if err == nil || rep.RecoveryRateRestored {
			t.Fatalf("err %v, restored %v: the rate must stay while a rebuild runs", err, rep.RecoveryRateRestored)
		}
		if got := rateCalls(rec.Calls); strings.Join(got, ",") != "51200" {
			t.Fatalf("rate calls %v: want only the cap", got)
		}
		for _, c := range rec.Calls {
			if c[0] == "dmsetup" {
				t.Fatalf("ran %q during a rebuild", c)
			}
		}
		if p := strings.Join(rep.Problems, "\n"); !strings.Contains(p, "lvchange --maxrecoveryrate 128000 vg-hdd/tables") || !strings.Contains(p, `"recover"`) {
			t.Errorf("problems %q: must name the rebuild and the command to put the rate back", rep.Problems)
		}
	})
	// the kernel never stops the check: no reload, the operator is told
	t.Run("check does not stop", func(t *testing.T) {
		rec := syncRunner(t, "128000")
		rec.On(execx.Reply{}, lvm.StopSyncActionArgv("vg-hdd", "tables")...)
		clk := newFakeClock()
		rep, err := SyncCheck(context.Background(), SyncCheckOptions{VG: "vg-hdd", LV: "tables", Runner: rec, MaxRecoveryRate: 50 << 20,
			Clock: clk, Poll: 10 * time.Second, Deadline: clk.Now().Add(10 * time.Second)})
		if err == nil || rep.RecoveryRateRestored || strings.Join(rateCalls(rec.Calls), ",") != "51200" {
			t.Fatalf("err %v, restored %v, rate calls %v: want no reload while the check runs", err, rep.RecoveryRateRestored, rateCalls(rec.Calls))
		}
		if !strings.Contains(strings.Join(rep.Problems, "\n"), "did not stop") {
			t.Errorf("problems %q", rep.Problems)
		}
	})
	t.Run("start fails", func(t *testing.T) {
		rec := execx.NewRecorded()
		recordLVS(rec, t, "lvs-a-2.03.16-tables-clean.json", "vg-hdd")
		rec.On(execx.Reply{Stdout: `{"report":[{"lv":[{"raid_max_recovery_rate":"0"}]}]}`}, lvm.MaxRecoveryRateArgv("vg-hdd", "tables")...)
		rec.On(execx.Reply{}, lvm.SetMaxRecoveryRateArgv("vg-hdd", "tables", 51200)...)
		rec.On(execx.Reply{}, lvm.SetMaxRecoveryRateArgv("vg-hdd", "tables", 0)...)
		rec.On(execx.Reply{ExitCode: 5, Stderr: "  injected"}, lvm.SyncActionCheckArgv("vg-hdd", "tables")...)
		_, err := SyncCheck(context.Background(), SyncCheckOptions{VG: "vg-hdd", LV: "tables", Runner: rec, MaxRecoveryRate: 50 << 20, Clock: newFakeClock()})
		if err == nil {
			t.Fatal("a failed lvchange --syncaction check passed")
		}
		if got := rateCalls(rec.Calls); strings.Join(got, ",") != "51200,0" {
			t.Fatalf("rate calls %v, want the cap then 0 (unlimited) restored", got)
		}
	})
}

func TestSyncCheckDoesNotCapARateItCannotRestore(t *testing.T) {
	for _, out := range []string{`{"report":[{"lv":[{"raid_max_recovery_rate":"fast"}]}]}`, `not json`, `{"report":[{"lv":[]}]}`} {
		rec := execx.NewRecorded()
		recordLVS(rec, t, "lvs-a-2.03.16-tables-clean.json", "vg-hdd")
		rec.On(execx.Reply{Stdout: out}, lvm.MaxRecoveryRateArgv("vg-hdd", "tables")...)
		_, err := SyncCheck(context.Background(), SyncCheckOptions{VG: "vg-hdd", LV: "tables", Runner: rec, MaxRecoveryRate: 50 << 20, Clock: newFakeClock()})
		if err == nil || !strings.Contains(err.Error(), "not changing it") {
			t.Errorf("%s: %v", out, err)
		}
		if got := rateCalls(rec.Calls); len(got) != 0 {
			t.Errorf("%s: changed the rate anyway: %v", out, got)
		}
	}
}

func TestSyncCheckRefusesNamesLVMWouldReadAsOptions(t *testing.T) {
	for _, vl := range [][2]string{{"-ff", "tables"}, {"vg-hdd", "../../etc"}, {"vg-hdd", "--config=x"}, {"vg hdd", "t"}} {
		rec := execx.NewRecorded()
		if _, err := SyncCheck(context.Background(), SyncCheckOptions{VG: vl[0], LV: vl[1], Runner: rec, Clock: newFakeClock()}); err == nil || len(rec.Calls) != 0 {
			t.Errorf("%q: err %v, ran %q", vl, err, rec.Calls)
		}
	}
}
