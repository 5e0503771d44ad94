package lvm

// This file runs a replacement (replace.go builds it): guards, typed
// confirmation, a state file written before and after every step, steps
// that detect from lvs that they are already done, the waits with progress,
// the verification lvm apply does, and the updated plan.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tbhost/tbhost/internal/atomicfile"
	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/clock"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/filelock"
	"github.com/tbhost/tbhost/internal/sysread"
	"github.com/tbhost/tbhost/internal/timeline"
)

// ReplaceStateVersion is the version of the replace state file.
const ReplaceStateVersion = 1

// Replace step statuses in the state file.
const (
	ReplaceStarted = "started"
	ReplaceDone    = "done"
	ReplaceSkipped = "skipped" // found already done from lvs
)

// ReplaceStepState is what the state file remembers of one step.
type ReplaceStepState struct {
	Kind   string    `json:"kind"`
	Status string    `json:"status,omitempty"`
	Note   string    `json:"note,omitempty"`
	Start  time.Time `json:"start,omitzero"`
	End    time.Time `json:"end,omitzero"`
}

// ReplaceState is the state file of one replacement.
type ReplaceState struct {
	Version int    `json:"version"`
	Array   string `json:"array"`
	Old     string `json:"old"`
	New     string `json:"new"`
	// NewSerial and NewSize identify the new disk: a resumed run refuses
	// another disk under the same name.
	NewSerial string             `json:"new_serial"`
	NewSize   int64              `json:"new_size"`
	Status    string             `json:"status"` // running, done
	Plan      ReplacePlan        `json:"plan"`
	Steps     []ReplaceStepState `json:"steps"`
	Started   time.Time          `json:"started"`
	Updated   time.Time          `json:"updated"`
	// OfflineSeconds (case c): seconds since boot until the degraded
	// activation made the tables readable again.
	OfflineSeconds float64 `json:"offline_seconds,omitempty"`
	PlanOut        string  `json:"plan_out,omitempty"`
}

// ReplaceOptions are `tbhost lvm replace`'s arguments and flags.
type ReplaceOptions struct {
	VG, LV   string
	Old, New string
	DryRun   bool
	Yes      bool
	// Plan is the reviewed plan of the array (optional); PlanOut is where
	// the updated plan goes (default: next to PlanPath, .updated.yaml).
	Plan     *Plan
	PlanPath string
	PlanOut  string
	StateDir string
	Poll     time.Duration
	Rates    timeline.Rates
}

// Replacer runs replacements. Every external program goes through Runner.
type Replacer struct {
	Runner execx.Runner
	// Inventory reads the machine; with signatures it also reads the first
	// and last bytes of every disk for data signatures. Only the new disk's
	// guard needs them, before a replacement starts: every later look
	// (between steps, before the verification, on a resumed run) asks
	// without, so tbhost adds no probe reads (256 KiB per disk) to the
	// disks of an array that is rebuilding or re-initialising, where each
	// would queue behind that I/O.
	Inventory func(ctx context.Context, signatures bool) (*blockdev.Inventory, error)
	// Out gets the case, the plan and one line per step; may be nil.
	Out io.Writer
	// Confirm asks the operator to type want; nil: no terminal.
	Confirm func(question, want string) error
	Sleep   func(ctx context.Context, d time.Duration) error
	Now     func() time.Time
	// Uptime is the time since boot (case c's offline time); nil: unknown.
	Uptime func() (time.Duration, error)
}

// ReplaceReport is the outcome of a replace.
type ReplaceReport struct {
	DryRun       bool               `json:"dry_run"`
	Resumed      bool               `json:"resumed"`
	Plan         *ReplacePlan       `json:"plan,omitempty"`
	Notes        []string           `json:"notes,omitempty"`
	Steps        []ReplaceStepState `json:"steps,omitempty"`
	Verification []Check            `json:"verification,omitempty"`
	Verified     bool               `json:"verified"`
	// OfflineSeconds (case c): how long the tables were unreadable since boot.
	OfflineSeconds float64 `json:"offline_seconds,omitempty"`
	UpdatedPlan    string  `json:"updated_plan,omitempty"`
	StateFile      string  `json:"state_file,omitempty"`
}

