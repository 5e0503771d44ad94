package integrity

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/lvm"
)

// SyncCheckOptions: drive the kernel's own scrub, `lvchange --syncaction check`.
type SyncCheckOptions struct {
	VG, LV string
	Runner execx.Runner
	// MaxRecoveryRate caps the check per device in bytes/s (lvchange
	// --maxrecoveryrate, which takes KiB/s); 0 leaves the LV's setting.
	MaxRecoveryRate int64
	Poll            time.Duration // default 5s
	Deadline        time.Time     // stop waiting then (the check goes on in the kernel)
	Clock           Clock
	Progress        func(action string, percent float64)
	// RateRecord is the file that holds the LV's own rate while tbhost caps
	// it (DefaultRateRecordPath), so that the run after one killed while
	// capped puts it back; "" keeps none.
	RateRecord string
}

// SyncCheckReport is what the check found.
type SyncCheckReport struct {
	LV                string          `json:"lv"`
	Commands          [][]string      `json:"commands"` // what tbhost ran, in order
	Finished          bool            `json:"finished"`
	Stopped           string          `json:"stopped,omitempty"` // "budget", "interrupted"
	LastAction        string          `json:"last_action"`
	LastPercent       float64         `json:"last_percent"`
	RaidMismatchCount int64           `json:"raid_mismatch_count"`
	Images            []ImageCounters `json:"images"`
	Seconds           float64         `json:"seconds"`
	// RecoveryRateBefore is the LV's max recovery rate (KiB/s, 0 none)
	// before tbhost capped it; RecoveryRateRestored says it was put back.
	RecoveryRateBefore   *int64 `json:"recovery_rate_before_kib,omitempty"`
	RecoveryRateRestored bool   `json:"recovery_rate_restored,omitempty"`
	// CheckStopped: tbhost stopped its unfinished check (dm-raid's idle
	// message) to put the rate back; without --maxrecoveryrate a check
	// stopped waiting for goes on in the kernel.
	CheckStopped bool     `json:"check_stopped,omitempty"`
	Notes        []string `json:"notes,omitempty"`
	Problems     []string `json:"problems,omitempty"`
}

// SyncCheck starts `lvchange --syncaction check` on vg/lv (never "repair":
// LVM refuses it on integrity LVs, and check already rewrites blocks whose
// integrity checksum fails), waits with progress and reports
// raid_mismatch_count and the per-image integrity counters.
//
// With MaxRecoveryRate it records the LV's cap first and puts it back when
// it returns, however it returns (finished, budget, ctx cancelled by
// SIGTERM, an error): otherwise the next real rebuild would run at the
// scrub's cap. If the cap cannot be read it is not changed. Putting it back
// needs the LV idle, so an unfinished check is stopped first (restoreRate).
func SyncCheck(ctx context.Context, o SyncCheckOptions) (rep SyncCheckReport, err error) {
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.Poll <= 0 {
		o.Poll = 5 * time.Second
	}
	name := o.VG + "/" + o.LV
	rep = SyncCheckReport{LV: name}
	if err := lvm.CheckVGLVNames(o.VG, o.LV); err != nil {
		return rep, err
	}
	s := &syncCheck{o: o, name: name, rep: &rep, client: lvm.Client{Runner: o.Runner}}
	start := o.Clock.Now()
	top, before, err := s.preflight(ctx)
	if err != nil {
		return rep, err
	}
	defer func() {
		if rerr := s.restoreRate(ctx); rerr != nil && err == nil {
			err = rerr
		}
	}()
	if err := s.recoverCap(ctx, top); err != nil {
		return rep, err
	}
	if err := s.start(ctx, top); err != nil {
		return rep, err
	}
	all, top, err := s.wait(ctx, top)
	if err != nil {
		return rep, err
	}
	s.findings(ctx, all, top, before)
	rep.Seconds = o.Clock.Now().Sub(start).Seconds()
	return rep, nil
}

// syncCheck is one SyncCheck run.
type syncCheck struct {
	o      SyncCheckOptions
	name   string
	rep    *SyncCheckReport
	client lvm.Client
	// restore is the recovery rate to put back (KiB/s), set once tbhost
	// changed it (or found it capped by a killed run, recoverCap).
	restore *int64
	// own is the LV's own rate a killed run recorded, where the LV still
	// has that run's cap: start records and restores it, not the cap.
	own *int64
}

func (s *syncCheck) run(ctx context.Context, argv []string) error {
	s.rep.Commands = append(s.rep.Commands, argv)
	_, err := s.o.Runner.Run(ctx, argv...)
	return err
}

