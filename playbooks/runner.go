package playbooks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/tbhost/tbhost/internal/procgroup"
)

// Cmd is one process a step runs.
type Cmd struct {
	Argv []string
	Env  []string  // added to the environment
	Out  io.Writer // stdout and stderr, combined in order
	// Inherit are open files the process inherits (as fd 3, 4, ...): the
	// playbook's lock, so it stays held while a step runs.
	Inherit []*os.File
}

// StepRunner runs a step's process to completion. It returns the exit code
// (-1 when the process did not start or was killed); err is set when it
// could not start or was stopped by ctx. When ctx is done the runner must
// kill the process and everything it started, and return only after.
type StepRunner interface {
	Run(ctx context.Context, c Cmd) (exitCode int, err error)
}

// ProcRunner runs real processes, each in its own process group, with stdin
// from /dev/null (a step never prompts). When the context ends it sends
// SIGTERM to the whole group, then SIGKILL after Grace. When the step's
// process ends by itself, whatever it left running in its group (a
// `sleep 300 &`) is killed: a step's background child must not outlive the
// step, hold the playbook's lock (it inherits the lock file) or keep
// writing into the next step's output.
//
// It uses os/exec directly rather than execx: steps stream their output
// and may run for hours, and a stopped step must take its children with it.
type ProcRunner struct {
	Grace time.Duration // between SIGTERM and SIGKILL; 0 means 5s
}

// leftoverWait bounds how long Run waits, after killing a finished step's
// group, for its output pipe to close (a process that left the group with
// setsid may hold it for ever).
const leftoverWait = 5 * time.Second

// Run implements StepRunner.
func (r ProcRunner) Run(ctx context.Context, c Cmd) (int, error) {
	if len(c.Argv) == 0 {
		return -1, errors.New("empty command")
	}
	if err := ctx.Err(); err != nil {
		return -1, err
	}
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Env = append(os.Environ(), c.Env...)
	out := c.Out
	if out == nil {
		out = io.Discard
	}
	// Our own pipe (an *os.File, so Wait returns when the step's process
	// exits, not when the last holder of its output does): the group is
	// killed then, and the copy ends when the killed members close it.
	pr, pw, err := os.Pipe()
	if err != nil {
		return -1, fmt.Errorf("output pipe for %s: %w", c.Argv[0], err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.ExtraFiles = c.Inherit
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return -1, fmt.Errorf("start %s: %w", c.Argv[0], err)
	}
	pw.Close()
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(out, pr)
		close(copied)
	}()
	pgid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var stopped error
	leftovers := false
	select {
	case err = <-done:
		// The step ended; members of its group still running are leftovers.
		leftovers = syscall.Kill(-pgid, syscall.SIGKILL) == nil
	case <-ctx.Done():
		grace := r.Grace
		if grace == 0 {
			grace = 5 * time.Second
		}
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		timer := time.NewTimer(grace)
		select {
		case err = <-done:
			timer.Stop()
		case <-timer.C:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			err = <-done
		}
		// Members of the group that ignored SIGTERM or outlived the leader.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		stopped = ctx.Err()
	}
	// Killed is not yet gone: a member may still hold files open as it
	// exits (its output pipe closes first), and the next step may unmount.
	procgroup.WaitGone(pgid, leftoverWait)
	select {
	case <-copied:
	case <-time.After(leftoverWait):
		pr.Close() // a process outside the group holds the output: stop reading it
		<-copied
	}
	pr.Close()
	if leftovers { // after the copy: out is not safe for concurrent writes
		fmt.Fprintf(out, "tbhost: the step ended but left processes running in its group (started in the background?); killed them\n")
	}
	if stopped != nil {
		return -1, stopped
	}
	if err == nil {
		return 0, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ee.ExitCode() >= 0 {
			return ee.ExitCode(), nil
		}
		return -1, fmt.Errorf("%s: %w", c.Argv[0], err) // killed by a signal
	}
	return -1, fmt.Errorf("%s: %w", c.Argv[0], err)
}
