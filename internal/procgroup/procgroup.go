// Package procgroup watches a process group from /proc: which of its
// members still run, and a wait until none does. tbhost starts rsync and
// playbook steps in their own process group; when the leader has exited,
// a member it forked may still be exiting with files open (under the
// destination tbhost is about to report on, or unmount), so "the command
// ended" means "no live process of its group is left".
package procgroup

import (
	"errors"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// Live lists the processes of process group pgid that have not exited. A
// zombie is not live: it holds no files and waits only for its reaper
// (which, for an orphan, is not tbhost).
func Live(pgid int) []int {
	if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return nil // no member at all, not even a zombie: no /proc walk
	}
	procs, _ := procfs.AllProcs()
	var pids []int
	for _, p := range procs {
		st, err := p.Stat() // comm may hold spaces and parentheses: procfs reads past the last ')'
		if err != nil {
			continue // exited since the listing
		}
		if st.PGRP == pgid && st.State != "Z" && st.State != "X" {
			pids = append(pids, p.PID)
		}
	}
	return pids
}

// WaitGone waits until no live process of group pgid is left. What still
// runs after grace is sent SIGKILL and waited for as long again; it
// reports whether the group is gone (false: a member outlived even
// SIGKILL's grace, e.g. stuck in uninterruptible I/O on a dead disk).
func WaitGone(pgid int, grace time.Duration) bool {
	deadline := time.Now().Add(grace)
	killed := false
	for len(Live(pgid)) > 0 {
		if time.Now().After(deadline) {
			if killed {
				return false
			}
			syscall.Kill(-pgid, syscall.SIGKILL)
			killed, deadline = true, time.Now().Add(grace)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
