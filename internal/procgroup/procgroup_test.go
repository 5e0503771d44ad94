package procgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// start runs sh -c script as the leader of a new process group, reaped in
// the background so that it never lingers as tbhost's own zombie.
func start(t *testing.T, script string, args ...string) int {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", script}, args...)...)
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
	pgid := start(t, "sleep 60 & exit 0")
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

// A member whose command name holds spaces and parentheses, and what a
// naive split would read as a zombie's state and another group ("x) Z 1
// 1"), is found live in its own group.
func TestLiveFindsAMemberWhoseNameLooksLikeStatFields(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("SKIP: no sleep binary")
	}
	odd := filepath.Join(t.TempDir(), "x) Z 1 1")
	if err := os.Symlink(sleep, odd); err != nil {
		t.Fatal(err)
	}
	pgid := start(t, `"$0" 5 & exit 0`, odd)
	time.Sleep(100 * time.Millisecond)
	live := Live(pgid)
	if len(live) != 1 {
		t.Fatalf("group %d with a member named %q: live %v, want that member", pgid, filepath.Base(odd), live)
	}
	if comm, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(live[0]), "comm")); !strings.HasPrefix(string(comm), "x) Z") {
		t.Fatalf("member %d is %q, not the oddly named one", live[0], comm)
	}
}
