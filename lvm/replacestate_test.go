package lvm

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A replace killed between a checkpoint's create and its rename left its
// temporary beside its state: the next replace of that array removes it
// once it holds the lock; another array's temporaries (and the shared
// .replace-*.json names of earlier versions) stay. A checkpoint leaves no
// temporary.
func TestTheReplaceLockRemovesTheTemporaryStateOfAKilledRun(t *testing.T) {
	dir := t.TempDir()
	state := ReplaceStatePath(dir, "vg-hdd", "tables")
	mine := "." + filepath.Base(state) + ".tmp2243892192"
	keep := []string{".replace-vg-hdd-other.json.tmp1", ".replace-123.json", "replace-vg-hdd-other.json"}
	for _, n := range append([]string{mine}, keep...) {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	unlock, err := lockReplace(dir, "vg-hdd", "tables")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if err := saveReplaceState(state, &ReplaceState{Version: ReplaceStateVersion, Status: "running"}); err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(keep), filepath.Base(state), filepath.Base(state)+".lock")
	slices.Sort(want)
	var got []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, want) {
		t.Errorf("state directory holds %v, want %v", got, want)
	}
	if fi, err := os.Stat(state); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("state %v %v, want mode 0600", fi, err)
	}
}
