package monitor

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/filelock"
	"github.com/tbhost/tbhost/internal/stracetest"
)

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// A check killed between its temporary's create and its rename (kill -9)
// left the temporary beside the textfile, which nothing removed: the next
// check removes it, and the NAME<digits> ones of earlier versions, once it
// holds the textfile's lock. Other files stay.
func TestTextfileRemovesTheTemporariesOfAKilledCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tbhost.prom")
	killed := []string{".tbhost.prom.tmp2243892192", "tbhost.prom3551216404"}
	others := []string{"tbhost.prom", "other.prom", ".other.prom.tmp1", "tbhost.prom.bak", "tbhost.prom12x", ".tbhost.prom.tmp"}
	for _, n := range append(slices.Clone(killed), others...) {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("# old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var r Report
	if err := r.WriteTextfile(context.Background(), path, 1); err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(others), "tbhost.prom.lock")
	slices.Sort(want)
	if got := dirNames(t, dir); !slices.Equal(got, want) {
		t.Errorf("after the check the directory holds %v, want %v", got, want)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "tbhost_monitor_check_status 0") {
		t.Errorf("textfile not rewritten:\n%s", b)
	}
}

// A check writing the textfile holds its lock: another check neither
// removes its temporary nor writes beside it; it waits, and gives up with
// an error naming the lock when its context ends first. Once the writer is
// done (renamed, unlocked), the waiting check writes.
func TestTextfileKeepsTheTemporaryOfARunningCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tbhost.prom")
	if err := os.WriteFile(path, []byte("# old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	held, err := filelock.Exclusive(path+".lock", 0o644) // another open file: another check
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()
	temp := filepath.Join(dir, ".tbhost.prom.tmp2243892192") // the running check's
	if err := os.WriteFile(temp, []byte("# new from the running check\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var r Report
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = r.WriteTextfile(ctx, path, 1)
	if err == nil || !strings.Contains(err.Error(), "write textfile "+path+": another tbhost monitor check is writing it and holds "+path+".lock") {
		t.Errorf("beside a running check: %v, want an error naming the lock", err)
	}
	if _, err := os.Stat(temp); err != nil {
		t.Fatalf("the running check's temporary was removed: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "# old\n" {
		t.Errorf("the waiting check wrote the textfile:\n%s", b)
	}

	done := make(chan error, 1)
	go func() { done <- r.WriteTextfile(context.Background(), path, 1) }()
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(temp); err != nil {
		t.Fatalf("the running check's temporary was removed while it held the lock: %v", err)
	}
	if err := os.Rename(temp, path); err != nil { // the running check ends
		t.Fatal(err)
	}
	held.Unlock()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after the running check ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting 10 s after the running check ended")
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "tbhost_monitor_check_status 0") {
		t.Errorf("textfile not written after the wait:\n%s", b)
	}
	if got, want := dirNames(t, dir), []string{"tbhost.prom", "tbhost.prom.lock"}; !slices.Equal(got, want) {
		t.Errorf("directory holds %v, want %v", got, want)
	}
}

const textfileHelperEnv = "TBHOST_MONITOR_TEXTFILE_HELPER"

// TestHelperWriteTextfile is not a test: run by
// TestTextfileIsSyncedBeforeItsRename under strace, it writes the textfile
// named in its environment.
func TestHelperWriteTextfile(t *testing.T) {
	path := os.Getenv(textfileHelperEnv)
	if path == "" {
		t.Skip("helper process for TestTextfileIsSyncedBeforeItsRename")
	}
	var r Report
	if err := r.WriteTextfile(context.Background(), path, 1); err != nil {
		t.Fatal(err)
	}
}

// The textfile's data is fsynced before the rename and its directory after
// it: without the first, XFS or ext4 without auto_da_alloc may keep the
// rename of an empty file across a power loss; without the second, the
// rename itself may be lost. Watched with strace (skips without it).
func TestTextfileIsSyncedBeforeItsRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tbhost.prom")
	trace := stracetest.Trace(t, stracetest.WriteCalls, "TestHelperWriteTextfile", textfileHelperEnv+"="+path)
	steps := stracetest.WriteSteps(trace, path, `\.tbhost\.prom\.tmp\d+`)
	if want := []string{"create", "fsync file", "rename", "fsync directory"}; !slices.Equal(steps, want) {
		t.Errorf("textfile written with %v, want %v:\n%s", steps, want, trace)
	}
}
