package playbooks

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tbhost/tbhost/internal/stracetest"
)

const saveHelperEnv = "TBHOST_PLAYBOOKS_SAVE_HELPER"

// TestHelperSave is not a test: run by TestSaveIsSyncedBeforeItsRename
// under strace, it saves a state into the store named in its environment.
func TestHelperSave(t *testing.T) {
	dir := os.Getenv(saveHelperEnv)
	if dir == "" {
		t.Skip("helper process for TestSaveIsSyncedBeforeItsRename")
	}
	if err := (Store{Dir: dir}).Save(&State{Playbook: "p", Status: "running"}); err != nil {
		t.Fatal(err)
	}
}

// A checkpoint is fsynced before its rename and the store's directory
// after it: without the directory's fsync a power loss could undo the
// rename, and a --resume would redo finished steps. Watched with strace
// (skips without it).
func TestSaveIsSyncedBeforeItsRename(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	trace := stracetest.Trace(t, stracetest.WriteCalls, "TestHelperSave", saveHelperEnv+"="+s.Dir)
	steps := stracetest.WriteSteps(trace, s.StatePath(), `\.state-\d+\.json`)
	if want := []string{"create", "fsync file", "rename", "fsync directory"}; !slices.Equal(steps, want) {
		t.Errorf("state saved with %v, want %v:\n%s", steps, want, trace)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "state.json")); err != nil {
		t.Error(err)
	}
}
