package smallfs

import (
	"errors"
	"os"
	"path/filepath"
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
