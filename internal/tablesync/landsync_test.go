package tablesync_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/stracetest"
	"github.com/tbhost/tbhost/internal/tablesync"
	"github.com/tbhost/tbhost/internal/tablesync/rsyncd"
)

const landHelperEnv = "TBHOST_TABLESYNC_LAND_HELPER"

// TestHelperLand is not a test: run by TestLandedFilesAreOnDiskBeforeTheyAreInPlace
// under strace, it syncs the directory in its environment ("FROM:TO").
func TestHelperLand(t *testing.T) {
	dirs := os.Getenv(landHelperEnv)
	if dirs == "" {
		t.Skip("helper process for TestLandedFilesAreOnDiskBeforeTheyAreInPlace")
	}
	from, to, _ := strings.Cut(dirs, ":")
	set, _ := tablesync.ParseSet("3-7")
	rep, err := tablesync.Sync(context.Background(), tablesync.Options{From: from, To: to, Set: set})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Landed == 0 {
		t.Fatalf("nothing landed: %+v", rep)
	}
}

// A file rsync wrote into incoming/ is fsynced before it is renamed into
// the destination, and the destination's directory after: rsync does not
// fsync, and the state records a landed file as verified by its size and
// mtime, so a power loss between the rename and the data reaching the disk
// left an empty or zero-filled table that the next sync trusted. Watched
// with strace (skips without it): for every landed file, tbhost's own
// process opens it in incoming/, fsyncs that descriptor, renames it into
// place, then fsyncs the destination directory.
func TestLandedFilesAreOnDiskBeforeTheyAreInPlace(t *testing.T) {
	h := rsyncd.NewOldHost(t)
	to := t.TempDir()
	trace := stracetest.TraceWithPaths(t, "fsync,fdatasync,rename,renameat,renameat2", "TestHelperLand", landHelperEnv+"="+h.Dir+":"+to)
	incoming := filepath.Join(to, ".tbhost-sync", "incoming")
	// strace -f prints a call another thread interrupts in two lines:
	// "TID call(args <unfinished ...>" and "TID <... call resumed>) = N".
	var (
		unfinished = regexp.MustCompile(`^(\d+)\s+(.*) <unfinished \.\.\.>$`)
		resumed    = regexp.MustCompile(`^(\d+)\s+<\.\.\. \w+ resumed>(.*)$`)
		fsync      = regexp.MustCompile(`^\d+\s+f(?:data)?sync\(\d+<([^>]+)>\)\s+= 0`)
		rename     = regexp.MustCompile(`^\d+\s+rename(?:at2?)?\([^\n]*"` + regexp.QuoteMeta(incoming) + `/([^"]+)"[^\n]*"` + regexp.QuoteMeta(to) + `/([^"]+)"[^\n]*\)\s+= 0`)
	)
	pending := map[string]string{} // thread id -> the start of its unfinished call
	synced := map[string]bool{}    // paths fsynced (files in incoming/, directories)
	type landing struct{ rel, dir string }
	var landed []landing
	for _, l := range strings.Split(string(trace), "\n") {
		if m := unfinished.FindStringSubmatch(l); m != nil {
			pending[m[1]] = m[2]
			continue
		}
		if m := resumed.FindStringSubmatch(l); m != nil {
			l = m[1] + " " + pending[m[1]] + m[2]
			delete(pending, m[1])
		}
		switch {
		case fsync.MatchString(l):
			synced[fsync.FindStringSubmatch(l)[1]] = true
		case rename.MatchString(l):
			m := rename.FindStringSubmatch(l)
			if m[1] != m[2] {
				continue
			}
			if !synced[filepath.Join(incoming, m[1])] {
				t.Errorf("%s renamed into place before an fsync of it", m[1])
			}
			dir := filepath.Dir(filepath.Join(to, m[2]))
			landed = append(landed, landing{m[1], dir})
			synced[dir] = false // an fsync after this rename is wanted
		}
	}
	if len(landed) < 20 {
		t.Fatalf("%d files renamed from incoming/ into place in the trace, want the old host's tables (20 or more):\n%s", len(landed), trace)
	}
	for _, l := range landed {
		if !synced[l.dir] {
			t.Errorf("%s: its directory %s was not fsynced after the last rename into it", l.rel, l.dir)
		}
	}
	if t.Failed() {
		t.Logf("the trace:\n%s", trace)
	}
}
