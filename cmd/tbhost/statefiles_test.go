package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/realdata"
	"github.com/tbhost/tbhost/internal/sysread"
	"github.com/tbhost/tbhost/prefix"
)

// The files tbhost writes and reads back (a playbook's state, tables sync's
// state, the prefix store's manifest) are outside input too: a FIFO in
// their place made the command hang in read (os.ReadFile blocks until a
// writer comes), and one of many GiB was read whole into memory. Each is
// now refused, naming the file and saying to move it away, in seconds.
func TestStateFilesThatAreNoRegularFileOrTooLargeAreRefused(t *testing.T) {
	for _, kind := range []string{"fifo", "too large"} {
		plant := func(t *testing.T, path string) {
			t.Helper()
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if kind == "fifo" {
				if err := syscall.Mkfifo(path, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			f, err := os.Create(path) // sparse: costs nothing on disk
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(sysread.StateLimit + 1); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		// a playbook's state
		stateDir := t.TempDir()
		pb := filepath.Join(t.TempDir(), "one.yaml")
		if err := os.WriteFile(pb, []byte("name: one\nsteps:\n  - name: one\n    shell: [\"true\"]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		pbState := filepath.Join(stateDir, "one", "state.json")
		plant(t, pbState)
		// tables sync's state
		to := t.TempDir()
		syncState := filepath.Join(to, ".tbhost-sync", "state.json")
		plant(t, syncState)
		// the prefix store's manifest
		store := t.TempDir()
		manifest := filepath.Join(store, prefix.ManifestName)
		plant(t, manifest)

		for _, c := range []struct {
			file string
			args []string
		}{
			{pbState, []string{"playbook", "run", "--state-dir", stateDir, pb}},
			{syncState, []string{"tables", "sync", "--from", realdata.Tables(t), "--to", to, "--set", "3"}},
			{manifest, []string{"prefix", "verify", "--tables", realdata.Tables(t), "--store", store}},
		} {
			start := time.Now()
			done := make(chan struct{})
			var code int
			var out, stderr string
			go func() { defer close(done); code, out, stderr = runTB(t, nil, c.args...) }()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Fatalf("%s as %s: tbhost %s still running after 60 s (blocked reading it?)", c.file, kind, strings.Join(c.args, " "))
			}
			if code == 0 || !strings.Contains(stderr, c.file) || !strings.Contains(stderr, "move it away") {
				t.Errorf("%s as %s: tbhost %s: exit %d in %v, want a refusal naming the file and saying to move it away\n%s%s",
					c.file, kind, strings.Join(c.args[:2], " "), code, time.Since(start).Round(time.Millisecond), out, stderr)
			}
		}
	}
}