func (r Replacer) say(format string, a ...any) {
	if r.Out != nil {
		fmt.Fprintf(r.Out, format+"\n", a...)
	}
}

func (r Replacer) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// ReplaceStatePath is the state file of vg/lv's replacement under dir.
func ReplaceStatePath(dir, vg, lv string) string {
	return filepath.Join(dir, "replace-"+vg+"-"+lv+".json")
}

// machine is one look at the host and LVM.
type machine struct {
	inv *blockdev.Inventory
	lvs []LV
	pvs []PV
	ext int64
}

func (r Replacer) look(ctx context.Context, vg string, signatures bool) (*machine, error) {
	inv, err := r.Inventory(ctx, signatures)
	if err != nil {
		return nil, fmt.Errorf("re-read the machine: %w", err)
	}
	c := Client{Runner: r.Runner}
	m := &machine{inv: inv}
	if m.lvs, err = c.LVs(ctx, vg); err != nil {
		return nil, lvmErr(err)
	}
	if m.pvs, err = c.PVs(ctx); err != nil {
		return nil, lvmErr(err)
	}
	vgs, err := c.VGs(ctx, vg)
	if err != nil {
		return nil, lvmErr(err)
	}
	for _, v := range vgs {
		if v.Name == vg {
			m.ext = v.ExtentSize
		}
	}
	return m, nil
}

// pvOf is the PV of device d (matched by path, by-id link or kernel name).
func (m *machine) pvOf(d *blockdev.Device) *PV {
	for i := range m.pvs {
		if x := m.inv.Find(m.pvs[i].Name); x != nil && x == d {
			return &m.pvs[i]
		}
	}
	return nil
}

