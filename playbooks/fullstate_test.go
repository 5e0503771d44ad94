package playbooks

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/tbhost/tbhost/internal/smallfs"
)

// fill writes into dir until its file system is full.
func fill(t *testing.T, dir string) {
	t.Helper()
	err := os.WriteFile(filepath.Join(dir, "filler"), make([]byte, 1<<20), 0o640)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling %s: %v, want it full (ENOSPC)", dir, err)
	}
}

// fillingRunner runs steps with the fake and fills the state directory's
// file system while the command line at fills runs.
type fillingRunner struct {
	*fakeRunner
	fills string
	fill  func()
}

func (r *fillingRunner) Run(ctx context.Context, c Cmd) (int, error) {
	if strings.Join(c.Argv, " ") == r.fills {
		r.fill()
	}
	return r.fakeRunner.Run(ctx, c)
}

// The state directory's file system full before a run starts: the state
// on disk is the previous run's (done), and a --resume trusting it would
// take this run's failed step as done. The run goes on (its checks are
// still worth running), says why the state is not written and how to fix
// it, removes the previous run's state (which frees room, so a later save
// of this run may succeed), and the report names the error. Whatever the
// state file holds afterwards is this run's or nothing: a --resume runs the
// failed step again or refuses with nothing to resume, never skips it.
func TestAStateDirectoryFullBeforeTheRunNeverLetsAResumeSkipAFailedStep(t *testing.T) {
	dir := smallfs.Mount(t, "64k", "a full state directory")
	store := &Store{Dir: dir}
	pb := mustParse(t, threeSteps)
	vals, _ := Resolve(pb, nil)
	f := newFake().on("mkfs.ext4 /dev/x", 0, 1, 0)
	e, out := newEngine(f)
	ctx := context.Background()
	if rep, err := e.Run(ctx, pb, Options{Values: vals, Store: store}); err != nil || rep.Status != "done" || rep.StateError != "" {
		t.Fatalf("first run, room for the state: %v %+v\n%s", err, rep, out)
	}

	fill(t, dir)
	out.Reset()
	rep, err := e.Run(ctx, pb, Options{Values: vals, Store: store})
	if err != nil || rep.Status != "failed" || rep.ExitCode != 1 {
		t.Fatalf("run onto a full state directory: %v %+v\n%s", err, rep, out)
	}
	if !strings.Contains(rep.StateError, "no space left on device") {
		t.Errorf("report's state_error %q, want the full disk named", rep.StateError)
	}
	for _, want := range []string{
		"no space left on device (the state directory's file system is full: free space on it, or choose another with --state-dir)",
		"removed the previous run's state " + store.StatePath() + " so that no --resume continues from it",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out.String(), "removed the previous run's state") != 1 {
		t.Errorf("the removal is reported more than once:\n%s", out)
	}
	var summary strings.Builder
	if err := rep.WriteSummary(&summary); err != nil || !strings.Contains(summary.String(), "the state file does not hold this run's end: ") {
		t.Errorf("summary does not say the state is behind (%v):\n%s", err, summary.String())
	}
	st, err := store.Load()
	if err != nil || (st != nil && st.RunID != rep.RunID) {
		t.Fatalf("state on disk after the run: %+v %v; want none or this run's (%s)", st, err, rep.RunID)
	}
	calls := len(f.called())
	rep, err = e.Run(ctx, pb, Options{Values: vals, Store: store, Resume: true})
	var refused *RefusedError
	switch {
	case st == nil:
		if !errors.As(err, &refused) || !strings.Contains(err.Error(), "nothing to resume") {
			t.Fatalf("--resume after the run that kept no state: %v, want refused with nothing to resume", err)
		}
	case err != nil || rep.Status != "done" || !slices.Contains(f.called()[calls:], "mkfs.ext4 /dev/x"):
		t.Fatalf("--resume from this run's state: %v %+v, ran %v; want the failed step two run again", err, rep, f.called()[calls:])
	}
	t.Logf("state after the run: %v; the --resume ran %q", st != nil, f.called()[calls:])

	// room again: a run writes its state to the end
	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if rep, err := e.Run(ctx, pb, Options{Values: vals, Store: store}); err != nil || rep.Status != "done" || rep.StateError != "" {
		t.Fatalf("run with room again: %v %+v\n%s", err, rep, out)
	} else if st, err := store.Load(); err != nil || st.Status != "done" || st.RunID != rep.RunID {
		t.Errorf("state after the run with room: %+v %v", st, err)
	}
}

