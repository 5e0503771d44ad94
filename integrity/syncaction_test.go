package integrity

import (
	"context"
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
// the next real rebuild ran at the scrub's cap.
func TestSyncCheckRestoresTheRecoveryRate(t *testing.T) {
	t.Run("budget", func(t *testing.T) {
		rec := syncRunner(t, "128000")
		clk := newFakeClock()
		rep, err := SyncCheck(context.Background(), SyncCheckOptions{VG: "vg-hdd", LV: "tables", Runner: rec, MaxRecoveryRate: 50 << 20,
			Clock: clk, Poll: 10 * time.Second, Deadline: clk.Now().Add(30 * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Stopped != "budget" || strings.Join(rateCalls(rec.Calls), ",") != "51200,128000" || !rep.RecoveryRateRestored {
			t.Fatalf("stopped %q, rate calls %v, restored %v: want the cap, then 128000 back", rep.Stopped, rateCalls(rec.Calls), rep.RecoveryRateRestored)
		}
		if rep.RecoveryRateBefore == nil || *rep.RecoveryRateBefore != 128000 {
			t.Errorf("rate before %v", rep.RecoveryRateBefore)
		}
	})
	t.Run("SIGTERM", func(t *testing.T) {
		rec := syncRunner(t, "128000")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		clk := &cancelOnSleep{fakeClock: newFakeClock(), n: 2, cancel: cancel}
		rep, _ := SyncCheck(ctx, SyncCheckOptions{VG: "vg-hdd", LV: "tables", Runner: rec, MaxRecoveryRate: 50 << 20, Clock: clk, Poll: 10 * time.Second})
		if rep.Stopped != "interrupted" {
			t.Fatalf("stopped %q, want interrupted", rep.Stopped)
		}
		if got := rateCalls(rec.Calls); strings.Join(got, ",") != "51200,128000" {
			t.Fatalf("rate calls %v after cancellation: want 51200 then 128000 restored", got)
		}
		// the restore must really run, not just be attempted on the
		// cancelled context (the recorded runner lists a call it refuses)
		if !rep.RecoveryRateRestored || len(rep.Problems) != 0 {
			t.Fatalf("restored %v, problems %q: the restore must run on a context of its own", rep.RecoveryRateRestored, rep.Problems)
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
