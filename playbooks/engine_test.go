package playbooks

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeRunner answers step commands from a table: the exit codes of
// successive calls of one command line (the last repeats; unknown lines
// exit 0). It records every call.
type fakeRunner struct {
	mu    sync.Mutex
	codes map[string][]int
	out   map[string]string
	block map[string]bool // these block until their context ends
	calls []string
}

func newFake() *fakeRunner {
	return &fakeRunner{codes: map[string][]int{}, out: map[string]string{}, block: map[string]bool{}}
}

func (f *fakeRunner) on(line string, codes ...int) *fakeRunner { f.codes[line] = codes; return f }

func (f *fakeRunner) Run(ctx context.Context, c Cmd) (int, error) {
	line := strings.Join(c.Argv, " ")
	f.mu.Lock()
	f.calls = append(f.calls, line)
	code := 0
	if q := f.codes[line]; len(q) > 0 {
		code = q[0]
		if len(q) > 1 {
			f.codes[line] = q[1:]
		}
	}
	out, block := f.out[line], f.block[line]
	f.mu.Unlock()
	if c.Out != nil && out != "" {
		io.WriteString(c.Out, out)
	}
	if block {
		<-ctx.Done()
		return -1, ctx.Err()
	}
	return code, nil
}

func (f *fakeRunner) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

type fakePrompt struct {
	terminal bool
	answer   string
	asked    []string
}

func (p *fakePrompt) Terminal() bool { return p.terminal }
func (p *fakePrompt) Ask(q string) (string, error) {
	p.asked = append(p.asked, q)
	return p.answer, nil
}

func newEngine(r StepRunner) (*Engine, *bytes.Buffer) {
	var out bytes.Buffer
	return &Engine{
		Runner: r, Self: []string{"/bin/tbhost"}, Prompt: &fakePrompt{}, Out: &out,
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() },
	}, &out
}

func runPB(t *testing.T, e *Engine, src string, opts Options) *Report {
	t.Helper()
	pb := mustParse(t, src)
	if opts.Values == nil {
		vals, err := Resolve(pb, nil)
		if err != nil {
			t.Fatal(err)
		}
		opts.Values = vals
	}
	rep, err := e.Run(context.Background(), pb, opts)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return rep
}

func statuses(rep *Report) string {
	var s []string
	for _, st := range rep.Steps {
		s = append(s, st.Name+"="+st.Status)
	}
	return strings.Join(s, " ")
}

const threeSteps = `name: three
params:
  - name: plan
    default: /tmp/plan.yaml
steps:
  - name: one
    tbhost: [lvm, plan, -o, "{{.plan}}"]
  - name: two
    shell: [mkfs.ext4, /dev/x]
  - name: three
    tbhost: [lvm, status]
`

func TestRunsStepsInOrderWithSelfAndTemplates(t *testing.T) {
	f := newFake()
	e, _ := newEngine(f)
	rep := runPB(t, e, threeSteps, Options{})
	want := []string{"/bin/tbhost lvm plan -o /tmp/plan.yaml", "mkfs.ext4 /dev/x", "/bin/tbhost lvm status"}
	if got := f.called(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("calls %q, want %q", got, want)
	}
	if rep.Status != "done" || rep.ExitCode != 0 || statuses(rep) != "one=done two=done three=done" {
		t.Errorf("report %s %d: %s", rep.Status, rep.ExitCode, statuses(rep))
	}
}

func TestFailureStopsTheRunAndExitsOne(t *testing.T) {
	f := newFake().on("mkfs.ext4 /dev/x", 1)
	e, _ := newEngine(f)
	rep := runPB(t, e, threeSteps, Options{})
	if rep.ExitCode != 1 || statuses(rep) != "one=done two=failed three=not-run" {
		t.Fatalf("exit %d, %s", rep.ExitCode, statuses(rep))
	}
	if len(f.called()) != 2 {
		t.Errorf("step three ran after a failure: %v", f.called())
	}
	var sum bytes.Buffer
	rep.WriteSummary(&sum)
	for _, want := range []string{"FAILED", "exit 1", "not run", "--resume"} {
		if !strings.Contains(sum.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, sum.String())
		}
	}
}

