package playbooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gone reports whether pid no longer runs (exited, or a zombie nobody reaped yet).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// state is the field after the ")" that closes the command name
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i > 0 && len(s) > i+2 {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

// mustBeGone checks that process pid no longer runs, at once: the runner
// returns only once everything the step started is gone (StepRunner), not
// merely sent SIGKILL (a killed process may still hold files open as it
// exits, and the next step may unmount).
func mustBeGone(t *testing.T, pid int) {
	t.Helper()
	if !gone(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("process %d still runs after the step was stopped", pid)
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("the step never wrote %s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A child that started its own child in the background: both must die.
func treeScript(pidfile string) []string {
	return []string{"sh", "-c", `sleep 300 & echo $! > "$0.tmp"; mv "$0.tmp" "$0"; echo started; wait`, pidfile}
}

func TestProcRunnerExitCodeAndOutput(t *testing.T) {
	var out bytes.Buffer
	code, err := ProcRunner{}.Run(context.Background(), Cmd{Argv: []string{"sh", "-c", "echo out; echo err >&2; echo $TBHOST_STEP; exit 4"}, Env: []string{"TBHOST_STEP=s1"}, Out: &out})
	if err != nil || code != 4 {
		t.Fatalf("code %d err %v", code, err)
	}
	if out.String() != "out\nerr\ns1\n" {
		t.Errorf("output %q", out.String())
	}
	if _, err := (ProcRunner{}).Run(context.Background(), Cmd{Argv: []string{"tbhost-no-such-program"}}); err == nil {
		t.Error("a missing program must be an error")
	}
}

func TestProcRunnerTimeoutKillsWholeProcessGroup(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	code, err := ProcRunner{}.Run(ctx, Cmd{Argv: treeScript(pidfile)})
	if !errors.Is(err, context.DeadlineExceeded) || code != -1 {
		t.Fatalf("code %d err %v, want deadline exceeded", code, err)
	}
	if time.Since(start) > 9*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
	mustBeGone(t, readPID(t, pidfile))
}

func TestProcRunnerKillsChildThatIgnoresSIGTERM(t *testing.T) {
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pid")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := ProcRunner{Grace: 300 * time.Millisecond}.Run(ctx, Cmd{Argv: []string{"sh", "-c",
			`trap "" TERM; sleep 300 & echo $! > "$0.tmp"; mv "$0.tmp" "$0"; wait; wait`, pidfile}})
		done <- err
	}()
	pid := readPID(t, pidfile)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	mustBeGone(t, pid)
}

// Ctrl-C during a step: the engine kills the step's process tree, marks
// the step interrupted in the state file, and --resume runs it again.
func TestEngineCancellationKillsStepAndRecordsWhere(t *testing.T) {
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pid")
	src := fmt.Sprintf(`name: cancel
steps:
  - name: first
    shell: [true]
  - name: long
    shell: [sh, -c, 'sleep 300 & echo $! > "$0.tmp"; mv "$0.tmp" "$0"; wait', %s]
  - name: last
    shell: [true]
`, pidfile)
	pb := mustParse(t, src)
	vals, _ := Resolve(pb, nil)
	store := &Store{Dir: filepath.Join(dir, "state")}
	e, _ := newEngine(ProcRunner{Grace: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		rep *Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := e.Run(ctx, pb, Options{Values: vals, Store: store})
		done <- result{rep, err}
	}()
	pid := readPID(t, pidfile)
	cancel()
	var res result
	select {
	case res = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the run did not stop after cancel")
	}
	mustBeGone(t, pid)
	if res.err != nil || res.rep.Status != "interrupted" || res.rep.ExitCode != ExitInterrupted || statuses(res.rep) != "first=done long=interrupted last=not-run" {
		t.Fatalf("err %v report %+v: %s", res.err, res.rep, statuses(res.rep))
	}
	st, err := store.Load()
	if err != nil || st.Status != "interrupted" || st.Current != "long" {
		t.Fatalf("state %+v %v", st, err)
	}
	// Resume: the interrupted step runs again (it finishes quickly now).
	os.Remove(pidfile)
	pb2 := mustParse(t, strings.Replace(src, "sleep 300", "sleep 0", 1))
	rep, err := e.Run(context.Background(), pb2, Options{Values: vals, Store: store, Resume: true, AcceptChanges: true})
	if err != nil || rep.Status != "done" || statuses(rep) != "first=done long=done last=done" || !rep.Steps[0].Previous || rep.Steps[1].Previous {
		t.Fatalf("resume: %v %s", err, statuses(rep))
	}
}

func TestEngineStepTimeoutFailsStepAndKillsIt(t *testing.T) {
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pid")
	src := fmt.Sprintf(`name: to
steps:
  - name: slow
    timeout: 500ms
    shell: [sh, -c, 'sleep 300 & echo $! > "$0.tmp"; mv "$0.tmp" "$0"; wait', %s]
`, pidfile)
	e, _ := newEngine(ProcRunner{Grace: time.Second})
	rep := runPB(t, e, src, Options{})
	if rep.ExitCode != 1 || rep.Steps[0].Status != StepFailed || !strings.Contains(rep.Steps[0].Reason, "timed out after 500ms") {
		t.Fatalf("exit %d %+v", rep.ExitCode, rep.Steps[0])
	}
	mustBeGone(t, readPID(t, pidfile))
}

// Issue 12 item 8: a step's background child survived the step and kept the
// playbook's lock (it inherits the lock file) and its output pipe. The step's
// group is killed when the step ends: the lock is free when Run returns, the
// child is gone, and the run did not wait for the child's output.
func TestEngineKillsWhatAStepLeftRunning(t *testing.T) {
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pid")
	src := fmt.Sprintf(`name: leftover
steps:
  - name: starts-a-daemon
    shell: [sh, -c, 'sleep 300 & echo $! > "$0.tmp"; mv "$0.tmp" "$0"; echo started', %s]
  - name: next
    shell: [echo, next]
`, pidfile)
	pb := mustParse(t, src)
	vals, _ := Resolve(pb, nil)
	store := &Store{Dir: filepath.Join(dir, "state")}
	e, _ := newEngine(ProcRunner{Grace: time.Second})
	start := time.Now()
	rep, err := e.Run(context.Background(), pb, Options{Values: vals, Store: store})
	took := time.Since(start)
	pid := readPID(t, pidfile)
	defer syscall.Kill(pid, syscall.SIGKILL)
	if err != nil || rep.Status != "done" {
		t.Fatalf("err %v report %+v", err, rep)
	}
	if took > 3*time.Second {
		t.Errorf("the run took %v: it waited for the background child's output", took)
	}
	lock, err := store.Lock()
	if err != nil {
		t.Fatalf("the lock is still held after the run: %v", err)
	}
	lock.Unlock()
	if !gone(pid) {
		t.Fatalf("the step's background child %d still runs after the step ended", pid)
	}
}

func TestProcRunnerKillsLeftoversAndKeepsOutput(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	var out bytes.Buffer
	start := time.Now()
	code, err := ProcRunner{}.Run(context.Background(), Cmd{Out: &out, Argv: []string{"sh", "-c",
		`(sleep 300; echo late) & echo $! > "$0.tmp"; mv "$0.tmp" "$0"; echo early; exit 3`, pidfile}})
	if err != nil || code != 3 {
		t.Fatalf("code %d err %v", code, err)
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
	if !strings.HasPrefix(out.String(), "early\n") || !strings.Contains(out.String(), "left processes running") || strings.Contains(out.String(), "late") {
		t.Errorf("output %q", out.String())
	}
	mustBeGone(t, readPID(t, pidfile))
}
