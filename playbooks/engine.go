package playbooks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tbhost/tbhost/internal/clock"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/lvm"
)

// Prompter asks the user for a typed confirmation.
type Prompter interface {
	Terminal() bool
	Ask(prompt string) (string, error)
}

// Engine runs playbooks. Every dependency is passed in: tests use a fake
// StepRunner, a fake Prompter and an instant Sleep.
type Engine struct {
	Runner   StepRunner
	Self     []string   // argv that runs this tbhost binary, with global flags: [exe --root DIR]
	Commands CommandSet // what this build has (optional commands); nil: everything
	Prompt   Prompter
	Out      io.Writer // step headers and live step output (nothing when Quiet)
	Now      func() time.Time
	Sleep    func(ctx context.Context, d time.Duration) error
	// CheckTimeout bounds when/skip_if/require checks; 0 means 2 minutes.
	CheckTimeout time.Duration
	// HoldPoll is how often a hold file is looked at; 0 means 10 seconds.
	HoldPoll time.Duration
}

// Options are one run's choices.
type Options struct {
	Values        Values
	Store         *Store // state file, log and lock; nil runs without them (tests)
	Resume        bool   // continue after the last completed step of the previous run
	From          string // start at this step
	AcceptChanges bool   // resume although the playbook or parameters changed
	Yes           bool   // confirmation gates pass (unattended runs)
	Quiet         bool   // no headers and no live output (health checks)
	// Force ends when the user insists (a second Ctrl-C): it kills even a
	// step marked on_interrupt: finish. nil: such steps are killed by ctx too.
	Force context.Context
}

// RefusedError: the run did not start or stopped because tbhost refused
// (changed playbook without acknowledgement, nothing to resume, ...).
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// UsageError: the run options do not fit the playbook (unknown --from step).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// StepResult is the outcome of one step.
type StepResult struct {
	Name     string        `json:"name"`
	Status   string        `json:"status"` // done, skipped, failed, refused, interrupted, not-run
	Reason   string        `json:"reason,omitempty"`
	Argv     []string      `json:"argv,omitempty"`
	ExitCode *int          `json:"exit_code,omitempty"`
	Nagios   string        `json:"nagios,omitempty"`
	Attempts int           `json:"attempts,omitempty"`
	Duration time.Duration `json:"-"`
	Seconds  float64       `json:"seconds"`
	Output   string        `json:"output_tail,omitempty"`
	Previous bool          `json:"from_previous_run,omitempty"`
}

// Report is the outcome of a run.
type Report struct {
	Playbook string       `json:"playbook"`
	File     string       `json:"file"`
	RunID    string       `json:"run_id"`
	Status   string       `json:"status"` // done, failed, refused, interrupted
	Nagios   string       `json:"nagios,omitempty"`
	ExitCode int          `json:"exit_code"`
	Started  time.Time    `json:"started"`
	Ended    time.Time    `json:"ended"`
	Steps    []StepResult `json:"steps"`
	Log      string       `json:"log,omitempty"`
	State    string       `json:"state,omitempty"`
	// StateError is why the state file does not hold this run's end (its
	// directory's file system full, say); "" when it does.
	StateError string `json:"state_error,omitempty"`
	// ResumeArgs are the flags a --resume must repeat (--state-dir, the --set
	// values: the state is found by them and checked against them); the
	// caller sets them, WriteSummary puts them into its resume hint.
	ResumeArgs []string `json:"-"`
	nagios     bool
}

// Exit codes of a run that is not a Nagios check.
const (
	ExitInterrupted = 130 // like a shell after Ctrl-C
	outputTailBytes = 4096
)

func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

func (e *Engine) sleep(ctx context.Context, d time.Duration) error {
	if e.Sleep != nil {
		return e.Sleep(ctx, d)
	}
	return clock.Sleep(ctx, d)
}

func (e *Engine) out() io.Writer {
	if e.Out == nil {
		return io.Discard
	}
	return e.Out
}

