package execx

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultBlockedAfter is how long a command may sit in uninterruptible
// sleep (state D) before Exec says so: the kernel's own hung-task report
// comes after 120 s.
const DefaultBlockedAfter = 2 * time.Minute

// KernelHangError is returned when a command is stuck in a kernel path
// known to deadlock for good (KnownKernelHang): it will never return and
// cannot be killed, so Run stops waiting for it.
type KernelHangError struct {
	PID   int
	For   time.Duration
	Stack []string // function names, innermost first
	Why   string   // KnownKernelHang's explanation
}

func (e *KernelHangError) Error() string {
	return fmt.Sprintf("pid %d has been blocked in the kernel for %v (%s): %s. It will not return and cannot be killed: reboot, then run the same tbhost command again (docs/lvm.md, \"An lvcreate --raidintegrity that hangs\")",
		e.PID, roundForHumans(e.For), strings.Join(shortStack(e.Stack), " <- "), e.Why)
}

// KnownKernelHang says which deadlock a blocked task's kernel stack
// (function names, innermost first, as /proc/PID/stack lists them) is, or
// returns "" for any other. Both were seen in the VM lab on Debian's 6.1
// kernel (docs/lab.md): a dm-raid raid456 table torn down, or suspended,
// while its sync thread runs, the sync thread waiting in
// raid5_get_active_stripe.
func KnownKernelHang(stack []string) string {
	has := func(fn string) bool {
		for _, s := range stack {
			if s == fn {
				return true
			}
		}
		return false
	}
	switch {
	case has("raid_dtr") && has("md_stop"):
		return "the dm-raid deadlock of Linux 6.1: a RAID table torn down while its sync thread runs (lvm2's lvcreate --raidintegrity deactivates the new raid5 during its initial resync)"
	case has("raid_postsuspend") && has("raid5_quiesce"):
		return "the dm-raid deadlock of Linux 6.1: a raid5 table suspended (a reload) while its sync thread runs"
	}
	return ""
}

// procState is one look at a task in /proc: its state letter and its
// context switches (a task that switches is making progress, however slowly:
// the kernel's hung-task check uses the same count), and, once asked for
// (withKernelSide), its kernel stack (root only) and wchan.
type procState struct {
	State    byte
	Switches int64 // voluntary + involuntary; -1 when /status is unreadable
	Stack    []string
	Wchan    string
}

// readProcState reads <proc>/<pid>/stat (the state after the command name,
// which may hold spaces and parentheses) and /status's switch counts.
func readProcState(proc string, pid int) (procState, error) {
	dir := filepath.Join(proc, strconv.Itoa(pid))
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return procState{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procState{}, fmt.Errorf("%s/stat: no state field in %q", dir, b)
	}
	st := procState{State: b[i+2], Switches: -1}
	if status, err := os.ReadFile(filepath.Join(dir, "status")); err == nil {
		st.Switches = contextSwitches(string(status))
	}
	return st, nil
}

// contextSwitches sums /proc/PID/status's voluntary_ctxt_switches and
// nonvoluntary_ctxt_switches, or returns -1 when either is missing.
func contextSwitches(status string) int64 {
	var sum int64
	found := 0
	for _, line := range strings.Split(status, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "voluntary_ctxt_switches" && k != "nonvoluntary_ctxt_switches") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return -1
		}
		sum += n
		found++
	}
	if found != 2 {
		return -1
	}
	return sum
}

// withKernelSide adds the task's kernel stack and wchan (read only for a
// task about to be reported: two more files per look).
func (st procState) withKernelSide(proc string, pid int) procState {
	dir := filepath.Join(proc, strconv.Itoa(pid))
	if s, err := os.ReadFile(filepath.Join(dir, "stack")); err == nil {
		st.Stack = parseKernelStack(string(s))
	}
	if w, err := os.ReadFile(filepath.Join(dir, "wchan")); err == nil && string(w) != "0" {
		st.Wchan = strings.TrimSpace(string(w))
	}
	return st
}

// where says in which kernel functions the task waits: its short stack,
// else its wchan.
func (st procState) where() string {
	if s := shortStack(st.Stack); len(s) > 0 {
		return strings.Join(s, " <- ")
	}
	if st.Wchan != "" {
		return st.Wchan
	}
	return "stack unreadable"
}

// parseKernelStack turns /proc/PID/stack ("[<0>] kthread_stop+0x66/0x170")
// into function names, innermost first.
func parseKernelStack(s string) []string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(f[1], "+")
		out = append(out, name)
	}
	return out
}

// shortStack drops the scheduler's frames and the system call entry: what
// is left says where the task waits.
func shortStack(stack []string) []string {
	var out []string
	for _, s := range stack {
		switch {
		case s == "__schedule", s == "schedule", s == "schedule_timeout", s == "io_schedule",
			strings.HasPrefix(s, "__wait_for_common"), strings.HasPrefix(s, "entry_SYSCALL"),
			strings.HasPrefix(s, "do_syscall"), strings.HasPrefix(s, "__x64_sys"):
			continue
		}
		out = append(out, s)
		if len(out) == 8 {
			break
		}
	}
	return out
}

// blockWatch follows one running command's task: how long it has been in
// state D without a context switch, what to say once it passes the
// threshold, and whether the wait is a known deadlock.
type blockWatch struct {
	proc     string
	pid      int
	after    time.Duration
	since    time.Time // zero while not blocked
	switches int64     // the count when since was set
	told     bool
}

// look takes one sample at now. It returns a warning to print (once per
// blocked stretch) for a long D state, or a *KernelHangError when the stack
// is a known deadlock. A task in state D whose switch count moved between
// samples is doing slow I/O, not stuck: its stretch starts again.
func (w *blockWatch) look(now time.Time) (warning string, hang *KernelHangError) {
	st, err := readProcState(w.proc, w.pid)
	if err != nil || st.State != 'D' || (!w.since.IsZero() && st.Switches != w.switches) {
		w.since, w.told = time.Time{}, false
		if err != nil || st.State != 'D' {
			return "", nil
		}
	}
	if w.since.IsZero() {
		w.since, w.switches = now, st.Switches
	}
	d := now.Sub(w.since)
	if d < w.after {
		return "", nil
	}
	st = st.withKernelSide(w.proc, w.pid)
	if why := KnownKernelHang(st.Stack); why != "" {
		return "", &KernelHangError{PID: w.pid, For: d, Stack: st.Stack, Why: why}
	}
	if w.told {
		return "", nil
	}
	w.told = true
	return fmt.Sprintf("has been blocked in the kernel (state D) for %v, in %s; still waiting for it (a slow or failing disk? dmesg says what the kernel sees)", roundForHumans(d), st.where()), nil
}

// roundForHumans keeps a duration's tenths below 10 s, whole seconds above.
func roundForHumans(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}