// preflight reads the VG and refuses LVs without redundancy.
func (s *syncCheck) preflight(ctx context.Context) (lvm.LV, map[string]int64, error) {
	all, err := s.client.LVs(ctx, s.o.VG) // the whole VG: `lvs -a VG/LV` omits the sub-LVs
	if err != nil {
		return lvm.LV{}, nil, fmt.Errorf("syncaction check %s: %w", s.name, err)
	}
	top, ok := lvm.Find(all, s.o.VG, s.o.LV)
	if !ok {
		return top, nil, fmt.Errorf("%s: not in the lvs report", s.name)
	}
	if !strings.HasPrefix(top.SegType(), "raid") || top.SegType() == "raid0" {
		return top, nil, fmt.Errorf("%s is %s: --syncaction check needs a RAID level with redundancy", s.name, top.SegType())
	}
	return top, countersByImage(all, s.o.VG, s.o.LV), nil
}

// start caps the rate (recording the old one) and starts the check, or
// joins a check already running.
func (s *syncCheck) start(ctx context.Context, top lvm.LV) error {
	switch top.SyncAction {
	case "idle", "":
	case "check":
		s.rep.Notes = append(s.rep.Notes, "a check was already running: waiting for it")
		return nil
	default:
		return fmt.Errorf("%s: sync action %q is running; wait for it to finish (tbhost integrity status %s)", s.name, top.SyncAction, s.name)
	}
	if top.SyncPercent >= 0 && top.SyncPercent < 100 {
		return fmt.Errorf("%s is not in sync (%.2f%%, action %q): wait for the sync to finish before checking", s.name, top.SyncPercent, top.SyncAction)
	}
	if s.o.MaxRecoveryRate > 0 {
		kib := max(s.o.MaxRecoveryRate/1024, 1)
		old, err := s.ownRate(ctx)
		if err != nil {
			return fmt.Errorf("%s: cannot read the current max recovery rate, so tbhost could not restore it: not changing it (%w); run without --maxrecoveryrate", s.name, err)
		}
		if s.o.RateRecord != "" {
			rec := capRecord{LV: s.name, OwnKiB: old, CapKiB: kib, PID: os.Getpid(), Started: s.o.Clock.Now().UTC()}
			if err := writeJSONAtomic(s.o.RateRecord, rec); err != nil {
				return fmt.Errorf("%s: cannot record the LV's own max recovery rate, so a killed run could not have it put back: not changing it (%w); run without --maxrecoveryrate", s.name, err)
			}
		}
		if err := s.run(ctx, lvm.SetMaxRecoveryRateArgv(s.o.VG, s.o.LV, kib)); err != nil {
			return fmt.Errorf("set --maxrecoveryrate: %w", err)
		}
		s.restore = &old
		s.rep.RecoveryRateBefore = &old
		s.rep.Notes = append(s.rep.Notes, fmt.Sprintf("max recovery rate set to %d KiB/s per device for the check; it was %s, restored when tbhost stops", kib, describeRate(old)))
	}
	if err := s.run(ctx, lvm.SyncActionCheckArgv(s.o.VG, s.o.LV)); err != nil {
		return fmt.Errorf("start the check: %w", err)
	}
	return nil
}

// currentRate reads the LV's max recovery rate (KiB/s, 0 none).
func (s *syncCheck) currentRate(ctx context.Context) (int64, error) {
	res, err := s.o.Runner.Run(ctx, lvm.MaxRecoveryRateArgv(s.o.VG, s.o.LV)...)
	if err != nil {
		return 0, err
	}
	return lvm.ParseMaxRecoveryRate(res.Stdout)
}

// ownRate is the LV's own rate: the one a killed run recorded (recoverCap
// read the LV's rate already and found that run's cap), else the LV's.
func (s *syncCheck) ownRate(ctx context.Context) (int64, error) {
	if s.own != nil {
		return *s.own, nil
	}
	return s.currentRate(ctx)
}