// Run runs the playbook. The error is set only when the run could not start
// (see RefusedError, UsageError); step failures are in the report.
func (e *Engine) Run(ctx context.Context, pb *Playbook, opts Options) (*Report, error) {
	pbHash, paramsHash := Hashes(pb, opts.Values)
	start := 0
	if opts.From != "" {
		i, ok := pb.Step(opts.From)
		if !ok {
			return nil, &UsageError{fmt.Errorf("--from %s: playbook %s has no such step; its steps: %s", opts.From, pb.Name, strings.Join(pb.StepNames(), ", "))}
		}
		start = i
	}
	var prev *State
	var log *Log
	var lockFile *os.File
	if opts.Store != nil {
		lock, err := opts.Store.Lock()
		if err != nil {
			return nil, err
		}
		defer lock.Unlock()
		lockFile = lock.File()
		if prev, err = opts.Store.Load(); err != nil {
			return nil, err
		}
		if log, err = opts.Store.OpenLog(); err != nil {
			return nil, err
		}
		defer log.Close()
	}
	if opts.Resume && prev == nil {
		return nil, &RefusedError{fmt.Errorf("nothing to resume: playbook %s has no previous run in %s; run it without --resume", pb.Name, storeDir(opts.Store))}
	}
	if (opts.Resume || opts.From != "") && prev != nil && !opts.AcceptChanges {
		if err := changed(prev, pb, opts.Values, pbHash, paramsHash); err != nil {
			return nil, &RefusedError{err}
		}
	}
	now := e.now()
	rep := &Report{Playbook: pb.Name, File: pb.File, RunID: now.UTC().Format("20060102T150405.000Z"), Started: now, nagios: pb.Nagios}
	if opts.Store != nil {
		rep.Log, rep.State = opts.Store.LogPath(), opts.Store.StatePath()
	}
	st := &State{
		Playbook: pb.Name, File: pb.File, PlaybookHash: pbHash, ParamsHash: paramsHash,
		Params: opts.Values.Canonical(pb), RunID: rep.RunID, Status: "running", Started: now,
	}
	rep.Steps = make([]StepResult, len(pb.Steps))
	for i, s := range pb.Steps {
		rep.Steps[i] = StepResult{Name: s.Name, Status: StepNotRun}
	}
	if opts.Resume && opts.From == "" {
		// Keep every step the previous run completed; run the others (for a
		// keep_going playbook: only the checks that failed, and what follows).
		start = len(pb.Steps)
		for i, s := range pb.Steps {
			if ps, ok := prevStep(prev, s.Name); ok && ps.Completed() {
				rep.Steps[i] = StepResult{Name: s.Name, Status: ps.Status, Reason: "in run " + prev.RunID, ExitCode: ps.ExitCode, Nagios: ps.Nagios, Previous: true}
			} else if start == len(pb.Steps) {
				start = i
			}
		}
	}
	for i := 0; i < start && i < len(pb.Steps); i++ {
		if opts.From != "" {
			rep.Steps[i].Reason = "before --from " + opts.From
		}
	}
	r := &run{out: &lockedWriter{w: e.out()}, e: e, pb: pb, opts: opts, rep: rep, st: st, log: log, lock: lockFile}
	if prev != nil && prev.Status != "done" && !opts.Resume && opts.From == "" && !opts.Quiet {
		ended := fmt.Sprintf("ended %s at step %s", prev.Status, prev.Current)
		if prev.Status == "running" {
			// killed (kill -9, power loss), or its state could not be
			// written to the end: Current is the step it was last saved in
			at := "before its first step"
			if prev.Current != "" {
				at = "at step " + prev.Current
			}
			ended = "did not record its end (killed, or its state could not be written); it was last recorded " + at
		}
		fmt.Fprintf(e.out(), "note: the previous run (%s) %s; this run starts from the first step (--resume would continue there)\n", prev.RunID, ended)
	}
	r.save()
	r.event(Event{Event: "run-start", Playbook: pb.Name, Hash: pbHash, Params: st.Params,
		Reason: startReason(opts, start, pb)})
	failed := false
	for i := start; i < len(pb.Steps); i++ {
		if ctx.Err() != nil {
			break
		}
		if failed && !pb.KeepGoing && !pb.Nagios {
			break
		}
		if rep.Steps[i].Previous {
			continue
		}
		res := r.step(ctx, i)
		rep.Steps[i] = res
		r.save()
		if res.Status == StepFailed || res.Status == StepRefused {
			failed = true
		}
		if res.Status == StepInterrupted {
			break
		}
	}
	r.finish(ctx)
	return rep, nil
}

