package integrity

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A --state path that is a FIFO (or a device) is refused at once, naming
// the file, instead of blocking the scrub before its first read.
func TestStateFIFORefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "scrub.state")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		var st map[string]any
		_, err := readJSON(p, &st)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "--state") {
			t.Fatalf("%v, want an error naming %s and --state", err, p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading a FIFO state file blocked")
	}
}