// The file system fills up during a run (step one fills it): the state on
// disk is this run's as of its last save, before step one. A --resume runs
// step one again and then the failed step two: nothing is skipped.
func TestAStateDirectoryFillingDuringTheRunResumesFromItsLastSave(t *testing.T) {
	dir := smallfs.Mount(t, "64k", "a full state directory")
	store := &Store{Dir: dir}
	pb := mustParse(t, threeSteps)
	vals, _ := Resolve(pb, nil)
	f := newFake().on("mkfs.ext4 /dev/x", 1, 0)
	r := &fillingRunner{fakeRunner: f, fills: "/bin/tbhost lvm plan -o /tmp/plan.yaml", fill: func() { fill(t, dir) }}
	e, out := newEngine(r)
	ctx := context.Background()
	rep, err := e.Run(ctx, pb, Options{Values: vals, Store: store})
	if err != nil || rep.Status != "failed" || !strings.Contains(rep.StateError, "no space left on device") {
		t.Fatalf("run that fills the state directory: %v %+v\n%s", err, rep, out)
	}
	if want := "the state file keeps this run as of its last save, so a --resume runs the steps after that again"; strings.Count(out.String(), want) != 1 {
		t.Errorf("output, want %q once:\n%s", want, out)
	}
	st, err := store.Load()
	if err != nil || st.RunID != rep.RunID || st.Status != "running" {
		t.Fatalf("state on disk: %+v %v; want this run's first save", st, err)
	}

	r.fills = "" // the disk stays full
	f.calls = nil
	out.Reset()
	rep, err = e.Run(ctx, pb, Options{Values: vals, Store: store, Resume: true})
	if err != nil || rep.Status != "done" {
		t.Fatalf("--resume: %v %+v\n%s", err, rep, out)
	}
	if got := strings.Join(f.called(), "|"); got != "/bin/tbhost lvm plan -o /tmp/plan.yaml|mkfs.ext4 /dev/x|/bin/tbhost lvm status" {
		t.Errorf("--resume ran %q, want every step again from the last saved one (one, two, three)", got)
	}
}

// A run whose state ends "running" (killed, or its saves failed) is named
// as one that did not record its end, with the step it was last saved in.
func TestTheNoteOnAPreviousRunThatDidNotRecordItsEnd(t *testing.T) {
	for current, want := range map[string]string{
		"two": "note: the previous run (20261207T010203.000Z) did not record its end (killed, or its state could not be written); it was last recorded at step two; this run starts from the first step (--resume would continue there)",
		"":    "it was last recorded before its first step;",
	} {
		store := &Store{Dir: t.TempDir()}
		if err := store.Save(&State{Playbook: "three", RunID: "20261207T010203.000Z", Status: "running", Current: current}); err != nil {
			t.Fatal(err)
		}
		e, out := newEngine(newFake())
		pb := mustParse(t, threeSteps)
		vals, _ := Resolve(pb, nil)
		if _, err := e.Run(context.Background(), pb, Options{Values: vals, Store: store}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("previous run saved at %q: output lacks %q:\n%s", current, want, out)
		}
	}
}

// The log on a file system that fills up holds whole lines only: a write
// the full disk cut short is cut off, the writes after it keep failing
// until there is room, and then they append whole lines. A log whose last
// line was cut short before (a crash mid-write) gets it ended when opened.
func TestTheLogOnAFullDiskHoldsWholeLinesOnly(t *testing.T) {
	dir := smallfs.Mount(t, "16k", "a full state directory")
	store := &Store{Dir: dir}
	l, err := store.OpenLog()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ev := Event{Event: "step", Step: "one", Reason: strings.Repeat("r", 300)}
	wrote, failed := 0, 0
	for i := 0; i < 200 && failed < 3; i++ {
		if err := l.Write(ev); err == nil {
			wrote++
		} else if errors.Is(err, syscall.ENOSPC) {
			failed++
		} else {
			t.Fatal(err)
		}
	}
	if failed == 0 || wrote == 0 {
		t.Fatalf("%d events written, %d failed into 16 KiB: want the disk to fill", wrote, failed)
	}
	lines := func() int {
		t.Helper()
		b, err := os.ReadFile(store.LogPath())
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			t.Fatalf("the log ends in a line cut short: ...%q", b[max(0, len(b)-40):])
		}
		n := 0
		for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			var e Event
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("log line %d is not an event: %v: %q", n+1, err, line)
			}
			n++
		}
		return n
	}
	if n := lines(); n != wrote {
		t.Errorf("the full log holds %d lines, %d events were written", n, wrote)
	}
	smallfs.Resize(t, dir, "64k")
	if err := l.Write(ev); err != nil {
		t.Fatalf("write with room again: %v", err)
	}
	if n := lines(); n != wrote+1 {
		t.Errorf("the log holds %d lines after one more event, want %d", n, wrote+1)
	}

	// a line cut short by a crash: the next run's log starts a new line
	f, err := os.OpenFile(store.LogPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"event":"st`)
	f.Close()
	l2, err := store.OpenLog()
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if err := l2.Write(ev); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(store.LogPath())
	if !strings.Contains(string(b), `{"event":"st`+"\n"+`{"time"`) {
		t.Errorf("the event after a cut line does not start its own line: ...%q", b[max(0, len(b)-420):])
	}
}

// A run killed between a checkpoint's create and its rename (kill -9)
// leaves a .state-*.json; the next run's lock removes it, and nothing else.
func TestTheLockRemovesTheTemporaryStateOfAKilledRun(t *testing.T) {
	for _, dir := range []string{"plain", "glob[a]*?"} {
		t.Run(dir, func(t *testing.T) { theLockRemovesTheTemporaryStateOfAKilledRun(t, dir) })
	}
}

// theLockRemovesTheTemporaryStateOfAKilledRun runs in a store directory
// named dir: a name with glob characters is no pattern.
func theLockRemovesTheTemporaryStateOfAKilledRun(t *testing.T, dir string) {
	s := Store{Dir: filepath.Join(t.TempDir(), dir)}
	if err := os.Mkdir(s.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(s.Dir, ".state-123456.json")
	keep := filepath.Join(s.Dir, "log.jsonl")
	for _, f := range []string{left, keep} {
		if err := os.WriteFile(f, []byte("{"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := s.Lock()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("the killed run's temporary state is still there: %v", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("the lock removed %s: %v", keep, err)
	}
}