func storeDir(s *Store) string {
	if s == nil {
		return "(no state directory)"
	}
	return s.Dir
}

func startReason(opts Options, start int, pb *Playbook) string {
	switch {
	case opts.From != "":
		return "--from " + opts.From
	case opts.Resume && start < len(pb.Steps):
		return "--resume at " + pb.Steps[start].Name
	case opts.Resume:
		return "--resume: every step already completed"
	}
	return ""
}

func prevStep(prev *State, name string) (StepState, bool) {
	if prev == nil {
		return StepState{}, false
	}
	for _, s := range prev.Steps {
		if s.Name == name {
			return s, true
		}
	}
	return StepState{}, false
}

// changed explains how the playbook or its parameters differ from the
// previous run, or returns nil.
func changed(prev *State, pb *Playbook, vals Values, pbHash, paramsHash string) error {
	var why []string
	if prev.PlaybookHash != pbHash {
		why = append(why, fmt.Sprintf("the playbook changed since run %s (was %s, sha256 %.12s; now %s, sha256 %.12s)", prev.RunID, prev.File, prev.PlaybookHash, pb.File, pbHash))
	}
	if prev.ParamsHash != paramsHash {
		var diffs []string
		now := vals.Canonical(pb)
		for _, p := range now {
			if !slices.Contains(prev.Params, p) {
				diffs = append(diffs, p)
			}
		}
		why = append(why, fmt.Sprintf("parameters changed since run %s: now %s (was %s)", prev.RunID, strings.Join(diffs, " "), strings.Join(prev.Params, " ")))
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%s; review with --dry-run, then re-run with --accept-changes to continue anyway, or without --resume/--from to start over", strings.Join(why, "; "))
}

// lockedWriter serialises writes from the step's output and the engine's notices.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

type run struct {
	out  io.Writer
	e    *Engine
	pb   *Playbook
	opts Options
	rep  *Report
	st   *State
	log  *Log
	lock *os.File // inherited by steps (see Lock.File)

	stateSaved bool  // a save of this run's state succeeded
	stateErr   error // the last save's error: reported when saves begin failing; nil after one succeeds
	logErr     bool  // a log write failed: reported once, and no more events are written
}

func (r *run) event(ev Event) {
	if r.logErr {
		return // said once; a log with gaps would read as a whole one
	}
	ev.Time = r.e.now()
	ev.Run = r.rep.RunID
	if err := r.log.Write(ev); err != nil {
		r.logErr = true
		r.warnStore(err, "the run goes on without its log")
	}
}

func (r *run) save() {
	if r.opts.Store == nil {
		return
	}
	r.st.Updated = r.e.now()
	r.st.Steps = r.st.Steps[:0]
	for _, s := range r.rep.Steps {
		ss := StepState{Name: s.Name, Status: s.Status, Reason: s.Reason, ExitCode: s.ExitCode, Nagios: s.Nagios, Attempts: s.Attempts}
		r.st.Steps = append(r.st.Steps, ss)
	}
	err := r.opts.Store.Save(r.st)
	switch {
	case err == nil:
		if r.stateErr != nil {
			fmt.Fprintf(r.out, "tbhost playbook: state %s written again\n", r.opts.Store.StatePath())
		}
		r.stateSaved = true
	case r.stateErr != nil: // reported when it began failing
	case r.stateSaved:
		// The file holds this run as it was at the last save: a --resume
		// runs again the steps after it (steps converge), never skips one.
		r.warnStore(err, "the state file keeps this run as of its last save, so a --resume runs the steps after that again")
	default:
		r.warnStore(err, r.dropPreviousState())
	}
	r.stateErr = err
}

// dropPreviousState removes the state file when this run's first save
// failed: the file (if any) is the previous run's, and a --resume would
// take its completed steps as this run's and skip a step this run failed.
// It says what became of the file.
func (r *run) dropPreviousState() string {
	path := r.opts.Store.StatePath()
	switch err := os.Remove(path); {
	case err == nil:
		return "removed the previous run's state " + path + " so that no --resume continues from it"
	case errors.Is(err, fs.ErrNotExist):
		return "this run keeps no state: a --resume will find nothing to resume"
	default:
		return fmt.Sprintf("the state file %s still describes the previous run and could not be removed (%v): do not --resume this run", path, err)
	}
}

// warnStore says once that the state directory failed a write, with the
// fix when it is full, and what that means for the run.
func (r *run) warnStore(err error, meaning string) {
	fmt.Fprintf(r.out, "tbhost playbook: %v%s; %s\n", err, fullHint(err), meaning)
}

// fullHint names the fix when err is a full file system.
func fullHint(err error) string {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return " (the state directory's file system is full: free space on it, or choose another with --state-dir)"
	}
	return ""
}

