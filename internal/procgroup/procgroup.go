// Package procgroup watches a process group from /proc: which of its
// members still run, and a wait until none does. tbhost starts rsync and
// playbook steps in their own process group; when the leader has exited,
// a member it forked may still be exiting with files open (under the
// destination tbhost is about to report on, or unmount), so "the command
// ended" means "no live process of its group is left".
package procgroup

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Live lists the processes of process group pgid that have not exited. A
// zombie is not live: it holds no files and waits only for its reaper
// (which, for an orphan, is not tbhost).
func Live(pgid int) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited since the listing
		}
		if state, pgrp, ok := parseStat(stat); ok && pgrp == pgid && state != "Z" && state != "X" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// parseStat reads the state and the process group from a /proc/PID/stat
// line: "pid (comm) state ppid pgrp ...", where comm may hold spaces and
// parentheses (so the fields start after the last ')').
func parseStat(stat []byte) (state string, pgrp int, ok bool) {
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 3 {
		return "", 0, false
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil {
		return "", 0, false
	}
	return f[0], pgrp, true
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
