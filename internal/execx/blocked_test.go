package execx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func readStack(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The stacks: testdata/README.md says where each was seen.
func TestKnownKernelHang(t *testing.T) {
	for _, c := range []struct {
		file, want string
	}{
		{"stack-lvcreate-raid-dtr.txt", "torn down while its sync thread runs"},
		{"stack-lvchange-raid5-quiesce.txt", "suspended (a reload) while its sync thread runs"},
		{"stack-dd-suspended-dm.txt", ""},
	} {
		stack := parseKernelStack(readStack(t, c.file))
		if len(stack) < 5 {
			t.Fatalf("%s: parsed %v", c.file, stack)
		}
		got := KnownKernelHang(stack)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.file, got, c.want)
		}
	}
	stack := parseKernelStack(readStack(t, "stack-lvcreate-raid-dtr.txt"))
	if got := strings.Join(shortStack(stack), " <- "); !strings.HasPrefix(got, "kthread_stop <- md_unregister_thread <- __md_stop_writes <- md_stop <- raid_dtr") {
		t.Errorf("short stack %q", got)
	}
}

// fakeProc is a /proc for one real child: the child writes its pid, the
// test then writes the task's stat and stack as it wants the watch to see
// them.
type fakeProc struct {
	root, pidFile string
}

func newFakeProc(t *testing.T) *fakeProc {
	d := t.TempDir()
	return &fakeProc{root: filepath.Join(d, "proc"), pidFile: filepath.Join(d, "pid")}
}

// child is a command that writes its pid and then sleeps s seconds
// (exec keeps the pid).
func (f *fakeProc) child(s int) []string {
	return []string{"sh", "-c", "echo $$ > " + f.pidFile + "; exec sleep " + strconv.Itoa(s)}
}