func (r *run) finish(ctx context.Context) {
	rep := r.rep
	rep.Ended = r.e.now()
	rep.Status = "done"
	worst := StatusOK
	for i, s := range rep.Steps {
		switch s.Status {
		case StepFailed:
			rep.Status = "failed"
		case StepRefused:
			if rep.Status == "done" {
				rep.Status = "refused"
			}
		case StepInterrupted:
			rep.Status = "interrupted"
			r.st.Current = s.Name
		case StepNotRun:
			if ctx.Err() != nil && !s.Previous && rep.Status != "interrupted" && rep.Steps[i].Reason == "" {
				rep.Status = "interrupted"
				r.st.Current = s.Name
			}
		}
		if s.Nagios != "" {
			worst = worseNagios(worst, s.Nagios)
		}
	}
	if ctx.Err() != nil && rep.Status != "interrupted" {
		rep.Status = "interrupted"
	}
	if rep.Status == "interrupted" {
		worst = worseNagios(worst, StatusUnknown)
	}
	switch {
	case r.pb.Nagios:
		rep.Nagios = worst
		rep.ExitCode = nagiosCode(worst)
	case rep.Status == "done":
		rep.ExitCode = 0
	case rep.Status == "interrupted":
		rep.ExitCode = ExitInterrupted
	default:
		rep.ExitCode = 1
	}
	r.st.Status = rep.Status
	if rep.Status != "interrupted" {
		r.st.Current = rep.stoppedAt() // the first step that failed or was refused; "" when done
	}
	code := rep.ExitCode
	r.event(Event{Event: "run-end", Status: rep.Status, Nagios: rep.Nagios, ExitCode: &code, Start: rep.Started, End: rep.Ended, Step: r.st.Current})
	r.save()
	if r.stateErr != nil {
		rep.StateError = r.stateErr.Error()
	}
}

// severity reads a status name as lvm.Severity; anything else is UNKNOWN.
func severity(s string) lvm.Severity {
	sev, ok := lvm.ParseSeverity(s)
	if !ok || sev.String() != s {
		return lvm.Unknown
	}
	return sev
}

// worseNagios is the worse of two statuses like monitoring-plugins'
// max_state_alt: OK < UNKNOWN < WARNING < CRITICAL.
func worseNagios(a, b string) string {
	if severity(b).Rank() > severity(a).Rank() {
		return b
	}
	return a
}

func nagiosCode(s string) int { return severity(s).ExitCode() }

// nagiosOf maps a step's exit code to a Nagios status.
func nagiosOf(s Step, code int) string {
	if st, ok := s.ExitStatus[code]; ok {
		return st
	}
	return lvm.SeverityOfExitCode(code).String()
}

func (r *run) header(i int, format string, a ...any) {
	if r.opts.Quiet {
		return
	}
	fmt.Fprintf(r.out, "==> [%d/%d] %s: %s\n", i+1, len(r.pb.Steps), r.pb.Steps[i].Name, fmt.Sprintf(format, a...))
}

func (r *run) tbhostArgv(args []string) []string {
	return append(append([]string(nil), r.e.Self...), args...)
}

