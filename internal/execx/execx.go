// Package execx is the one way tbhost runs external programs (lvm, wipefs,
// blkid, mkfs, ...): argv only, never a shell string; LC_ALL=C; a context
// deadline on every call; stdout and stderr captured; failures returned as a
// typed *CommandError that carries the command line, exit code and stderr.
//
// Code that execs takes a Runner, so tests substitute recorded outputs
// (see Recorded) without any global variable.
package execx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// DefaultTimeout bounds a call whose context has no deadline of its own.
const DefaultTimeout = 2 * time.Minute

// Result is what a finished command printed.
type Result struct {
	Argv   []string
	Stdout []byte
	Stderr []byte
}

// Runner runs one external command to completion.
type Runner interface {
	Run(ctx context.Context, argv ...string) (Result, error)
}

// CommandError is returned when a command could not start, was killed by
// its deadline, or exited non-zero.
type CommandError struct {
	Argv     []string
	ExitCode int // -1 when the command did not start or was killed
	Stderr   string
	Err      error // the underlying error (exec.ErrNotFound, context.DeadlineExceeded, ...)
}

func (e *CommandError) Error() string {
	if errors.Is(e.Err, exec.ErrNotFound) && len(e.Argv) > 0 {
		// the program, not its whole command line: "lvm is not installed"
		// needs no list of 21 report fields (issue 18)
		return fmt.Sprintf("%s: program not found in $PATH (%s)", e.Argv[0], installHint(e.Argv[0]))
	}
	msg := fmt.Sprintf("%s", Quote(e.Argv))
	var stuck *UnkillableError
	switch {
	case errors.As(e.Err, &stuck):
		msg += ": " + stuck.Error()
	case errors.Is(e.Err, context.DeadlineExceeded):
		msg += ": timed out"
	case errors.Is(e.Err, context.Canceled):
		msg += ": cancelled"
	case e.ExitCode >= 0:
		msg += fmt.Sprintf(": exit status %d", e.ExitCode)
	case e.Err != nil:
		msg += ": " + e.Err.Error()
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + s
	}
	return msg
}

func (e *CommandError) Unwrap() error { return e.Err }

// installHint names the Debian package of a program tbhost runs.
func installHint(program string) string {
	pkg := map[string]string{
		"lvm": "lvm2", "dmsetup": "dmsetup", "wipefs": "util-linux", "blkid": "util-linux",
		"blockdev": "util-linux", "mkfs.ext4": "e2fsprogs", "mkfs.xfs": "xfsprogs",
		"qemu-system-x86_64": "qemu-system-x86", "systemctl": "systemd", "promtool": "prometheus",
	}[program]
	if pkg == "" {
		return "install it"
	}
	return "install it: apt-get install " + pkg
}

// NotFound reports whether err is a command whose program is not installed.
func NotFound(err error) bool {
	var ce *CommandError
	return errors.As(err, &ce) && errors.Is(ce.Err, exec.ErrNotFound)
}

// ExitCode returns the exit code carried by err, or -1.
func ExitCode(err error) int {
	var ce *CommandError
	if errors.As(err, &ce) {
		return ce.ExitCode
	}
	return -1
}

// Exec runs real programs.
type Exec struct {
	// Timeout applies when the context has no deadline; 0 means DefaultTimeout.
	Timeout time.Duration
	// Env is added to the environment (after LC_ALL=C, so it may override it).
	Env []string
	// Stdin, if set, is fed to every command.
	Stdin []byte
	// Blocked, if set, is where Run says that a command has been in
	// uninterruptible sleep (state D) for BlockedAfter (0:
	// DefaultBlockedAfter), and in which kernel functions. A command stuck
	// in a known kernel deadlock (KnownKernelHang) makes Run return a
	// *KernelHangError then instead of waiting for a process that can
	// never exit. nil: no watch.
	Blocked io.Writer
	// BlockedAfter: see Blocked.
	BlockedAfter time.Duration
	// ProcRoot is where the watch reads /proc ("" is /proc).
	ProcRoot string
}

