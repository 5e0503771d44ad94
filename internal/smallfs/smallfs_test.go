package smallfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The mount really fills up (ENOSPC past its size) and Resize really
// gives it room.
func TestMountFillsUpAndResizeGivesRoom(t *testing.T) {
	dir := Mount(t, "64k", "a full disk")
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, make([]byte, 256<<10), 0o644); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("256 KiB into a 64 KiB tmpfs: %v, want ENOSPC", err)
	}
	Resize(t, dir, "1m")
	if err := os.WriteFile(p, make([]byte, 256<<10), 0o644); err != nil {
		t.Fatalf("256 KiB after the resize to 1 MiB: %v", err)
	}
}

// holders names what keeps the tmpfs busy: here this test's own open file.
func TestHoldersNamesAProcessWithAFileOpenUnderTheMount(t *testing.T) {
	dir := Mount(t, "64k", "a busy mount")
	me := fmt.Sprint(os.Getpid()) + " "
	for _, h := range holders(dir) {
		if strings.HasPrefix(h, me) {
			t.Fatalf("holders of %s before any file is open: %v", dir, holders(dir))
		}
	}
	f, err := os.Create(filepath.Join(dir, "held"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	found := false
	for _, h := range holders(dir) {
		found = found || strings.HasPrefix(h, me)
	}
	if !found {
		t.Errorf("holders of %s with %s open in pid %d: %v", dir, f.Name(), os.Getpid(), holders(dir))
	}
}