// resolve renders a command to the argv it runs (or, for exists:, the path).
func (r *run) resolve(c Command) (argv []string, path string, err error) {
	switch {
	case c.Exists != nil:
		path, err = render(c.Exists.Value, r.opts.Values)
		return nil, path, err
	case c.Tbhost != nil:
		args, err := renderArgv(c.Tbhost, r.opts.Values)
		if err != nil {
			return nil, "", err
		}
		return r.tbhostArgv(args), "", nil
	case c.Shell != nil:
		argv, err = renderArgv(c.Shell, r.opts.Values)
		return argv, "", err
	}
	return nil, "", errors.New("nothing to run")
}

// available reports whether an optional tbhost command exists in this build.
func (r *run) available(c Command) (bool, string) {
	if c.Tbhost == nil || !c.Optional || r.e.Commands == nil {
		return true, ""
	}
	args, err := renderArgv(c.Tbhost, r.opts.Values)
	if err != nil {
		return true, ""
	}
	var unknown *UnknownCommandError
	if err := r.e.Commands.Check(args); errors.As(err, &unknown) {
		return false, unknown.Error()
	}
	return true, ""
}

func (r *run) inherit() []*os.File {
	if r.lock == nil {
		return nil
	}
	return []*os.File{r.lock}
}

func (r *run) env(step string) []string {
	env := []string{"TBHOST_PLAYBOOK=" + r.pb.Name, "TBHOST_STEP=" + step, "TBHOST_RUN=" + r.rep.RunID}
	if len(r.e.Self) > 0 {
		env = append(env, "TBHOST="+r.e.Self[0])
	}
	return env
}

// check runs a when/skip_if/require check; ok is true when it succeeded.
func (r *run) check(ctx context.Context, step, kind string, c Command) (ok bool, desc string, err error) {
	argv, path, err := r.resolve(c)
	if err != nil {
		return false, "", err
	}
	if c.Exists != nil {
		_, statErr := os.Stat(path)
		ok = statErr == nil
		r.event(Event{Event: "check", Step: step, Kind: kind, Argv: []string{"exists", path}, Status: fmt.Sprint(ok)})
		return ok, "exists " + path, nil
	}
	t := r.e.CheckTimeout
	if t == 0 {
		t = 2 * time.Minute
	}
	cctx, cancel := context.WithTimeout(ctx, t)
	defer cancel()
	var tail tailBuffer
	start := r.e.now()
	code, runErr := r.e.Runner.Run(cctx, Cmd{Argv: argv, Env: r.env(step), Out: &tail, Inherit: r.inherit()})
	ev := Event{Event: "check", Step: step, Kind: kind, Argv: argv, Start: start, End: r.e.now(), ExitCode: &code, Output: tail.String()}
	if runErr != nil {
		ev.Reason = runErr.Error()
	}
	r.event(ev)
	if ctx.Err() != nil {
		return false, "", ctx.Err()
	}
	return runErr == nil && code == 0, r.display(argv), nil
}

// display renders argv for humans, showing this binary as "tbhost".
func (r *run) display(argv []string) string { return DisplayArgv(r.e.Self, argv) }

// DisplayArgv quotes argv for humans, writing the tbhost binary (self[0]) as "tbhost".
func DisplayArgv(self, argv []string) string {
	if len(self) > 0 && len(argv) > 0 && argv[0] == self[0] {
		argv = append([]string{"tbhost"}, argv[1:]...)
	}
	return execx.Quote(argv)
}