// recoverCap reads the rate record a killed run left (RateRecord). While
// the LV still has that run's cap, the recorded rate is its own: an idle LV
// gets it back now (a reload of an idle LV is safe) unless this run caps it
// anyway (start then restores the recorded rate, not the cap); a running
// check gets it back when tbhost stops waiting (restoreRate). A rate changed
// since makes the record stale: it is dropped. A record whose writer still
// runs is another tbhost checking the LV: refused.
func (s *syncCheck) recoverCap(ctx context.Context, top lvm.LV) error {
	if s.o.RateRecord == "" {
		return nil
	}
	rec, err := readCapRecord(s.o.RateRecord, s.name)
	if err != nil || rec == nil {
		return err
	}
	if tbhostAlive(rec.PID) {
		return fmt.Errorf("%s: tbhost (pid %d, started %s) is checking it with a capped rate (%s): wait for it to end (if pid %d is not that check, e.g. after a reboot, remove the file)", s.name, rec.PID, rec.Started.Format(time.RFC3339), s.o.RateRecord, rec.PID)
	}
	cur, err := s.currentRate(ctx)
	if err != nil {
		return fmt.Errorf("%s: cannot read the current max recovery rate to compare with %s: %w", s.name, s.o.RateRecord, err)
	}
	if cur != rec.CapKiB {
		s.rep.Notes = append(s.rep.Notes, fmt.Sprintf("%s: a run started %s left its rate record, but the LV's rate is %s, not that run's cap of %d KiB/s: it was changed since, record dropped",
			s.o.RateRecord, rec.Started.Format(time.RFC3339), describeRate(cur), rec.CapKiB))
		return removeCapRecord(s.o.RateRecord)
	}
	own := rec.OwnKiB
	s.rep.Notes = append(s.rep.Notes, fmt.Sprintf("a tbhost run (pid %d, started %s) was killed while %s's max recovery rate was capped at %d KiB/s; its own rate, %s, is put back (%s)",
		rec.PID, rec.Started.Format(time.RFC3339), s.name, rec.CapKiB, describeRate(own), s.o.RateRecord))
	switch top.SyncAction {
	case "check":
		s.restore = &own
		s.rep.RecoveryRateBefore = &own
	case "idle", "":
		if s.o.MaxRecoveryRate > 0 {
			s.own = &own
			return nil
		}
		if err := s.run(ctx, lvm.SetMaxRecoveryRateArgv(s.o.VG, s.o.LV, own)); err != nil {
			return fmt.Errorf("%s: put back the max recovery rate %s a killed run capped: %w", s.name, describeRate(own), err)
		}
		s.rep.RecoveryRateBefore, s.rep.RecoveryRateRestored = &own, true
		return removeCapRecord(s.o.RateRecord)
	}
	return nil // a rebuild or resync: no reload now; start refuses, the record stays
}

func describeRate(kib int64) string {
	if kib == 0 {
		return "unlimited (0)"
	}
	return fmt.Sprintf("%d KiB/s", kib)
}

// restoreTimeout bounds stopping the check and the lvchange that puts the
// rate back after ctx ended.
const restoreTimeout = 30 * time.Second

// restoreRate puts back the recovery rate start changed, also when ctx is
// cancelled (it runs on a context of its own). Putting it back is an
// lvchange, a table reload (suspend and resume) of the RAID LV, and a reload
// during a sync action ends a check and can hang a raid5 LV in Debian 12's
// 6.1 kernel (docs/integrity.md, TestReloadDuringSync). So the LV must be
// idle first: a check tbhost started and did not see finish (budget,
// SIGTERM) is stopped with dm-raid's "idle" message, which needs no reload;
// a rebuild or resync is never stopped and the rate is then left for the
// operator to put back.
func (s *syncCheck) restoreRate(ctx context.Context) error {
	if s.restore == nil {
		return nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), restoreTimeout)
	defer cancel()
	putBack := fmt.Sprintf("once tbhost integrity status %s shows idle, run lvchange --maxrecoveryrate %d %s", s.name, *s.restore, s.name)
	if err := s.stopCheck(rctx); err != nil {
		err = fmt.Errorf("%s: max recovery rate not restored to %s: %w; a reload while a sync action runs can hang the array, so %s", s.name, describeRate(*s.restore), err, putBack)
		s.rep.Problems = append(s.rep.Problems, err.Error())
		return err
	}
	if err := s.run(rctx, lvm.SetMaxRecoveryRateArgv(s.o.VG, s.o.LV, *s.restore)); err != nil {
		err = fmt.Errorf("%s: could not restore the max recovery rate to %s: %w; %s", s.name, describeRate(*s.restore), err, putBack)
		s.rep.Problems = append(s.rep.Problems, err.Error())
		return err
	}
	s.rep.RecoveryRateRestored = true
	if err := removeCapRecord(s.o.RateRecord); err != nil {
		s.rep.Notes = append(s.rep.Notes, fmt.Sprintf("%v: the rate is back; remove the file", err))
	}
	return nil
}

// stopPoll is how often stopCheck looks whether the check has stopped.
const stopPoll = time.Second

// stopCheck leaves the LV idle: it returns at once when it is, stops a
// check with the idle message and waits until lvs shows it stopped, and
// refuses any other sync action (a rebuild after a failed disk, a resync).
func (s *syncCheck) stopCheck(ctx context.Context) error {
	sent, deadline := false, s.o.Clock.Now().Add(restoreTimeout)
	for {
		all, err := s.client.LVs(ctx, s.o.VG)
		if err != nil {
			return fmt.Errorf("cannot see whether a sync action runs: %w", err)
		}
		top, ok := lvm.Find(all, s.o.VG, s.o.LV)
		if !ok {
			return fmt.Errorf("%s is not in the lvs report", s.name)
		}
		switch top.SyncAction {
		case "idle", "":
			if sent {
				s.rep.CheckStopped = true
				s.rep.Notes = append(s.rep.Notes, fmt.Sprintf("check stopped at %.2f%% so that the max recovery rate could be put back to %s "+
					"(putting it back reloads the LV, which would end the check anyway and can hang the array during one); the next check starts again from 0%%. "+
					"To check an LV larger than one budget covers, set its rate once while it is idle (lvchange --maxrecoveryrate KiB/s %s) and run --syncaction without --maxrecoveryrate: such a check goes on in the kernel after the budget",
					s.rep.LastPercent, describeRate(*s.restore), s.name))
			}
			return nil
		case "check":
			if !sent {
				if err := s.run(ctx, lvm.StopSyncActionArgv(s.o.VG, s.o.LV)); err != nil {
					return fmt.Errorf("stop the check: %w", err)
				}
				sent = true
				continue
			}
		default:
			return fmt.Errorf("sync action %q is running (not tbhost's check, left alone)", top.SyncAction)
		}
		if !s.o.Clock.Now().Before(deadline) {
			return fmt.Errorf("the check did not stop within %s of the idle message", restoreTimeout)
		}
		if err := s.o.Clock.Sleep(ctx, stopPoll); err != nil {
			return fmt.Errorf("the check did not stop after the idle message: %w", err)
		}
	}
}

// wait polls until the check has finished, the deadline or ctx.
func (s *syncCheck) wait(ctx context.Context, top lvm.LV) ([]lvm.LV, lvm.LV, error) {
	var all []lvm.LV
	rep := s.rep
	sawCheck, idlePolls := top.SyncAction == "check", 0
	for {
		if ctx.Err() != nil {
			rep.Stopped = "interrupted"
			break
		}
		if !s.o.Deadline.IsZero() && !s.o.Clock.Now().Before(s.o.Deadline) {
			rep.Stopped = "budget"
			break
		}
		if err := s.o.Clock.Sleep(ctx, s.o.Poll); err != nil {
			rep.Stopped = "interrupted"
			break
		}
		var err error
		all, err = s.client.LVs(ctx, s.o.VG)
		if err != nil {
			if ctx.Err() != nil {
				rep.Stopped = "interrupted"
				break
			}
			return nil, top, fmt.Errorf("poll %s: %w", s.name, err)
		}
		top, _ = lvm.Find(all, s.o.VG, s.o.LV)
		rep.LastAction, rep.LastPercent = top.SyncAction, top.SyncPercent
		if s.o.Progress != nil {
			s.o.Progress(top.SyncAction, top.SyncPercent)
		}
		if top.SyncAction == "check" {
			sawCheck = true
			continue
		}
		if top.SyncAction == "idle" || top.SyncAction == "" {
			idlePolls++
			if sawCheck || idlePolls >= 2 {
				rep.Finished = true
				break
			}
		}
	}
	if rep.Stopped != "" && s.restore == nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("stopped waiting (%s) at %.2f%%: the check goes on in the kernel; see tbhost integrity status %s", rep.Stopped, rep.LastPercent, s.name))
	}
	return all, top, nil
}

// findings compares the counters before and after the check.
func (s *syncCheck) findings(ctx context.Context, all []lvm.LV, top lvm.LV, before map[string]int64) {
	rep := s.rep
	if final, err := s.client.LVs(context.WithoutCancel(ctx), s.o.VG); err == nil {
		all = final
	}
	top, _ = lvm.Find(all, s.o.VG, s.o.LV)
	rep.RaidMismatchCount = top.RaidMismatchCount
	after := countersByImage(all, s.o.VG, s.o.LV)
	for _, img := range lvm.SubLVs(all, top, "rimage") {
		c := ImageCounters{Name: img.Name, Disks: lvm.PhysicalDevices(all, img), Before: before[img.Name], After: after[img.Name]}
		rep.Images = append(rep.Images, c)
		if c.After > c.Before {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s/%s on %s: integrity mismatches %d -> %d during the check (the RAID layer rewrote those blocks from the other images)",
				s.o.VG, img.Name, strings.Join(c.Disks, "+"), c.Before, c.After))
		}
	}
	if rep.Finished && top.RaidMismatchCount > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%s: raid_mismatch_count %d after the check (sectors whose parity did not match; the count does not say which disk)", s.name, top.RaidMismatchCount))
	}
	// a counter lvs reported in a form tbhost cannot read reads as -1 above,
	// which would pass as "nothing found": the check cannot be judged
	for _, lv := range append([]lvm.LV{top}, lvm.SubLVs(all, top, "rimage")...) {
		for _, b := range lv.BadValues {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: lvs reported %s=%q after the check: %s; tbhost cannot judge the check from it", lv.FullName(), b.Field, b.Value, b.Why))
		}
	}
}
