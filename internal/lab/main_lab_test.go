//go:build lab

package lab

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestMain puts every lab test's work dirs under one directory and, after
// the tests, fails the run if any qemu started from there is still alive
// (and kills it): no qemu outlives a test run.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tbhost-labtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	os.Setenv("TMPDIR", dir)
	code := m.Run()
	deadline := time.Now().Add(10 * time.Second)
	pids := LiveQemus(dir)
	for len(pids) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		pids = LiveQemus(dir)
	}
	if len(pids) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: qemu processes outlived the lab tests: %v (killing them)\n", pids)
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		code = 1
	}
	if os.Getenv("TBHOST_LAB_HELPER") == "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}