func (r *run) step(ctx context.Context, i int) StepResult {
	s := r.pb.Steps[i]
	res := StepResult{Name: s.Name}
	started := r.e.now()
	r.st.Current = s.Name
	r.save()
	finish := func(status, reason string) StepResult {
		res.Status, res.Reason, res.Duration = status, reason, r.e.now().Sub(started)
		res.Seconds = res.Duration.Seconds()
		if r.pb.Nagios && res.Nagios == "" {
			switch status {
			case StepDone, StepSkipped, StepNotRun:
				res.Nagios = StatusOK
			default:
				res.Nagios = StatusUnknown
			}
		}
		ev := Event{Event: "step", Step: s.Name, Argv: res.Argv, Start: started, End: r.e.now(),
			ExitCode: res.ExitCode, Status: status, Nagios: res.Nagios, Attempt: res.Attempts, Reason: reason, Output: res.Output}
		r.event(ev)
		switch status {
		case StepSkipped:
			r.header(i, "skipped: %s", reason)
		case StepFailed, StepRefused:
			r.header(i, "%s: %s", strings.ToUpper(status), reason)
		}
		return res
	}
	interrupted := func() StepResult { return finish(StepInterrupted, "interrupted (Ctrl-C or SIGTERM)") }
	if s.When != nil {
		ok, err := renderBool(*s.When, r.opts.Values)
		if err != nil {
			return finish(StepFailed, err.Error())
		}
		if !ok {
			return finish(StepSkipped, fmt.Sprintf("when %s is false", s.When.Value))
		}
	}
	if ok, why := r.available(s.Action); !ok {
		return finish(StepSkipped, "optional: "+why)
	}
	if s.SkipIf != nil {
		ok, desc, err := r.check(ctx, s.Name, "skip_if", *s.SkipIf)
		if ctx.Err() != nil {
			return interrupted()
		}
		if err != nil {
			return finish(StepFailed, "skip_if: "+err.Error())
		}
		if ok {
			return finish(StepSkipped, "already done ("+desc+" succeeded)")
		}
	}
	for _, req := range s.Require {
		ok, desc, err := r.check(ctx, s.Name, "require", req.Check)
		if ctx.Err() != nil {
			return interrupted()
		}
		if err != nil {
			return finish(StepFailed, "require: "+err.Error())
		}
		if !ok {
			msg, _ := render(req.Message, r.opts.Values)
			return finish(StepRefused, fmt.Sprintf("precondition failed (%s): %s", desc, msg))
		}
	}
	if s.HoldFile != nil {
		path, err := render(s.HoldFile.Value, r.opts.Values)
		if err != nil {
			return finish(StepFailed, "hold_file: "+err.Error())
		}
		if err := r.hold(ctx, i, path); err != nil {
			return interrupted()
		}
	}
	if s.Confirm != nil {
		if reason := r.confirm(i, s); reason != "" {
			return finish(StepRefused, reason)
		}
	}
	if s.Report == ReportGoNoGo {
		out, ok := r.goNoGo(i)
		res.Output = out
		if !r.opts.Quiet {
			fmt.Fprint(r.out, out)
		}
		if !ok {
			return finish(StepFailed, "NO-GO")
		}
		return finish(StepDone, "GO")
	}
	return r.action(ctx, i, s, &res, started, finish, interrupted)
}

func (r *run) hold(ctx context.Context, i int, path string) error {
	if path == "" {
		return nil
	}
	poll := r.e.HoldPoll
	if poll == 0 {
		poll = 10 * time.Second
	}
	told := false
	for {
		if _, err := os.Stat(path); err != nil {
			if told {
				r.event(Event{Event: "hold", Step: r.pb.Steps[i].Name, Argv: []string{path}, Status: "released"})
			}
			return nil
		}
		if !told {
			// A hold is news even in a quiet run.
			fmt.Fprintf(r.out, "==> [%d/%d] %s: holding while %s exists; remove it to continue (Ctrl-C stops the run)\n", i+1, len(r.pb.Steps), r.pb.Steps[i].Name, path)
			r.event(Event{Event: "hold", Step: r.pb.Steps[i].Name, Argv: []string{path}, Status: "holding"})
			told = true
		}
		if err := r.e.sleep(ctx, poll); err != nil {
			return err
		}
	}
}

// confirm returns "" when the gate passes, else why it refused.
func (r *run) confirm(i int, s Step) string {
	prompt, err := render(s.Confirm.Prompt, r.opts.Values)
	if err != nil {
		return "confirm: " + err.Error()
	}
	ev := Event{Event: "confirm", Step: s.Name, Reason: prompt}
	defer func() { r.event(ev) }()
	if r.opts.Yes {
		ev.Status = "confirmed by --yes"
		r.header(i, "confirmed by --yes: %s", prompt)
		return ""
	}
	if r.e.Prompt == nil || !r.e.Prompt.Terminal() {
		ev.Status = "refused: no terminal"
		return fmt.Sprintf("needs confirmation (%s) and there is no terminal to ask on; review with --dry-run, then re-run with --yes", prompt)
	}
	answer, err := r.e.Prompt.Ask(fmt.Sprintf("%s\nType %q to continue: ", prompt, s.Confirm.Word))
	if err != nil || strings.TrimSpace(answer) != s.Confirm.Word {
		ev.Status = "refused: not confirmed"
		return fmt.Sprintf("not confirmed: %q was not typed", s.Confirm.Word)
	}
	ev.Status = "confirmed on the terminal"
	return ""
}