func TestSkipIfSkipsWhenAlreadyDone(t *testing.T) {
	dir := t.TempDir()
	done := filepath.Join(dir, "done")
	os.WriteFile(done, nil, 0o644)
	src := fmt.Sprintf(`name: skip
steps:
  - name: by-file
    skip_if: {exists: %s}
    shell: [never-1]
  - name: by-command
    skip_if: {tbhost: [lvm, status]}
    shell: [never-2]
  - name: not-done
    skip_if: {shell: [test, -e, /nope]}
    shell: [runs]
  - name: when-false
    when: "{{eq 1 2}}"
    shell: [never-3]
`, done)
	f := newFake().on("test -e /nope", 1)
	e, _ := newEngine(f)
	rep := runPB(t, e, src, Options{})
	if statuses(rep) != "by-file=skipped by-command=skipped not-done=done when-false=skipped" {
		t.Fatalf("%s", statuses(rep))
	}
	for _, c := range f.called() {
		if strings.HasPrefix(c, "never") {
			t.Errorf("skipped step ran: %s", c)
		}
	}
	if !strings.Contains(rep.Steps[1].Reason, "already done (tbhost lvm status succeeded)") {
		t.Errorf("reason %q", rep.Steps[1].Reason)
	}
}

func TestRequireRefusesWithMessage(t *testing.T) {
	src := `name: req
steps:
  - name: apply
    require:
      - exists: /definitely/not/here
        message: "write the plan first: tbhost lvm plan -o /definitely/not/here"
    shell: [lvcreate]
  - name: after
    shell: [after]
`
	f := newFake()
	e, _ := newEngine(f)
	rep := runPB(t, e, src, Options{})
	if len(f.called()) != 0 {
		t.Fatalf("ran %v despite a failed precondition", f.called())
	}
	if rep.ExitCode != 1 || rep.Steps[0].Status != StepRefused || !strings.Contains(rep.Steps[0].Reason, "write the plan first") {
		t.Fatalf("exit %d step %+v", rep.ExitCode, rep.Steps[0])
	}
}

const gated = `name: gated
steps:
  - name: apply
    confirm: {prompt: "erase /dev/sdb?", word: erase}
    shell: [wipefs, -a, /dev/sdb]
`

func TestConfirmationRefusedWithoutTerminal(t *testing.T) {
	f := newFake()
	e, _ := newEngine(f)
	e.Prompt = &fakePrompt{terminal: false, answer: "erase"}
	rep := runPB(t, e, gated, Options{})
	if len(f.called()) != 0 {
		t.Fatalf("ran %v without confirmation", f.called())
	}
	if rep.ExitCode != 1 || rep.Steps[0].Status != StepRefused || !strings.Contains(rep.Steps[0].Reason, "--yes") {
		t.Fatalf("exit %d %+v", rep.ExitCode, rep.Steps[0])
	}
}

func TestConfirmationTypedOnTerminal(t *testing.T) {
	for _, tc := range []struct {
		answer string
		runs   bool
	}{{"erase", true}, {"yes", false}, {"", false}} {
		f := newFake()
		e, _ := newEngine(f)
		p := &fakePrompt{terminal: true, answer: tc.answer}
		e.Prompt = p
		rep := runPB(t, e, gated, Options{})
		if ran := len(f.called()) == 1; ran != tc.runs {
			t.Errorf("answer %q: ran=%v want %v (%s)", tc.answer, ran, tc.runs, statuses(rep))
		}
		if len(p.asked) != 1 || !strings.Contains(p.asked[0], `Type "erase"`) {
			t.Errorf("prompt %q must ask for the word", p.asked)
		}
	}
	f := newFake()
	e, _ := newEngine(f)
	runPB(t, e, gated, Options{Yes: true})
	if len(f.called()) != 1 {
		t.Error("--yes must pass the gate")
	}
}

func TestRetriesThenSucceeds(t *testing.T) {
	src := `name: retry
steps:
  - name: flaky
    retries: 2
    retry_delay: 1ms
    shell: [flaky]
`
	f := newFake().on("flaky", 1, 1, 0)
	e, _ := newEngine(f)
	e.Sleep = nil // real (1ms) sleeps
	rep := runPB(t, e, src, Options{})
	if rep.Steps[0].Status != StepDone || rep.Steps[0].Attempts != 3 || len(f.called()) != 3 {
		t.Fatalf("%+v calls %v", rep.Steps[0], f.called())
	}
	f = newFake().on("flaky", 1)
	e, _ = newEngine(f)
	rep = runPB(t, e, src, Options{})
	if rep.Steps[0].Status != StepFailed || len(f.called()) != 3 || !strings.Contains(rep.Steps[0].Reason, "after 3 attempts") {
		t.Fatalf("%+v calls %v", rep.Steps[0], f.called())
	}
}

