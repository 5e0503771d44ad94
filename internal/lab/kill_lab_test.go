//go:build lab

package lab

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// sleeperConfig is the sleeping guest of the boot-end tests. The four of
// them (timeout, cancel, the test binary's death, a guest hang) call
// t.Parallel: after its boot each guest sleeps or hangs, its qemu nearly
// idle, and their bounds are tens of seconds wide, so they run together
// after the package's other tests (make lab-test gives -parallel 4): ~50 s
// instead of ~120 s one by one. The scenarios stay one at a time: they keep
// both processors busy (the slow-member boot at 99 % for minutes) and their
// assertions time the kernel's work.
func sleeperConfig(t *testing.T, timeout time.Duration) Config {
	return Config{Name: "sleeper", WorkDir: t.TempDir(), Script: []byte("echo sleeping; sleep 600\n"), Timeout: timeout, MemMiB: 256}
}

func TestTimeoutKillsQemu(t *testing.T) {
	t.Parallel() // beside the other boot-end tests: see sleeperConfig
	shared.prepare(t)
	cfg := sleeperConfig(t, 45*time.Second)
	l := &Lab{Base: shared.base}
	start := time.Now()
	res, err := l.Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("want a timeout error, got %v", err)
	}
	if d := time.Since(start); d > 70*time.Second {
		t.Errorf("Run returned after %v for a 45s timeout", d)
	}
	if pids := LiveQemus(cfg.WorkDir); len(pids) > 0 {
		t.Errorf("qemu %v alive after Run returned", pids)
	}
	if res == nil || res.ExitCode != -1 {
		t.Errorf("result %+v: a killed run has no exit code", res)
	}
}

func TestCancelKillsQemu(t *testing.T) {
	t.Parallel() // beside the other boot-end tests: see sleeperConfig
	shared.prepare(t)
	cfg := sleeperConfig(t, 10*time.Minute)
	l := &Lab{Base: shared.base}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// cancel once the guest is up (or after 2 minutes regardless)
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			if b, _ := os.ReadFile(cfg.WorkDir + "/serial-sleeper.log"); strings.Contains(string(b), "sleeping") {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		cancel()
	}()
	_, err := l.Run(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), "cancelled") {
		t.Fatalf("want a cancellation error, got %v", err)
	}
	if pids := LiveQemus(cfg.WorkDir); len(pids) > 0 {
		t.Errorf("qemu %v alive after Run returned", pids)
	}
}

// TestQemuDiesWithTimedOutTestBinary runs a lab boot in a child test
// binary that hits go test's -timeout (it panics and exits without running
// any cleanup): its qemu must die with it.
func TestQemuDiesWithTimedOutTestBinary(t *testing.T) {
	if os.Getenv("TBHOST_LAB_HELPER") != "" {
		t.Skip("in the helper")
	}
	t.Parallel()      // beside the other boot-end tests: see sleeperConfig
	shared.prepare(t) // build the cache before the child needs it
	dir := t.TempDir()
	baseFile := filepath.Join(dir, "base.json")
	if err := writeBase(baseFile, shared.base); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperLongBoot$", "-test.timeout=30s")
	cmd.Env = append(os.Environ(), "TBHOST_LAB_HELPER="+baseFile, "TMPDIR="+dir)
	var out bytes.Buffer // the child's own account, for a failure message
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	seen := false
	var exitErr error
wait:
	for {
		select {
		case exitErr = <-done:
			break wait
		case <-time.After(300 * time.Millisecond):
			if len(LiveQemus(dir)) > 0 {
				seen = true
			}
		}
	}
	if !seen {
		t.Fatalf("the helper never started qemu (exit: %v):\n%s", exitErr, out.Bytes())
	}
	time.Sleep(2 * time.Second)
	if pids := LiveQemus(dir); len(pids) > 0 {
		t.Errorf("qemu %v outlived its timed-out test binary", pids)
	}
}

func TestHelperLongBoot(t *testing.T) {
	if os.Getenv("TBHOST_LAB_HELPER") == "" {
		t.Skip("helper of TestQemuDiesWithTimedOutTestBinary")
	}
	base, err := readBase(os.Getenv("TBHOST_LAB_HELPER"))
	if err != nil {
		t.Fatal(err)
	}
	l := &Lab{Base: base}
	res, err := l.Run(context.Background(), sleeperConfig(t, 20*time.Minute))
	t.Errorf("the boot should have been cut by the test timeout; it ended: %+v, %v", res, err)
}

// TestGuestHangEndsTheBoot makes a real kernel hang in the guest (a write
// to a suspended device-mapper device waits for its writeback until the
// device resumes, which never comes; direct I/O would not do: its wait
// wakes up periodically, hiding it from the hung-task check) with the
// guest's hang watch lowered to 10 s: the boot must end early with a
// HangError holding the blocked task's stack, not wait out its timeout.
func TestGuestHangEndsTheBoot(t *testing.T) {
	t.Parallel() // beside the other boot-end tests: see sleeperConfig
	shared.prepare(t)
	disks, _ := Disks(HDD, 1, 16, "512n")
	script := `echo 2 > /proc/sys/kernel/hung_task_timeout_secs
echo 10 > /run/lab-hang-secs
dmsetup create hangme --table "0 2048 linear /dev/sda 0" && dmsetup mknodes hangme || exit 3
dmsetup suspend hangme || exit 4
dd if=/dev/zero of=/dev/mapper/hangme bs=4096 count=1 conv=fsync &
echo writing to a suspended device
sleep 600
`
	cfg := Config{Name: "hang", WorkDir: t.TempDir(), Disks: disks, Script: []byte(script), Timeout: 5 * time.Minute, MemMiB: 256}
	l := &Lab{Base: shared.base}
	start := time.Now()
	res, err := l.Run(context.Background(), cfg)
	var hang *HangError
	if !errors.As(err, &hang) {
		log, _ := os.ReadFile(filepath.Join(cfg.WorkDir, "serial-hang.log"))
		t.Fatalf("want a HangError, got %v (result %+v); serial log:\n%s", err, res, log)
	}
	t.Logf("ended after %v: %v", time.Since(start).Round(time.Second), err)
	if d := time.Since(start); d > 3*time.Minute {
		t.Errorf("the boot ended after %v: the watch did not end it early", d)
	}
	// the command line of each blocked task (busybox's dd runs in a forked
	// sh: its command line is the scenario's)
	if m := regexp.MustCompile(`task dd:(\d+) blocked`).FindStringSubmatch(hang.Report); m == nil ||
		!strings.Contains(hang.Report, "blocked task "+m[1]+": sh /lab/scenario ; parent ") {
		t.Errorf("the hang report does not name the blocked task's command line:\n%s", hang.Report)
	}
	for _, want := range []string{"task dd:", "blocked for more than", "Call Trace"} {
		if !strings.Contains(hang.Report, want) {
			t.Errorf("the hang report lacks %q:\n%s", want, hang.Report)
		}
	}
	if pids := LiveQemus(cfg.WorkDir); len(pids) > 0 {
		t.Errorf("qemu %v alive after Run returned", pids)
	}
}