func (r *run) goNoGo(i int) (string, bool) {
	var b strings.Builder
	var bad []string
	for _, s := range r.rep.Steps[:i] {
		switch s.Status {
		case StepDone, StepSkipped:
		default:
			bad = append(bad, fmt.Sprintf("%s (%s%s)", s.Name, s.Status, prefixed(": ", s.Reason)))
		}
	}
	if len(bad) == 0 {
		fmt.Fprintf(&b, "GO: all %d checks before this step passed or were already done\n", i)
		return b.String(), true
	}
	fmt.Fprintf(&b, "NO-GO: %d of %d checks did not pass:\n", len(bad), i)
	for _, x := range bad {
		fmt.Fprintf(&b, "  - %s\n", x)
	}
	return b.String(), false
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

func (r *run) action(ctx context.Context, i int, s Step, res *StepResult, started time.Time,
	finish func(string, string) StepResult, interrupted func() StepResult) StepResult {
	argv, _, err := r.resolve(s.Action)
	if err != nil {
		return finish(StepFailed, err.Error())
	}
	res.Argv = argv
	okCodes := s.OKCodes
	if len(okCodes) == 0 {
		okCodes = []int{0}
	}
	reason := ""
	for attempt := 1; attempt <= s.Retries+1; attempt++ {
		res.Attempts = attempt
		if attempt > 1 {
			r.header(i, "retry %d of %d in %s (%s)", attempt-1, s.Retries, s.RetryDelay, reason)
			if err := r.e.sleep(ctx, s.RetryDelay); err != nil {
				return interrupted()
			}
		}
		r.header(i, "%s", r.display(argv))
		attemptStart := r.e.now()
		var tail tailBuffer
		var w io.Writer = &tail
		if !r.opts.Quiet {
			w = io.MultiWriter(r.out, &tail)
		}
		if ctx.Err() != nil {
			return interrupted()
		}
		// runCtx is what kills the step: the run's context, or for a step
		// that must finish, only the second interrupt (Force).
		runCtx := ctx
		stopNotice := func() {}
		if s.OnInterrupt == OnInterruptFinish && r.opts.Force != nil {
			runCtx = r.opts.Force
			stopNotice = r.finishNotice(ctx, i)
		}
		actx, cancel := runCtx, context.CancelFunc(func() {})
		if s.Timeout > 0 {
			actx, cancel = context.WithTimeout(runCtx, s.Timeout)
		}
		stopLoad := r.startLoad(actx, s, w)
		code, runErr := r.e.Runner.Run(actx, Cmd{Argv: argv, Env: r.env(s.Name), Out: w, Inherit: r.inherit()})
		stopLoad()
		stopNotice()
		timedOut := actx.Err() == context.DeadlineExceeded && runCtx.Err() == nil
		cancel()
		res.Output = tail.String()
		if runCtx.Err() != nil {
			return interrupted()
		}
		c := code
		res.ExitCode = &c
		switch {
		case timedOut:
			reason = fmt.Sprintf("timed out after %s (killed)", s.Timeout)
			res.ExitCode = nil
		case runErr != nil:
			reason = runErr.Error()
			res.ExitCode = nil
		case r.pb.Nagios:
			res.Nagios = nagiosOf(s, code)
			if res.Nagios == StatusOK {
				return finish(StepDone, "")
			}
			reason = fmt.Sprintf("%s (exit %d)", res.Nagios, code)
		case slices.Contains(okCodes, code):
			if code != 0 {
				return finish(StepDone, fmt.Sprintf("exit %d accepted (ok_codes)", code))
			}
			return finish(StepDone, "")
		default:
			reason = fmt.Sprintf("exit %d", code)
		}
		if res.ExitCode == nil && r.pb.Nagios {
			res.Nagios = StatusUnknown
		}
		ev := Event{Event: "attempt", Step: s.Name, Argv: argv, Start: attemptStart, End: r.e.now(), ExitCode: res.ExitCode, Status: StepFailed, Attempt: attempt, Reason: reason, Output: res.Output}
		r.event(ev)
	}
	if s.Retries > 0 {
		reason = fmt.Sprintf("%s, after %d attempts", reason, s.Retries+1)
	}
	if s.OnFailure != nil && ctx.Err() == nil {
		reason += "; " + r.onFailure(ctx, i, s)
	}
	return finish(StepFailed, reason)
}

// onFailure runs a failed step's on_failure command (a rollback hook) and
// says how it went, for the step's reason.
func (r *run) onFailure(ctx context.Context, i int, s Step) string {
	argv, _, err := r.resolve(*s.OnFailure)
	if err != nil {
		return "on_failure not run: " + err.Error()
	}
	r.header(i, "failed: running on_failure: %s", r.display(argv))
	var tail tailBuffer
	var w io.Writer = &tail
	if !r.opts.Quiet {
		w = io.MultiWriter(r.out, &tail)
	}
	start := r.e.now()
	code, runErr := r.e.Runner.Run(ctx, Cmd{Argv: argv, Env: r.env(s.Name), Out: w, Inherit: r.inherit()})
	ev := Event{Event: "check", Step: s.Name, Kind: "on_failure", Argv: argv, Start: start, End: r.e.now(), ExitCode: &code, Output: tail.String()}
	switch {
	case runErr != nil:
		ev.Reason = runErr.Error()
		r.event(ev)
		return "on_failure could not run: " + runErr.Error()
	case code != 0:
		ev.Status = StepFailed
		r.event(ev)
		return fmt.Sprintf("on_failure %s exited %d", r.display(argv), code)
	}
	ev.Status = StepDone
	r.event(ev)
	return fmt.Sprintf("on_failure %s ran", r.display(argv))
}

// finishNotice tells the user, when the first interrupt arrives while a
// step marked on_interrupt: finish runs, that it will complete first.
func (r *run) finishNotice(ctx context.Context, i int) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-ctx.Done():
			fmt.Fprintf(r.out, "==> [%d/%d] %s: interrupted: this step finishes first (cutting it in half could leave a half-made result); the run stops after it. Interrupt again to kill it now.\n",
				i+1, len(r.pb.Steps), r.pb.Steps[i].Name)
			r.event(Event{Event: "interrupt", Step: r.pb.Steps[i].Name, Reason: "on_interrupt: finish: waiting for the step"})
		case <-done:
		}
	}()
	// stop returns once the notice is out or will never be: the event
	// goes to the run's log, which only one goroutine writes at a time
	// (an interrupt just as the step ended wrote it beside the step's own)
	return func() { close(done); <-exited }
}

