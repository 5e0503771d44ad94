//go:build lab

package lab

import (
	"os"
	"testing"
)

// TestMain: no qemu outlives the lab tests (see GuardedTestRun);
// TBHOST_LAB_HELPER keeps the work dirs for a look afterwards.
func TestMain(m *testing.M) {
	os.Exit(GuardedTestRun("labtest", os.Getenv("TBHOST_LAB_HELPER") != "", m.Run))
}