func TestResumeAfterFailureContinuesAtFailedStep(t *testing.T) {
	store := &Store{Dir: t.TempDir()}
	pb := mustParse(t, threeSteps)
	vals, _ := Resolve(pb, nil)
	f := newFake().on("mkfs.ext4 /dev/x", 1, 0)
	e, _ := newEngine(f)
	rep, err := e.Run(context.Background(), pb, Options{Values: vals, Store: store})
	if err != nil || rep.Status != "failed" {
		t.Fatalf("first run: %v %v", err, rep)
	}
	st, err := store.Load()
	if err != nil || st.Status != "failed" || st.Current != "two" {
		t.Fatalf("state after failure: %+v %v", st, err)
	}
	rep, err = e.Run(context.Background(), pb, Options{Values: vals, Store: store, Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	calls := f.called()
	if strings.Join(calls[2:], "|") != "mkfs.ext4 /dev/x|/bin/tbhost lvm status" {
		t.Fatalf("resume ran %v, want steps two and three only", calls[2:])
	}
	if rep.Status != "done" || !rep.Steps[0].Previous || rep.Steps[0].Status != StepDone {
		t.Errorf("resumed report: %s %+v", rep.Status, rep.Steps[0])
	}
	st, _ = store.Load()
	if st.Status != "done" || st.Current != "" {
		t.Errorf("state after resume: %+v", st)
	}
}

func TestResumeRefusesChangedParamsOrPlaybook(t *testing.T) {
	store := &Store{Dir: t.TempDir()}
	pb := mustParse(t, threeSteps)
	vals, _ := Resolve(pb, nil)
	f := newFake().on("mkfs.ext4 /dev/x", 1)
	e, _ := newEngine(f)
	if _, err := e.Run(context.Background(), pb, Options{Values: vals, Store: store}); err != nil {
		t.Fatal(err)
	}
	other, _ := Resolve(pb, map[string][]string{"plan": {"/tmp/other.yaml"}})
	_, err := e.Run(context.Background(), pb, Options{Values: other, Store: store, Resume: true})
	var refused *RefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "plan=/tmp/other.yaml") || !strings.Contains(err.Error(), "--accept-changes") {
		t.Fatalf("changed params: %v", err)
	}
	changedPB := mustParse(t, threeSteps+"  - name: four\n    shell: [four]\n")
	_, err = e.Run(context.Background(), changedPB, Options{Values: vals, Store: store, Resume: true})
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "playbook changed") {
		t.Fatalf("changed playbook: %v", err)
	}
	n := len(f.called())
	rep, err := e.Run(context.Background(), changedPB, Options{Values: vals, Store: store, Resume: true, AcceptChanges: true})
	if err != nil || rep.Status != "failed" || len(f.called()) != n+1 {
		t.Fatalf("--accept-changes: %v %v calls %v", err, rep, f.called()[n:])
	}
	if _, err := e.Run(context.Background(), pb, Options{Values: vals, Store: &Store{Dir: t.TempDir()}, Resume: true}); !errors.As(err, &refused) {
		t.Errorf("resume with no previous run: %v", err)
	}
}

func TestFromStartsAtStep(t *testing.T) {
	f := newFake()
	e, _ := newEngine(f)
	rep := runPB(t, e, threeSteps, Options{From: "three"})
	if strings.Join(f.called(), "|") != "/bin/tbhost lvm status" || statuses(rep) != "one=not-run two=not-run three=done" || rep.ExitCode != 0 {
		t.Fatalf("calls %v, %s", f.called(), statuses(rep))
	}
	pb := mustParse(t, threeSteps)
	vals, _ := Resolve(pb, nil)
	_, err := e.Run(context.Background(), pb, Options{Values: vals, From: "nine"})
	var usage *UsageError
	if !errors.As(err, &usage) || !strings.Contains(err.Error(), "one, two, three") {
		t.Errorf("unknown --from: %v", err)
	}
}

const nagiosPB = `name: hc
nagios: true
steps:
  - name: ok
    shell: [ok]
  - name: warn
    shell: [warn]
  - name: crit-by-map
    exit_status: {1: CRITICAL}
    shell: [mismatch]
  - name: unknown
    shell: [broken]
`

func TestNagiosWorstStatusAndAllStepsRun(t *testing.T) {
	f := newFake().on("warn", 1).on("mismatch", 1).on("broken", 3)
	e, out := newEngine(f)
	rep := runPB(t, e, nagiosPB, Options{Quiet: true})
	if rep.Nagios != StatusCritical || rep.ExitCode != 2 || len(f.called()) != 4 {
		t.Fatalf("nagios %s exit %d calls %v", rep.Nagios, rep.ExitCode, f.called())
	}
	if out.Len() != 0 {
		t.Errorf("quiet run printed %q", out.String())
	}
	var b bytes.Buffer
	rep.WriteNagios(&b)
	if first, _, _ := strings.Cut(b.String(), "\n"); first != "HC CRITICAL - warn WARNING, crit-by-map CRITICAL, unknown UNKNOWN" {
		t.Errorf("status line %q", first)
	}
	for _, tc := range []struct {
		codes map[string]int
		want  int
	}{
		{map[string]int{}, 0},
		{map[string]int{"warn": 1}, 1},
		{map[string]int{"broken": 7}, 3},
		{map[string]int{"broken": 3, "warn": 1}, 1}, // UNKNOWN < WARNING (max_state_alt)
	} {
		f := newFake()
		for k, v := range tc.codes {
			f.on(k, v)
		}
		e, _ := newEngine(f)
		if rep := runPB(t, e, nagiosPB, Options{Quiet: true}); rep.ExitCode != tc.want {
			t.Errorf("%v: exit %d want %d", tc.codes, rep.ExitCode, tc.want)
		}
	}
}

func TestKeepGoingAndGoNoGoReport(t *testing.T) {
	src := `name: pc
keep_going: true
steps:
  - name: a
    shell: [a]
  - name: b
    shell: [b]
  - name: verdict
    report: go-no-go
`
	f := newFake().on("a", 1)
	e, out := newEngine(f)
	rep := runPB(t, e, src, Options{})
	if len(f.called()) != 2 || rep.Steps[2].Status != StepFailed || rep.ExitCode != 1 {
		t.Fatalf("calls %v, %s", f.called(), statuses(rep))
	}
	if !strings.Contains(out.String(), "NO-GO: 1 of 2 checks did not pass") || !strings.Contains(out.String(), "- a (failed: exit 1)") {
		t.Errorf("report:\n%s", out.String())
	}
	f = newFake()
	e, out = newEngine(f)
	if rep := runPB(t, e, src, Options{}); rep.ExitCode != 0 || !strings.Contains(out.String(), "GO: all 2 checks") {
		t.Errorf("all passed: exit %d\n%s", rep.ExitCode, out.String())
	}
}

func TestHoldFilePostponesStepUntilRemoved(t *testing.T) {
	hold := filepath.Join(t.TempDir(), "hold")
	os.WriteFile(hold, nil, 0o644)
	src := fmt.Sprintf("name: h\nsteps:\n  - name: last\n    hold_file: %s\n    shell: [cutover]\n", hold)
	f := newFake()
	e, out := newEngine(f)
	polls := 0
	e.Sleep = func(ctx context.Context, d time.Duration) error {
		polls++
		if len(f.called()) != 0 {
			t.Error("the step ran while the hold file existed")
		}
		if polls == 3 {
			os.Remove(hold)
		}
		return nil
	}
	rep := runPB(t, e, src, Options{})
	if polls != 3 || rep.ExitCode != 0 || len(f.called()) != 1 || !strings.Contains(out.String(), "holding while "+hold) {
		t.Fatalf("polls %d exit %d calls %v out %q", polls, rep.ExitCode, f.called(), out.String())
	}
}

func TestOptionalCommandMissingFromBuildIsSkipped(t *testing.T) {
	src := `name: opt
steps:
  - name: bench
    tbhost: [bench, probe]
    optional: true
  - name: watched
    load: {tbhost: [bench, probe], optional: true}
    tbhost: [monitor, check]
`
	f := newFake()
	e, _ := newEngine(f)
	e.Commands = fakeCommands{"monitor check": true}
	rep := runPB(t, e, src, Options{})
	if statuses(rep) != "bench=skipped watched=done" || strings.Join(f.called(), "|") != "/bin/tbhost monitor check" {
		t.Fatalf("%s calls %v", statuses(rep), f.called())
	}
	if !strings.Contains(rep.Steps[0].Reason, "optional") {
		t.Errorf("reason %q", rep.Steps[0].Reason)
	}
}

func TestLoadRunsDuringTheActionAndIsStopped(t *testing.T) {
	src := `name: load
steps:
  - name: watched
    load: {tbhost: [bench, probe]}
    tbhost: [monitor, check]
`
	f := newFake()
	f.block["/bin/tbhost bench probe"] = true
	e, _ := newEngine(f)
	done := make(chan *Report)
	go func() { done <- runPB(t, e, src, Options{}) }()
	select {
	case rep := <-done:
		if rep.ExitCode != 0 || len(f.called()) != 2 {
			t.Fatalf("exit %d calls %v", rep.ExitCode, f.called())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the load was not stopped when the action ended")
	}
}

// The log is append-only JSON lines with step, argv, start/end, exit code
// and output tail.
func TestLogFormat(t *testing.T) {
	store := &Store{Dir: t.TempDir()}
	pb := mustParse(t, threeSteps)
	vals, _ := Resolve(pb, nil)
	f := newFake().on("mkfs.ext4 /dev/x", 1)
	f.out["mkfs.ext4 /dev/x"] = "mke2fs: Device size reported to be zero\n"
	e, _ := newEngine(f)
	e.Run(context.Background(), pb, Options{Values: vals, Store: store})
	first, _ := os.ReadFile(store.LogPath())
	e.Run(context.Background(), pb, Options{Values: vals, Store: store})
	all, _ := os.ReadFile(store.LogPath())
	if !bytes.HasPrefix(all, first) || len(all) <= len(first) {
		t.Fatal("the second run must append to the log, not rewrite it")
	}
	sc := bufio.NewScanner(bytes.NewReader(first))
	var events []Event
	for sc.Scan() {
		var ev Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		if ev.Run == "" || ev.Time.IsZero() || ev.Event == "" {
			t.Errorf("line lacks run/time/event: %s", sc.Text())
		}
		events = append(events, ev)
	}
	if events[0].Event != "run-start" || events[len(events)-1].Event != "run-end" || events[0].Hash == "" {
		t.Errorf("first/last events: %+v / %+v", events[0], events[len(events)-1])
	}
	var failed *Event
	for i := range events {
		if events[i].Event == "step" && events[i].Step == "two" {
			failed = &events[i]
		}
	}
	if failed == nil || failed.ExitCode == nil || *failed.ExitCode != 1 || strings.Join(failed.Argv, " ") != "mkfs.ext4 /dev/x" ||
		failed.Start.IsZero() || failed.End.IsZero() || !strings.Contains(failed.Output, "Device size reported to be zero") || failed.Status != StepFailed {
		t.Errorf("step event: %+v", failed)
	}
}

func TestOnlyOneRunAtATime(t *testing.T) {
	store := &Store{Dir: t.TempDir()}
	lock, err := store.Lock()
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	f := newFake()
	e, _ := newEngine(f)
	pb := mustParse(t, threeSteps)
	vals, _ := Resolve(pb, nil)
	if _, err := e.Run(context.Background(), pb, Options{Values: vals, Store: store}); err == nil || !strings.Contains(err.Error(), "in progress") {
		t.Fatalf("second run: %v", err)
	}
	if len(f.called()) != 0 {
		t.Error("a second run must not run anything")
	}
}

func TestDryRunPlanResolvesEverything(t *testing.T) {
	pb, err := Embedded("provision-host")
	if err != nil {
		t.Fatal(err)
	}
	vals, err := Resolve(pb, map[string][]string{"hdd": {"/dev/sda,/dev/sdb"}, "with_prefix": {"false"}})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := newEngine(newFake())
	steps, err := e.Plan(pb, vals)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	WritePlan(&b, pb, vals, e.Self, steps)
	for _, want := range []string{
		"tbhost lvm plan --hdd /dev/sda --hdd /dev/sdb -o /var/lib/tbhost/provision-host/plan.yaml",
		"skip if:  file exists /var/lib/tbhost/provision-host/plan.yaml",
		`confirm:  Apply /var/lib/tbhost/provision-host/plan.yaml`,
		"mkfs.ext4 -b 4096 -I 256 -i 4194304 -m 1 -L tables /dev/vg-hdd/tables",
		"when:     {{.with_prefix}} -> SKIPPED",
		"tbhost monitor check --for 30s",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, b.String())
		}
	}
}

type fakeCommands map[string]bool

func (f fakeCommands) Check(argv []string) error {
	for n := len(argv); n > 0; n-- {
		if f[strings.Join(argv[:n], " ")] {
			return nil
		}
	}
	return &UnknownCommandError{Argv: argv, Msg: fmt.Sprintf("no command %q", strings.Join(argv, " "))}
}

func TestResumeOfKeepGoingRunRedoesOnlyWhatFailed(t *testing.T) {
	src := `name: pc
keep_going: true
steps:
  - name: a
    shell: [a]
  - name: b
    shell: [b]
  - name: c
    shell: [c]
  - name: verdict
    report: go-no-go
`
	store := &Store{Dir: t.TempDir()}
	pb := mustParse(t, src)
	vals, _ := Resolve(pb, nil)
	f := newFake().on("b", 1, 0)
	e, _ := newEngine(f)
	rep, _ := e.Run(context.Background(), pb, Options{Values: vals, Store: store})
	if rep.ExitCode != 1 || statuses(rep) != "a=done b=failed c=done verdict=failed" {
		t.Fatalf("first run: %s", statuses(rep))
	}
	rep, err := e.Run(context.Background(), pb, Options{Values: vals, Store: store, Resume: true})
	if err != nil || rep.ExitCode != 0 || strings.Join(f.called()[3:], " ") != "b" || statuses(rep) != "a=done b=done c=done verdict=done" {
		t.Fatalf("resume: %v calls %v %s", err, f.called(), statuses(rep))
	}
}

// A step marked on_interrupt: finish completes after the first interrupt
// (the run then stops and records where); a second interrupt kills it.
func TestOnInterruptFinish(t *testing.T) {
	src := `name: fin
steps:
  - name: apply
    on_interrupt: finish
    shell: [apply]
  - name: next
    shell: [next]
`
	for _, force := range []bool{false, true} {
		release := make(chan struct{})
		started := make(chan struct{})
		r := runnerFunc(func(ctx context.Context, c Cmd) (int, error) {
			if c.Argv[0] != "apply" {
				return 0, nil
			}
			close(started)
			select {
			case <-release:
				return 0, nil
			case <-ctx.Done():
				return -1, ctx.Err()
			}
		})
		e, out := newEngine(r)
		e.Out = &lockedWriter{w: out}
		pb := mustParse(t, src)
		vals, _ := Resolve(pb, nil)
		store := &Store{Dir: t.TempDir()}
		ctx, cancel := context.WithCancel(context.Background())
		fctx, fcancel := context.WithCancel(context.Background())
		done := make(chan *Report, 1)
		go func() {
			rep, _ := e.Run(ctx, pb, Options{Values: vals, Store: store, Force: fctx})
			done <- rep
		}()
		<-started
		cancel() // first Ctrl-C
		time.Sleep(50 * time.Millisecond)
		select {
		case <-done:
			t.Fatal("the finish step was killed by the first interrupt")
		default:
		}
		if force {
			fcancel()
		} else {
			close(release)
		}
		var rep *Report
		select {
		case rep = <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("run did not end")
		}
		fcancel()
		want := "apply=done next=not-run"
		if force {
			want = "apply=interrupted next=not-run"
		}
		if rep.Status != "interrupted" || rep.ExitCode != ExitInterrupted || statuses(rep) != want {
			t.Errorf("force=%v: %s %d %s", force, rep.Status, rep.ExitCode, statuses(rep))
		}
		st, _ := store.Load()
		wantAt := "next"
		if force {
			wantAt = "apply"
		}
		if st.Status != "interrupted" || st.Current != wantAt {
			t.Errorf("force=%v: state %s at %q, want at %q", force, st.Status, st.Current, wantAt)
		}
		if !strings.Contains(out.String(), "this step finishes first") {
			t.Errorf("no notice: %s", out.String())
		}
	}
}

type runnerFunc func(ctx context.Context, c Cmd) (int, error)

func (f runnerFunc) Run(ctx context.Context, c Cmd) (int, error) { return f(ctx, c) }

// on_failure: the rollback hook runs when the step fails (after its
// retries), never when it passes, is skipped or refused; the step stays
// failed and the reason says what the hook did.
func TestOnFailureRunsTheHookOnlyWhenTheStepFails(t *testing.T) {
	const src = `name: watch
params:
  - name: rollback
    default: "echo rolling back"
steps:
  - name: watch
    tbhost: [monitor, check]
    retries: 1
    on_failure:
      shell: [sh, -c, "{{.rollback}}"]
  - name: after
    tbhost: [lvm, status]
`
	f := newFake().on("/bin/tbhost monitor check", 2)
	e, out := newEngine(f)
	rep := runPB(t, e, src, Options{})
	calls := strings.Join(f.called(), "\n")
	if statuses(rep) != "watch=failed after=not-run" || strings.Count(calls, "sh -c echo rolling back") != 1 || strings.Count(calls, "monitor check") != 2 {
		t.Fatalf("statuses %s, calls:\n%s", statuses(rep), calls)
	}
	if !strings.Contains(rep.Steps[0].Reason, "on_failure") || !strings.Contains(out.String(), "running on_failure") {
		t.Errorf("reason %q / output do not say the hook ran:\n%s", rep.Steps[0].Reason, out.String())
	}
	// a failing hook is reported, the step still failed
	f = newFake().on("/bin/tbhost monitor check", 2).on("sh -c echo rolling back", 7)
	e, _ = newEngine(f)
	if rep := runPB(t, e, src, Options{}); !strings.Contains(rep.Steps[0].Reason, "exited 7") {
		t.Errorf("a failing hook: reason %q", rep.Steps[0].Reason)
	}
	// the step passes: no hook
	f = newFake()
	e, _ = newEngine(f)
	if rep := runPB(t, e, src, Options{}); statuses(rep) != "watch=done after=done" || strings.Contains(strings.Join(f.called(), "\n"), "rolling back") {
		t.Errorf("passing step: %s, calls %q", statuses(rep), f.called())
	}
	// exists is not a hook: refused when parsed or validated
	bad := strings.Replace(src, `shell: [sh, -c, "{{.rollback}}"]`, "exists: /tmp", 1)
	if pb, err := Parse("t.yaml", []byte(bad)); err == nil {
		if _, err := Validate(pb, acceptAll{}); err == nil {
			t.Error("on_failure: exists accepted")
		}
	}
}

// The migrate playbook in order, on a fake runner: with --yes every step
// runs once in the documented order, the gates reach bench replay, and a
// failing post-cutover watch runs the rollback hook (and only then).
func TestMigratePlaybookOrderAndRollback(t *testing.T) {
	pb, vals, lists, log := migrateValues(t, map[string]string{"provision": "false"})
	run := func(f *fakeRunner, yes bool) *Report {
		e, _ := newEngine(f)
		rep, err := e.Run(context.Background(), pb, Options{Values: vals, Yes: yes})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	f := newFake()
	rep := run(f, true)
	want := "plan-directory=skipped lvm-plan=skipped review-plan=skipped provision=skipped balance-empty-array=done tables-sync=done verify-tables=done prefix-extract=done prefix-verify=done replay-gate=done cutover=done post-cutover-watch=done"
	if statuses(rep) != want {
		t.Fatalf("statuses %s", statuses(rep))
	}
	calls := strings.Join(f.called(), "\n")
	for _, c := range []string{
		"/bin/tbhost tables sync --from rsync://127.0.0.1:8730/tables --to /srv/syzygy --checksums " + lists + " --set 3-7",
		"/bin/tbhost bench replay --log " + log + " --target old=http://127.0.0.1:9001 --target new=http://127.0.0.1:9002 --clients 12 --gate p99<=1.0*old --gate p99.9<=1.1*old",
		"sh -c echo cutover",
	} {
		if !strings.Contains(calls, c) {
			t.Errorf("not run: %s\ncalls:\n%s", c, calls)
		}
	}
	if strings.Contains(calls, "rollback") {
		t.Errorf("rollback ran after a passing watch:\n%s", calls)
	}
	// a member disk gone during the watch: monitor check CRITICAL -> rollback
	f = newFake().on("/bin/tbhost monitor check --for 10m --no-traffic unknown vg-hdd/tables", 2)
	rep = run(f, true)
	if last := rep.Steps[len(rep.Steps)-1]; last.Status != StepFailed || !strings.Contains(strings.Join(f.called(), "\n"), "sh -c echo rollback") {
		t.Errorf("failed watch: %s, calls %q", statuses(rep), f.called())
	}
	// a failing gate stops the run before the cutover: no hook at all
	f = newFake().on("/bin/tbhost bench replay --log "+log+" --target old=http://127.0.0.1:9001 --target new=http://127.0.0.1:9002 --clients 12 --gate p99<=1.0*old --gate p99.9<=1.1*old", 1)
	rep = run(f, true)
	if c := strings.Join(f.called(), "\n"); strings.Contains(c, "cutover") || strings.Contains(c, "rollback") || !strings.Contains(statuses(rep), "replay-gate=failed") {
		t.Errorf("failed gate: %s, calls:\n%s", statuses(rep), c)
	}
	// without --yes and no terminal, the cutover is refused, nothing after it runs
	f = newFake()
	rep = run(f, false)
	if !strings.Contains(statuses(rep), "cutover=refused") || strings.Contains(strings.Join(f.called(), "\n"), "echo cutover") {
		t.Errorf("no --yes: %s", statuses(rep))
	}
}

// migrate's provision step waits for the initial sync: the balance check
// that follows cannot judge a syncing array (monitor check reports WARNING
// "sync in progress"), so without the wait it fails on every new array (the
// VM lab's TestMigratePlaybook). Before it, the plan is written (or the
// existing, reviewed one kept) and shown with lvm apply --dry-run: the
// typed confirmation is for those commands (the nested provision-host run
// gets --yes and cannot show them; the confirmation used to come first, for
// a plan not yet written on a new host).
func TestMigrateProvisionShowsThePlanAndWaitsForSync(t *testing.T) {
	plan := filepath.Join(t.TempDir(), "plan.yaml")
	os.WriteFile(plan, []byte("version: 1\n"), 0o644)
	pb, vals, _, _ := migrateValues(t, map[string]string{"plan": plan})
	run := func(yes bool) (*Report, []string) {
		f := newFake()
		e, _ := newEngine(f)
		rep, err := e.Run(context.Background(), pb, Options{Values: vals, Yes: yes})
		if err != nil {
			t.Fatal(err)
		}
		return rep, f.called()
	}
	_, calls := run(true)
	want := []string{"mkdir -p " + filepath.Dir(plan), "/bin/tbhost lvm apply --dry-run " + plan,
		"/bin/tbhost playbook run --yes --set plan=" + plan + " --set tables_mount=/srv/syzygy --set prefix_mount=/srv/syzygy-prefix --set wait_sync=true provision-host"}
	if len(calls) < len(want) || strings.Join(calls[:len(want)], "\n") != strings.Join(want, "\n") {
		t.Errorf("first calls (the existing plan kept, shown, then provision-host waiting for the sync):\n%s\nwant:\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
	// no --yes and no terminal: the plan is shown, the confirmation refused,
	// nothing provisioned
	rep, calls := run(false)
	if !strings.Contains(statuses(rep), "review-plan=done provision=refused") || strings.Contains(strings.Join(calls, "\n"), "provision-host") {
		t.Errorf("no --yes: %s, calls %q", statuses(rep), calls)
	}
	// a new host: the plan is written first; a plan step that wrote nothing
	// stops the run before any confirmation
	newPlan := filepath.Join(t.TempDir(), "new", "plan.yaml")
	pb, vals, _, _ = migrateValues(t, map[string]string{"plan": newPlan})
	rep, calls = run(true)
	if c := strings.Join(calls, "\n"); !strings.Contains(c, "/bin/tbhost lvm plan -o "+newPlan) || strings.Contains(c, "provision-host") || !strings.Contains(statuses(rep), "review-plan=refused") {
		t.Errorf("no plan written: %s, calls %q", statuses(rep), calls)
	}
}

// migrateValues is the embedded migrate playbook with every required
// parameter set (the lists and the log exist in a temp dir, for the
// require checks), plus extra.
func migrateValues(t *testing.T, extra map[string]string) (pb *Playbook, vals Values, lists, log string) {
	t.Helper()
	pb, err := Embedded("migrate")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lists, log = filepath.Join(dir, "lists"), filepath.Join(dir, "access.log")
	os.MkdirAll(lists, 0o755)
	os.WriteFile(filepath.Join(lists, "sha256"), []byte("x"), 0o644)
	os.WriteFile(log, []byte("/standard?fen=x\n"), 0o644)
	params := map[string]string{
		"from": "rsync://127.0.0.1:8730/tables", "lists": lists, "replay_log": log, "old_target": "http://127.0.0.1:9001",
		"new_target": "http://127.0.0.1:9002", "cutover_hook": "echo cutover", "rollback_hook": "echo rollback",
	}
	for k, v := range extra {
		params[k] = v
	}
	sets := map[string][]string{}
	for k, v := range params {
		sets[k] = []string{v}
	}
	if vals, err = Resolve(pb, sets); err != nil {
		t.Fatal(err)
	}
	return pb, vals, lists, log
}