// startLoad starts the step's background load, if any; the returned func
// stops it (killing its process group) and waits for it.
func (r *run) startLoad(ctx context.Context, s Step, w io.Writer) func() {
	if s.Load == nil {
		return func() {}
	}
	if ok, why := r.available(*s.Load); !ok {
		fmt.Fprintf(w, "(no load: %s)\n", why)
		r.event(Event{Event: "check", Step: s.Name, Kind: "load", Status: "skipped", Reason: why})
		return func() {}
	}
	argv, _, err := r.resolve(*s.Load)
	if err != nil {
		fmt.Fprintf(w, "(no load: %v)\n", err)
		return func() {}
	}
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var tail tailBuffer
	go func() {
		defer close(done)
		start := r.e.now()
		code, err := r.e.Runner.Run(lctx, Cmd{Argv: argv, Env: r.env(s.Name), Out: &tail, Inherit: r.inherit()})
		ev := Event{Event: "check", Step: s.Name, Kind: "load", Argv: argv, Start: start, End: r.e.now(), ExitCode: &code, Output: tail.String()}
		if err != nil {
			ev.Reason = err.Error()
		}
		r.event(ev)
	}()
	if !r.opts.Quiet {
		fmt.Fprintf(w, "(load in the background: %s)\n", r.display(argv))
	}
	return func() { cancel(); <-done }
}

// tailBuffer keeps the last outputTailBytes bytes written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if over := len(t.b) - outputTailBytes; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }
