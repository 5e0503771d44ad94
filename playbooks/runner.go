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
// SIGTERM to the whole group, then SIGKILL after Grace.
//
// It uses os/exec directly rather than execx: steps stream their output
// and may run for hours, and a stopped step must take its children with it.
type ProcRunner struct {
	Grace time.Duration // between SIGTERM and SIGKILL; 0 means 5s
}

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
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.ExtraFiles = c.Inherit
	// A child that exits but leaves a grandchild holding its output pipe
	// must not hang the playbook.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return -1, fmt.Errorf("start %s: %w", c.Argv[0], err)
	}
	pgid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		grace := r.Grace
		if grace == 0 {
			grace = 5 * time.Second
		}
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		timer := time.NewTimer(grace)
		select {
		case <-done:
			timer.Stop()
		case <-timer.C:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-done
		}
		// Members of the group that ignored SIGTERM or outlived the leader.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return -1, ctx.Err()
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
	if errors.Is(err, exec.ErrWaitDelay) {
		return cmd.ProcessState.ExitCode(), nil
	}
	return -1, fmt.Errorf("%s: %w", c.Argv[0], err)
}
