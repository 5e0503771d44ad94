package procgroup

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// start runs sh -c script as the leader of a new process group, reaped in
// the background so that it never lingers as tbhost's own zombie.
func start(t *testing.T, script string) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	go cmd.Wait()
	return pgid
}

func TestWaitGoneWaitsForAMemberTheLeaderLeftBehind(t *testing.T) {
	// the leader exits at once; the child it forked runs on for 0.5 s
	pgid := start(t, "sleep 0.5 & exit 0")
	time.Sleep(100 * time.Millisecond)
	if len(Live(pgid)) != 1 {
		t.Fatalf("group %d after its leader exited: live %v, want only the sleep it forked", pgid, Live(pgid))
	}
	begin := time.Now()
	if !WaitGone(pgid, 5*time.Second) {
		t.Fatalf("group %d not gone: %v", pgid, Live(pgid))
	}
	if took := time.Since(begin); took < 250*time.Millisecond {
		t.Errorf("WaitGone returned after %v, while the forked sleep had ~0.4 s to run", took)
	}
	if live := Live(pgid); len(live) != 0 {
		t.Errorf("WaitGone returned with %v still live", live)
	}
}

func TestWaitGoneKillsWhatOutlivesTheGrace(t *testing.T) {
	pgid := start(t, "trap '' TERM; sleep 60 & exit 0")
	time.Sleep(100 * time.Millisecond)
	begin := time.Now()
	if !WaitGone(pgid, 200*time.Millisecond) {
		t.Fatalf("group %d not gone after SIGKILL: %v", pgid, Live(pgid))
	}
	if took := time.Since(begin); took > 3*time.Second {
		t.Errorf("WaitGone took %v with a 200ms grace: it did not kill the sleep", took)
	}
}

func TestAGroupWithNoMembersIsGoneAtOnce(t *testing.T) {
	pgid := start(t, "exit 0")
	time.Sleep(100 * time.Millisecond)
	if live := Live(pgid); len(live) != 0 {
		t.Fatalf("group %d of an exited shell: live %v", pgid, live)
	}
	if !WaitGone(pgid, time.Second) {
		t.Error("WaitGone of an empty group reported members left")
	}
}

func TestParseStatTakesFieldsAfterTheLastParen(t *testing.T) {
	for _, c := range []struct {
		line  string
		state string
		pgrp  int
		ok    bool
	}{
		{"123 (sleep) S 1 456 456 0 -1", "S", 456, true},
		{"123 (a) b (c)) Z 1 789 789 0", "Z", 789, true},
		{"123 (rsync", "", 0, false},
		{"123 (x) R 1", "", 0, false},
		{"123 (x) R 1 notanumber 5", "", 0, false},
	} {
		state, pgrp, ok := parseStat([]byte(c.line))
		if state != c.state || pgrp != c.pgrp || ok != c.ok {
			t.Errorf("parseStat(%q) = %q, %d, %v; want %q, %d, %v", c.line, state, pgrp, ok, c.state, c.pgrp, c.ok)
		}
	}
}