// Replace runs (or, with DryRun, prints) the replacement of opts.Old by
// opts.New in opts.VG/opts.LV. A state file under StateDir records every
// step before and after it runs; running Replace again after an
// interruption continues from it, and each step checks lvs first, so a
// step that finished without being recorded is not run twice.
func (r Replacer) Replace(ctx context.Context, opts ReplaceOptions) (*ReplaceReport, error) {
	rep := &ReplaceReport{DryRun: opts.DryRun}
	if err := CheckVGLVNames(opts.VG, opts.LV); err != nil {
		return rep, &RefusedError{What: "lvm replace refused", Problems: []string{err.Error()}}
	}
	if why := CheckDevPath(opts.New); why != "" {
		return rep, &RefusedError{What: "lvm replace refused", Problems: []string{fmt.Sprintf("--new %q: %s (name the disk as /dev/sdX or /dev/disk/by-id/...)", opts.New, why)}}
	}
	if opts.Old != OldMissing {
		if why := CheckDevPath(opts.Old); why != "" {
			return rep, &RefusedError{What: "lvm replace refused", Problems: []string{fmt.Sprintf("--old %q: %s (or --old missing for a disk that is gone)", opts.Old, why)}}
		}
	}
	name := opts.VG + "/" + opts.LV
	var st *ReplaceState
	var unlock func()
	if opts.StateDir != "" && !opts.DryRun {
		var err error
		if unlock, err = lockReplace(opts.StateDir, opts.VG, opts.LV); err != nil {
			return rep, err
		}
		defer unlock()
	}
	statePath := ""
	if opts.StateDir != "" {
		statePath = ReplaceStatePath(opts.StateDir, opts.VG, opts.LV)
		rep.StateFile = statePath
		var err error
		if st, err = loadReplaceState(statePath); err != nil {
			return rep, err
		}
		if st != nil && (st.Array != name || st.Old != opts.Old || st.New != opts.New) {
			if st.Status == "done" {
				st = nil // an earlier replacement of this array, finished: a new one starts
			} else {
				return rep, &RefusedError{What: "lvm replace refused (nothing was run)", Problems: []string{fmt.Sprintf(
					"a replacement of %s by %s in %s is in progress (state file %s): finish it with the same --old and --new, or move the state file away if it is abandoned",
					st.Old, st.New, st.Array, statePath)}}
			}
		}
	}
	// signatures only for the guard of a replacement that starts now
	m, err := r.look(ctx, opts.VG, st == nil)
	if err != nil {
		return rep, err
	}
	newDev := m.inv.Find(opts.New)
	if newDev == nil {
		return rep, &RefusedError{What: "lvm replace refused (nothing was run)", Problems: []string{fmt.Sprintf("--new %s: no such disk or partition on %s (see tbhost inventory)", opts.New, hostName(m.inv))}}
	}
	if st != nil && st.Status == "done" {
		rep.Resumed, rep.Plan, rep.Steps, rep.OfflineSeconds = true, &st.Plan, st.Steps, st.OfflineSeconds
		rep.Notes = append(rep.Notes, fmt.Sprintf("this replacement finished earlier (state file %s): verifying only", statePath))
		return rep, r.finish(ctx, opts, st, rep)
	}
	var plan ReplacePlan
	if st != nil {
		if st.NewSerial != newDev.Serial || st.NewSize != newDev.Size {
			return rep, &RefusedError{What: "lvm replace refused (nothing was run)", Problems: []string{fmt.Sprintf(
				"%s is now serial %s, %d bytes; the replacement in %s started on serial %s, %d bytes: another disk under that name",
				opts.New, orDash(newDev.Serial), newDev.Size, statePath, orDash(st.NewSerial), st.NewSize)}}
		}
		plan, rep.Resumed = st.Plan, true
		rep.Notes = append(rep.Notes, fmt.Sprintf("resuming the replacement recorded in %s (case %s): steps already done are skipped", statePath, plan.Situation.Case))
	} else {
		s, err := DetectReplace(m.lvs, m.ext, m.inv, opts.VG, opts.LV, opts.Old)
		if err != nil {
			return rep, err
		}
		problems, notes := GuardNewDisk(s, newDev, m.pvOf(newDev))
		rep.Notes = append(rep.Notes, notes...)
		if len(problems) > 0 {
			return rep, &RefusedError{What: "lvm replace refused (nothing was run): the new disk " + opts.New, Problems: problems}
		}
		if opts.Plan != nil && planArray(opts.Plan, opts.VG, opts.LV) == nil {
			return rep, &RefusedError{What: "lvm replace refused (nothing was run)", Problems: []string{fmt.Sprintf("the plan has no array %s", name)}}
		}
		plan = BuildReplacePlan(s, opts.New, opts.Rates)
	}
	rep.Plan = &plan
	r.printPlan(plan)
	if opts.DryRun {
		rep.Notes = append(rep.Notes, "dry run: nothing was run")
		return rep, nil
	}
	if st == nil {
		if !opts.Yes {
			q := fmt.Sprintf("replace %s of %s (%s) by %s: %d commands, case %s", plan.Situation.Image, name, plan.Situation.OldPV, opts.New, len(plan.Commands()), plan.Situation.Case)
			if r.Confirm == nil {
				return rep, &RefusedError{What: "lvm replace refused (nothing was run)", Problems: []string{q + ": no terminal to ask on; re-run with --yes to confirm (see --dry-run first)"}}
			}
			if err := r.Confirm(q+"? Type "+name+" to continue:", name); err != nil {
				return rep, err
			}
		}
		st = &ReplaceState{Version: ReplaceStateVersion, Array: name, Old: opts.Old, New: opts.New,
			NewSerial: newDev.Serial, NewSize: newDev.Size, Status: "running", Plan: plan, Started: r.now()}
		for _, s := range plan.Steps {
			st.Steps = append(st.Steps, ReplaceStepState{Kind: s.Kind})
		}
	}
	save := func() error {
		if statePath == "" {
			return nil
		}
		st.Updated = r.now()
		return saveReplaceState(statePath, st)
	}
	if err := save(); err != nil {
		return rep, err
	}
	for i, step := range plan.Steps {
		ss := &st.Steps[i]
		if ss.Status == ReplaceDone || ss.Status == ReplaceSkipped {
			r.say("done      %s", stepLine(step))
			continue
		}
		m, err := r.look(ctx, opts.VG, false)
		if err != nil {
			return r.stop(rep, st, err)
		}
		if done, why := stepDone(step, &plan.Situation, m, opts.New); done {
			ss.Status, ss.Note, ss.End = ReplaceSkipped, why, r.now()
			r.say("skip      %s   (%s)", stepLine(step), why)
			if err := save(); err != nil {
				return r.stop(rep, st, err)
			}
			r.afterStep(step, st)
			continue
		}
		ss.Status, ss.Start = ReplaceStarted, r.now()
		if err := save(); err != nil {
			return r.stop(rep, st, err)
		}
		if step.Argv != nil {
			r.say("run       %s", execx.Quote(step.Argv))
			// a signal (SIGTERM, Ctrl-C) stops tbhost between steps, never an
			// lvm command half-way through its metadata update
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), StepTimeout)
			_, err := r.Runner.Run(cctx, step.Argv...)
			cancel()
			if err != nil {
				return r.stop(rep, st, &StepFailedError{Argv: step.Argv, Err: err})
			}
		} else {
			r.say("wait      %s", step.What)
			if err := r.wait(ctx, step, &plan.Situation, opts); err != nil {
				return r.stop(rep, st, err)
			}
		}
		ss.Status, ss.End = ReplaceDone, r.now()
		r.afterStep(step, st)
		if err := save(); err != nil {
			return r.stop(rep, st, err)
		}
	}
	st.Status = "done"
	if err := save(); err != nil {
		return rep, err
	}
	rep.Steps, rep.OfflineSeconds = st.Steps, st.OfflineSeconds
	return rep, r.finish(ctx, opts, st, rep)
}

func (r Replacer) afterStep(step ReplaceStep, st *ReplaceState) {
	if step.Kind != RStepActivate || st.OfflineSeconds > 0 || r.Uptime == nil {
		return
	}
	if up, err := r.Uptime(); err == nil {
		st.OfflineSeconds = up.Seconds()
		r.say("tables readable again (degraded): they were offline for %s since boot (plus the time the host was down)", timeline.Human(up.Seconds()))
	}
}

func (r Replacer) stop(rep *ReplaceReport, st *ReplaceState, err error) (*ReplaceReport, error) {
	rep.Steps = st.Steps
	return rep, err
}

func stepLine(s ReplaceStep) string {
	if s.Argv != nil {
		return execx.Quote(s.Argv)
	}
	return s.What
}

func (r Replacer) printPlan(p ReplacePlan) {
	s := p.Situation
	r.say("case %s: %s", s.Case, caseTitle(s.Case))
	for _, w := range s.Why {
		r.say("  because %s", w)
	}
	r.say("steps (%s, image %s of %s on each disk):", s.Array(), s.Image, humanBytes(s.ImageBytes))
	for i, st := range p.Steps {
		line := stepLine(st)
		if st.Estimate != nil {
			line += fmt.Sprintf("   [about %s at %s/s]", st.Estimate.Human, humanBytes(st.Estimate.Rate))
		}
		r.say("  %2d. %s", i+1, line)
		if st.Argv != nil {
			r.say("      %s", st.What)
		}
	}
	r.say("without redundancy: %s", p.WithoutRedundancyText)
	r.say("without integrity:  %s", p.WithoutIntegrityText)
}

func caseTitle(c ReplaceCase) string {
	switch c {
	case CasePresent:
		return "the old disk is present: replace it"
	case CaseVanished:
		return "the old disk vanished while the array ran: repair onto the new disk"
	case CaseMissingAtBoot:
		return "the old disk was missing at boot: tables back online degraded, then repair, then integrity again"
	}
	return string(c)
}