// Run implements Runner.
func (x Exec) Run(ctx context.Context, argv ...string) (Result, error) {
	res := Result{Argv: argv}
	if len(argv) == 0 {
		return res, &CommandError{Argv: argv, ExitCode: -1, Err: errors.New("empty command")}
	}
	if _, ok := ctx.Deadline(); !ok {
		t := x.Timeout
		if t == 0 {
			t = DefaultTimeout
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), "LC_ALL=C", "LANG=C"), x.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if x.Stdin != nil {
		cmd.Stdin = bytes.NewReader(x.Stdin)
	}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return res, &CommandError{Argv: argv, ExitCode: -1, Err: err}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	if x.Blocked == nil {
		err = <-done
	} else if gaveUp := x.watch(ctx, cmd.Process.Pid, argv, done, &err); gaveUp != nil {
		// the process stays in the kernel (its Wait goroutine ends with
		// it), and so may its output's copiers: its output is not read
		return res, &CommandError{Argv: argv, ExitCode: -1, Err: gaveUp}
	}
	res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
	if err == nil {
		return res, nil
	}
	ce := &CommandError{Argv: argv, ExitCode: -1, Stderr: stderr.String(), Err: err}
	var ee *exec.ExitError
	if ctxErr := ctx.Err(); ctxErr != nil {
		ce.Err = ctxErr
	} else if errors.As(err, &ee) {
		ce.ExitCode = ee.ExitCode()
	}
	return res, ce
}

// UnkillableError is returned when a command's context ended (it was sent
// SIGKILL) and its task still sat in the kernel (state D) a while later:
// Run stops waiting for it.
type UnkillableError struct {
	Cause error // the context's error
	PID   int
	Where string
}

func (e *UnkillableError) Error() string {
	return fmt.Sprintf("%v, and pid %d could not be killed: it is blocked in the kernel (state D, in %s); it ends when the kernel lets go of it, or with a reboot", e.Cause, e.PID, e.Where)
}

func (e *UnkillableError) Unwrap() error { return e.Cause }

// watch waits for done while sampling the command's task for a long
// kernel block, and stores Wait's error in *err. It gives up waiting, and
// returns why, for a task in a known deadlock (*KernelHangError) or one
// still in state D a while after ctx ended (*UnkillableError).
func (x Exec) watch(ctx context.Context, pid int, argv []string, done <-chan error, err *error) error {
	w := &blockWatch{proc: x.ProcRoot, pid: pid, after: x.BlockedAfter}
	if w.proc == "" {
		w.proc = "/proc"
	}
	if w.after <= 0 {
		w.after = DefaultBlockedAfter
	}
	// how long a killed command may take to exit before Run looks
	// whether the kernel holds it
	grace := min(w.after, time.Minute)
	every := min(w.after/8, 15*time.Second)
	tick := time.NewTicker(max(every, 10*time.Millisecond))
	defer tick.Stop()
	var killed <-chan time.Time
	ctxDone := ctx.Done()
	for {
		select {
		case *err = <-done:
			return nil
		case <-ctxDone:
			ctxDone, killed = nil, time.After(grace)
		case <-killed:
			if st, e := readProcState(w.proc, pid); e == nil && st.State == 'D' {
				return &UnkillableError{Cause: ctx.Err(), PID: pid, Where: st.withKernelSide(w.proc, pid).where()}
			}
			killed = time.After(grace)
		case now := <-tick.C:
			warning, hang := w.look(now)
			if hang != nil {
				return hang
			}
			if warning != "" {
				fmt.Fprintf(x.Blocked, "tbhost: %s (pid %d) %s\n", Quote(argv), pid, warning)
			}
		}
	}
}

// Quote renders argv for humans and logs; it is never fed to a shell.
func Quote(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}();&|<>!#~") {
			parts[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		} else {
			parts[i] = a
		}
	}
	return strings.Join(parts, " ")
}