func (f *fakeProc) pid(t *testing.T) int {
	t.Helper()
	for i := 0; i < 500; i++ {
		if b, err := os.ReadFile(f.pidFile); err == nil && len(b) > 1 {
			if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				t.Cleanup(func() { syscall.Kill(p, syscall.SIGKILL) })
				return p
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the child never wrote its pid")
	return 0
}

func (f *fakeProc) set(t *testing.T, pid int, state byte, stack string) {
	t.Helper()
	dir := filepath.Join(f.root, strconv.Itoa(pid))
	os.MkdirAll(dir, 0o755)
	// a command name with a space and a parenthesis: the state is after the last ')'
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(strconv.Itoa(pid)+" (lvm (x)) "+string(state)+" 1 1 1 0 -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stack"), []byte(stack), 0o644); err != nil {
		t.Fatal(err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A child in the raid_dtr deadlock: Run stops waiting once it has been
// blocked BlockedAfter, long before the child would end.
func TestRunGivesUpOnAKnownKernelDeadlock(t *testing.T) {
	f := newFakeProc(t)
	var warn syncBuffer
	x := Exec{Blocked: &warn, BlockedAfter: 300 * time.Millisecond, ProcRoot: f.root}
	type result struct {
		err error
		d   time.Duration
	}
	ch := make(chan result, 1)
	start := time.Now()
	go func() {
		_, err := x.Run(context.Background(), f.child(60)...)
		ch <- result{err, time.Since(start)}
	}()
	f.set(t, f.pid(t), 'D', readStack(t, "stack-lvcreate-raid-dtr.txt"))
	var r result
	select {
	case r = <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal("Run still waits for a child in a known deadlock after 30 s")
	}
	var hang *KernelHangError
	if !errors.As(r.err, &hang) {
		t.Fatalf("want a KernelHangError, got %v", r.err)
	}
	if hang.For < 300*time.Millisecond {
		t.Errorf("gave up after %v blocked, before BlockedAfter", hang.For)
	}
	msg := r.err.Error()
	for _, want := range []string{"sh -c", "blocked in the kernel for", "raid_dtr", "reboot, then run the same tbhost command again"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error lacks %q: %s", want, msg)
		}
	}
	if w := warn.String(); w != "" {
		t.Errorf("a known deadlock is the error, not a warning: %q", w)
	}
}

// A long D state elsewhere (writes to a suspended device): one warning
// naming where, and Run goes on waiting; the command's own end is its
// result.
func TestRunWarnsOnceAboutALongKernelBlockAndWaits(t *testing.T) {
	f := newFakeProc(t)
	var warn syncBuffer
	x := Exec{Blocked: &warn, BlockedAfter: 200 * time.Millisecond, ProcRoot: f.root}
	ch := make(chan error, 1)
	go func() {
		_, err := x.Run(context.Background(), f.child(2)...)
		ch <- err
	}()
	pid := f.pid(t)
	f.set(t, pid, 'D', readStack(t, "stack-dd-suspended-dm.txt"))
	if err := <-ch; err != nil {
		t.Fatalf("the child ended normally, Run returned %v", err)
	}
	w := warn.String()
	if strings.Count(w, "\n") != 1 || !strings.Contains(w, "(pid "+strconv.Itoa(pid)+") has been blocked in the kernel (state D)") ||
		!strings.Contains(w, "still waiting") || strings.Contains(w, "__schedule") {
		t.Errorf("want one warning naming the pid and where it waits, got %q", w)
	}
	t.Logf("warning: %s", w)
}

// A task in state D whose context switches keep counting is doing slow
// I/O (an lvcreate zeroing a 5.5 GiB metadata LV on an HDD is in state D
// at almost every look): no warning, however long. The fake task's count
// moves every 5 ms; the threshold is 400 ms, the task lives 2 s: a watch
// that ignored the count would warn within the run. The writer itself can
// stall on a loaded machine (it did for 100 ms and then for 400 ms in
// clean-clone runs of the whole suite, faking a stuck task): a run in
// which it paused for half the threshold or more proves nothing either
// way and is run again, up to five times; a warning after a run without
// such a pause fails at once.
func TestRunWatchIsQuietForSlowIOThatSwitches(t *testing.T) {
	const after = 400 * time.Millisecond
	for attempt := 1; ; attempt++ {
		w, pause := switchingTaskWarning(t, after)
		switch {
		case w == "":
			return
		case pause < after/2:
			t.Fatalf("warned about a task that kept switching (the count never stood still for more than %v): %q", pause, w)
		case attempt == 5:
			t.Fatalf("warned in every one of %d runs, each with the writer paused for half the threshold or more (last %v): %q", attempt, pause, w)
		}
		t.Logf("run %d: the writer paused for %v (threshold %v), a warning proves nothing: again (%q)", attempt, pause, after, w)
	}
}

// switchingTaskWarning runs one fake task in state D whose context switch
// count moves every 5 ms, and returns the watch's warnings and the longest
// time the count stood still (the writer's longest pause, from the task's
// start to its end).
func switchingTaskWarning(t *testing.T, after time.Duration) (string, time.Duration) {
	f := newFakeProc(t)
	var warn syncBuffer
	x := Exec{Blocked: &warn, BlockedAfter: after, ProcRoot: f.root}
	ch := make(chan error, 1)
	go func() {
		_, err := x.Run(context.Background(), f.child(2)...)
		ch <- err
	}()
	pid := f.pid(t)
	f.set(t, pid, 'D', readStack(t, "stack-dd-suspended-dm.txt"))
	status := filepath.Join(f.root, strconv.Itoa(pid), "status")
	last, pause := time.Now(), time.Duration(0)
	for n := 0; ; n++ {
		select {
		case err := <-ch:
			if err != nil {
				t.Fatalf("the child ended normally, Run returned %v", err)
			}
			return warn.String(), max(pause, time.Since(last))
		case <-time.After(5 * time.Millisecond):
			os.WriteFile(status, []byte(fmt.Sprintf("Name:\tlvm\nvoluntary_ctxt_switches:\t%d\nnonvoluntary_ctxt_switches:\t3\n", n)), 0o644)
			now := time.Now()
			pause, last = max(pause, now.Sub(last)), now
		}
	}
}

func TestContextSwitches(t *testing.T) {
	for in, want := range map[string]int64{
		"Name:\tlvm\nState:\tD (disk sleep)\nvoluntary_ctxt_switches:\t120\nnonvoluntary_ctxt_switches:\t7\n": 127,
		"voluntary_ctxt_switches:\t120\n":                               -1, // one of the two
		"voluntary_ctxt_switches:\tx\nnonvoluntary_ctxt_switches:\t7\n": -1,
		"": -1,
	} {
		if got := contextSwitches(in); got != want {
			t.Errorf("%q: %d, want %d", in, got, want)
		}
	}
}

// A task not in state D, or no watch at all: nothing said, the result is
// the command's.
func TestRunWatchIsQuietForARunningChild(t *testing.T) {
	f := newFakeProc(t)
	var warn syncBuffer
	x := Exec{Blocked: &warn, BlockedAfter: 100 * time.Millisecond, ProcRoot: f.root}
	ch := make(chan error, 1)
	go func() {
		_, err := x.Run(context.Background(), "sh", "-c", "echo $$ > "+f.pidFile+"; sleep 1; exit 3")
		ch <- err
	}()
	f.set(t, f.pid(t), 'S', readStack(t, "stack-lvcreate-raid-dtr.txt"))
	if err := <-ch; ExitCode(err) != 3 {
		t.Errorf("want the child's own failure, got %v", err)
	}
	if w := warn.String(); w != "" {
		t.Errorf("warned about a sleeping (S) task: %q", w)
	}
}

// Killed by its deadline but held by the kernel: watch stops waiting a
// grace period after the deadline and says it could not be killed (the
// Wait that never returns is simulated: done never fires).
func TestWatchGivesUpOnAnUnkillableTask(t *testing.T) {
	f := newFakeProc(t)
	pid := 4242
	f.set(t, pid, 'D', readStack(t, "stack-dd-suspended-dm.txt"))
	// BlockedAfter under a minute is the grace period after the kill too
	x := Exec{Blocked: &syncBuffer{}, BlockedAfter: 200 * time.Millisecond, ProcRoot: f.root}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var waitErr error
	start := time.Now()
	gaveUp := x.watch(ctx, pid, []string{"mkfs.ext4", "/dev/vg-hdd/tables"}, make(chan error), &waitErr)
	var stuck *UnkillableError
	if !errors.As(gaveUp, &stuck) || !errors.Is(gaveUp, context.DeadlineExceeded) {
		t.Fatalf("want an UnkillableError wrapping the deadline, got %v", gaveUp)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("gave up after %v", d)
	}
	ce := &CommandError{Argv: []string{"mkfs.ext4", "/dev/vg-hdd/tables"}, ExitCode: -1, Err: gaveUp}
	if msg := ce.Error(); !strings.Contains(msg, "could not be killed") || !strings.Contains(msg, "pid 4242") || strings.HasSuffix(msg, ": timed out") {
		t.Errorf("message %q", msg)
	}
}