func humanBytes(n int64) string {
	const mib = 1 << 20
	switch {
	case n >= 1<<40:
		return fmt.Sprintf("%.2f TiB", float64(n)/(1<<40))
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%d MiB", n/mib)
}

// stepDone reports whether a step's effect is already there (from lvs).
func stepDone(step ReplaceStep, s *Situation, m *machine, newPath string) (bool, string) {
	top, ok := Find(m.lvs, s.VG, s.LV)
	if !ok {
		return false, ""
	}
	images := SubLVs(m.lvs, top, "rimage")
	newDev := m.inv.Find(newPath)
	var newPV *PV
	if newDev != nil {
		newPV = m.pvOf(newDev)
	}
	onNew, onMissing, onOld := 0, 0, 0
	for _, img := range images {
		devs := PhysicalDevices(m.lvs, img)
		if len(devs) == 0 || OnMissingPV(m.lvs, img) {
			onMissing++
			continue
		}
		for _, d := range devs {
			if x := m.inv.Find(d); newDev != nil && x == newDev {
				onNew++
			}
			if d == s.OldPV {
				onOld++
			}
		}
	}
	withIntegrity := 0
	for _, img := range images {
		if img.SegType() == "integrity" {
			withIntegrity++
		}
	}
	switch step.Kind {
	case RStepIntegrityOff:
		if withIntegrity == 0 {
			return true, "no image has integrity"
		}
	case RStepActivate:
		if top.Active() {
			return true, s.Array() + " is active"
		}
	case RStepPVCreate:
		if newPV != nil {
			return true, newPath + " is a PV"
		}
	case RStepVGExtend:
		if newPV != nil && newPV.VG == s.VG {
			return true, newPath + " is in " + s.VG
		}
	case RStepReplace:
		if onNew == 1 && onOld == 0 {
			return true, s.Image + " is on " + newPath
		}
	case RStepRepair:
		if onNew == 1 && onMissing == 0 {
			return true, "an image is on " + newPath + " and none on a missing PV"
		}
	case RStepVGReduce:
		for _, pv := range m.pvs {
			if pv.VG != s.VG {
				continue
			}
			if s.OldPV != "[unknown]" && pv.Name == s.OldPV {
				return false, ""
			}
			if pv.Name == "[unknown]" || (len(pv.Attr) >= 3 && pv.Attr[2] == 'm') {
				return false, ""
			}
		}
		return true, "no missing or old PV left in " + s.VG
	case RStepIntegrityOn:
		if withIntegrity == len(images) && len(images) > 0 {
			return true, "every image has integrity"
		}
	}
	return false, ""
}

// ErrSecondFailure is returned (wrapped) when a wait finds the array
// degraded in a way the replacement does not cover.
var ErrSecondFailure = errors.New("another member failed")

// wait polls lvs until the step's condition holds, printing progress
// with an ETA.
func (r Replacer) wait(ctx context.Context, step ReplaceStep, s *Situation, opts ReplaceOptions) error {
	every := opts.Poll
	if every <= 0 {
		every = 5 * time.Second
	}
	sleep := r.Sleep
	if sleep == nil {
		sleep = clock.Sleep
	}
	c := Client{Runner: r.Runner}
	var firstPct float64 = -1
	var firstAt time.Time
	last := ""
	// a rebuild counts as done only when seen below 100 % before, or at
	// 100 % and idle on two polls in a row: right after lvconvert returns
	// the kernel may not have started the recovery yet
	seenBelow, doneOnce := false, false
	for {
		all, err := c.LVs(ctx, s.VG)
		if err != nil {
			return lvmErr(err)
		}
		top, ok := Find(all, s.VG, s.LV)
		if !ok {
			return fmt.Errorf("wait for %s: %s is gone", step.Kind, s.Array())
		}
		h := AssessArray(all, top)
		missing := 0
		for _, img := range h.Images {
			if img.Missing {
				missing++
			}
		}
		if missing > 0 && step.Kind != RStepWaitInSync {
			return fmt.Errorf("wait for %s of %s: %d image(s) on a missing PV after the repair: %w; see tbhost lvm status", step.Kind, s.Array(), missing, ErrSecondFailure)
		}
		pct, done := 0.0, false
		switch step.Kind {
		case RStepWaitInSync:
			pct = top.SyncPercent
			done = pct >= 100
		case RStepWaitRebuild:
			pct = top.SyncPercent
			done = pct >= 100 && (top.SyncAction == "idle" || top.SyncAction == "")
			if !done {
				seenBelow = true
			} else if !seenBelow && !doneOnce {
				doneOnce, done = true, false
			}
		case RStepWaitIntegrity:
			pct = 100
			for _, img := range h.Images {
				if img.LV.SyncPercent >= 0 && img.LV.SyncPercent < pct {
					pct = img.LV.SyncPercent
				}
			}
			done = pct >= 100
		}
		if done {
			r.say("          %s: 100%%", step.Kind)
			return nil
		}
		now := r.now()
		eta := "ETA unknown"
		if firstPct < 0 {
			firstPct, firstAt = pct, now
		} else if pct > firstPct {
			rate := (pct - firstPct) / now.Sub(firstAt).Seconds()
			eta = "ETA " + timeline.Human((100-pct)/rate)
		}
		if line := fmt.Sprintf("%.2f%%", pct); line != last {
			r.say("          %s: %.2f%% (%s)", step.Kind, pct, eta)
			last = line
		}
		if err := sleep(ctx, every); err != nil {
			return fmt.Errorf("wait for %s of %s (at %.2f%%): %w; run the same replace again to continue", step.Kind, s.Array(), pct, err)
		}
	}
}

// finish verifies the array's shape like lvm apply and writes the updated
// plan when one was given.
func (r Replacer) finish(ctx context.Context, opts ReplaceOptions, st *ReplaceState, rep *ReplaceReport) error {
	m, err := r.look(ctx, opts.VG, false)
	if err != nil {
		return err
	}
	s := st.Plan.Situation
	var arr Array
	var deviceOf func(string) string
	var updated *Plan
	if opts.Plan != nil {
		updated, err = UpdatedPlan(opts.Plan, m.inv, &s, opts.New, r.now())
		if err != nil {
			return err
		}
		arr = *planArray(updated, s.VG, s.LV)
		deviceOf = func(pv string) string { return planID(updated, m.inv, pv) }
	} else {
		arr = Array{VG: s.VG, LV: s.LV, Type: "raid5", Stripes: s.Images, DataStripes: s.DataStripes, Extents: s.Extents,
			Integrity: Integrity{Enabled: s.Integrity, Mode: s.IntegrityMode, BlockSize: s.IntegrityBlockSize}}
		ids := map[*blockdev.Device]string{}
		for _, p := range append(append([]string{}, s.Members...), opts.New) {
			if d := m.inv.Find(p); d != nil {
				ids[d] = d.Path
				arr.Devices = append(arr.Devices, d.Path)
			}
		}
		deviceOf = func(pv string) string { return ids[m.inv.Find(pv)] }
	}
	rep.Verification = VerifyArray(arr, m.lvs, s.ExtentSize, deviceOf)
	rep.Verified = AllOK(rep.Verification)
	if !rep.Verified {
		var failed []Check
		for _, c := range rep.Verification {
			if !c.OK {
				failed = append(failed, c)
			}
		}
		return &VerifyFailedError{Failed: failed}
	}
	if updated != nil {
		out := opts.PlanOut
		if out == "" {
			out = UpdatedPlanPath(opts.PlanPath)
		}
		if err := saveUpdatedPlan(updated, out); err != nil {
			return err
		}
		rep.UpdatedPlan = out
	}
	return nil
}

// UpdatedPlanPath is where the updated plan goes without --plan-out:
// plan.yaml -> plan.updated.yaml, next to it.
func UpdatedPlanPath(planPath string) string {
	ext := filepath.Ext(planPath)
	return strings.TrimSuffix(planPath, ext) + ".updated" + orDefault(ext, ".yaml")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// saveUpdatedPlan writes p to path; an existing file is replaced only when
// it is the same plan (a rerun after success), never another one.
func saveUpdatedPlan(p *Plan, path string) error {
	err := p.Save(path, false)
	var exists *PlanExistsError
	if !errors.As(err, &exists) {
		return err
	}
	old, lerr := LoadPlan(path)
	if lerr == nil && samePlanDevices(old, p) {
		return nil
	}
	return fmt.Errorf("updated plan: %w", err)
}

func samePlanDevices(a, b *Plan) bool {
	x, _ := json.Marshal([]any{a.Devices, a.Arrays})
	y, _ := json.Marshal([]any{b.Devices, b.Arrays})
	return string(x) == string(y)
}

// UpdatedPlan is p with the replaced member's device swapped for the new
// disk (as the inventory sees it now), the new inventory fingerprint, and
// the derived commands; it passes the plan file's validation or is an error.
func UpdatedPlan(p *Plan, inv *blockdev.Inventory, s *Situation, newPath string, now time.Time) (*Plan, error) {
	var q Plan
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &q); err != nil {
		return nil, err
	}
	ai := -1
	for i, a := range q.Arrays {
		if a.VG == s.VG && a.LV == s.LV {
			ai = i
		}
	}
	if ai < 0 {
		return nil, fmt.Errorf("updated plan: the plan has no array %s", s.Array())
	}
	nd := inv.Find(newPath)
	if nd == nil {
		return nil, fmt.Errorf("updated plan: %s is not on this host", newPath)
	}
	members := map[string]bool{}
	for _, m := range s.Members {
		if id := planID(&q, inv, m); id != "" {
			members[id] = true
		}
	}
	var oldIDs []string
	for _, id := range q.Arrays[ai].Devices {
		if !members[id] {
			oldIDs = append(oldIDs, id)
		}
	}
	if len(oldIDs) != 1 {
		return nil, fmt.Errorf("updated plan: %d devices of the plan's %s are not among its members now (%v): the plan does not describe this array; re-plan", len(oldIDs), s.Array(), oldIDs)
	}
	pd := planDevice(inv, nd, false)
	pd.Found = nil
	for i := range q.Devices {
		if q.Devices[i].ID == oldIDs[0] {
			q.Devices[i] = pd
		}
	}
	for i, id := range q.Arrays[ai].Devices {
		if id == oldIDs[0] {
			q.Arrays[ai].Devices[i] = pd.ID
		}
	}
	var raw int64
	for _, id := range q.Arrays[ai].Devices {
		for _, d := range q.Devices {
			if d.ID == id {
				raw += d.Size
			}
		}
	}
	q.Arrays[ai].Raw = raw
	if q.Summary != nil {
		sum := summarize(q.Arrays)
		sum.Set, sum.Filesystems, sum.Fits = q.Summary.Set, q.Summary.Filesystems, q.Summary.Fits
		q.Summary = sum
	}
	q.InventoryFingerprint = inv.Fingerprint
	q.Created = now.UTC().Format(time.RFC3339)
	q.Notes = append(q.Notes, fmt.Sprintf("%s: %s replaced by %s (tbhost lvm replace, %s)", s.Array(), oldIDs[0], pd.ID, q.Created))
	q.Commands = BuildCommands(&q)
	if problems := q.validate(); len(problems) > 0 {
		return nil, &RefusedError{What: "updated plan: the new disk does not fit the plan's sizing (the array itself was replaced and verified); re-plan", Problems: problems}
	}
	return &q, nil
}

func lockReplace(dir, vg, lv string) (func(), error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("state directory %s: %w (choose another with --state-dir)", dir, err)
	}
	p := ReplaceStatePath(dir, vg, lv) + ".lock"
	l, err := filelock.Exclusive(p, 0o640)
	switch {
	case errors.Is(err, filelock.ErrHeld):
		return nil, &RefusedError{What: "lvm replace refused", Problems: []string{fmt.Sprintf("another lvm replace of %s/%s is running (lock %s is held)", vg, lv, p)}}
	case err != nil:
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	// a replace killed between a checkpoint's create and its rename left
	// its temporary; the lock's holder is this state's only writer (the
	// .replace-*.json of earlier versions may be another array's: kept)
	atomicfile.RemoveTemps(ReplaceStatePath(dir, vg, lv), atomicfile.Options{})
	return l.Unlock, nil
}

func loadReplaceState(path string) (*ReplaceState, error) {
	b, err := sysread.StateFile(path, sysread.StateLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read replace state: %w", err)
	}
	var st ReplaceState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("replace state file %s is damaged (%v): check lvm status, then move it away to start afresh", path, err)
	}
	if st.Version != ReplaceStateVersion || len(st.Steps) != len(st.Plan.Steps) {
		return nil, fmt.Errorf("replace state file %s: version %d with %d step states for %d steps: not one this tbhost wrote; move it away to start afresh", path, st.Version, len(st.Steps), len(st.Plan.Steps))
	}
	for i := range st.Steps {
		if st.Steps[i].Kind != st.Plan.Steps[i].Kind {
			return nil, fmt.Errorf("replace state file %s: step %d is %q, its plan says %q: move it away to start afresh", path, i, st.Steps[i].Kind, st.Plan.Steps[i].Kind)
		}
	}
	return &st, nil
}

// saveReplaceState writes the state file atomically and durably
// (temporary file .<name>.tmp<digits> in the same directory, fsync,
// rename, directory fsync).
func saveReplaceState(path string, st *ReplaceState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode replace state: %w", err)
	}
	if err := atomicfile.WriteFile(path, append(b, '\n'), atomicfile.Options{}); err != nil {
		return fmt.Errorf("write replace state %s: %w", path, err)
	}
	return nil
}
