package tablesync_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/filelock"
	"github.com/tbhost/tbhost/internal/tablesync"
	"github.com/tbhost/tbhost/internal/tablesync/rsyncd"
)

func sync(t *testing.T, h rsyncd.OldHost, to string) tablesync.Report {
	t.Helper()
	lists, err := tablesync.LoadLists(h.Lists)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := tablesync.ParseSet("3-7")
	rep, err := tablesync.Sync(context.Background(), tablesync.Options{From: h.URL, To: to, Set: set, Lists: lists})
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	return rep
}

// The acceptance of issue 17 item 1 on loopback: a file corrupted on the
// old side is refused and named (only the digest can tell: same size, same
// trailer); the missing-file report lists exactly the files removed on the
// old side; every verified file is byte-identical; a verified file is
// never replaced by a different one when the old side changes.
func TestSyncRefusesCorruptNamesMissingKeepsVerified(t *testing.T) {
	h := rsyncd.NewOldHost(t)
	// corrupt KBNvK.rtbw in the middle: size and embedded trailer unchanged
	p := h.Path("KBNvK.rtbw")
	b, _ := os.ReadFile(p)
	b[len(b)/2] ^= 0x40
	os.WriteFile(p, b, 0o644)
	removed := []string{"KQPvK.rtbw", "KRvKP.rtbz"}
	for _, n := range removed {
		if err := os.Remove(h.Path(n)); err != nil {
			t.Fatal(err)
		}
	}
	to := t.TempDir()
	rep := sync(t, h, to)
	if rep.Landed != 21 || rep.AlreadyVerified != 0 || rep.OnSource != 22 || rep.Selected != 24 {
		t.Errorf("landed %d, verified before %d, on source %d, selected %d; want 21, 0, 22, 24", rep.Landed, rep.AlreadyVerified, rep.OnSource, rep.Selected)
	}
	if len(rep.Refused) != 1 || rep.Refused[0].Name != "KBNvK.rtbw" || !strings.Contains(strings.Join(rep.Refused[0].Problems, ";"), "sha256 differs") {
		t.Errorf("refused %+v, want KBNvK.rtbw with a sha256 mismatch", rep.Refused)
	}
	sort.Strings(removed)
	if !reflect.DeepEqual(rep.Missing, removed) || rep.MissingCount != 2 {
		t.Errorf("missing %v, want exactly %v", rep.Missing, removed)
	}
	if !rep.ProblemsFound() || rep.Complete {
		t.Errorf("problems %v complete %v", rep.ProblemsFound(), rep.Complete)
	}
	if _, err := os.Stat(filepath.Join(to, "KBNvK.rtbw")); !os.IsNotExist(err) {
		t.Errorf("the refused file is in the destination: %v", err)
	}
	for _, n := range h.Names {
		if n == "KBNvK.rtbw" || n == removed[0] || n == removed[1] {
			continue
		}
		rel := strings.TrimPrefix(h.Path(n), h.Dir+"/")
		got, err := os.ReadFile(filepath.Join(to, rel))
		want, _ := os.ReadFile(h.Path(n))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: not copied byte for byte (%v)", rel, err)
		}
	}
	// the old side changes a file the new side has verified: never replaced
	kbvk := filepath.Join(to, "KBvK.rtbw")
	before, _ := os.ReadFile(kbvk)
	changed := append([]byte{}, before...)
	changed[len(changed)/2] ^= 1
	os.WriteFile(h.Path("KBvK.rtbw"), changed, 0o644)
	rep = sync(t, h, to)
	if rep.AlreadyVerified != 21 || rep.Landed != 0 || len(rep.Refused) != 1 {
		t.Errorf("rerun: verified before %d, landed %d, refused %d; want 21, 0, 1", rep.AlreadyVerified, rep.Landed, len(rep.Refused))
	}
	if after, _ := os.ReadFile(kbvk); !bytes.Equal(after, before) {
		t.Error("a verified file was replaced by the old side's changed copy")
	}
}

// Audit defect 2: a --to that does not exist was created, so an unmounted
// tables array meant copying the set onto the root file system. It is
// refused before anything is listed or written, naming the path and the
// fix; a regular file in its place is refused too.
func TestSyncRefusesAMissingDestination(t *testing.T) {
	set, _ := tablesync.ParseSet("3")
	missing := filepath.Join(t.TempDir(), "srv", "syzygy")
	_, err := tablesync.Sync(context.Background(), tablesync.Options{From: t.TempDir(), To: missing, Set: set})
	if err == nil || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "mount the tables file system there") {
		t.Errorf("sync into a missing %s: %v; want it refused, naming the path and the fix", missing, err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("the missing destination was created: %v", err)
	}
	file := filepath.Join(t.TempDir(), "syzygy")
	os.WriteFile(file, []byte("x"), 0o644)
	if _, err := tablesync.Sync(context.Background(), tablesync.Options{From: t.TempDir(), To: file, Set: set}); err == nil || !strings.Contains(err.Error(), "is a regular file, not a directory") {
		t.Errorf("sync into a regular file: %v", err)
	}
}

// Two syncs into one destination (a second started by hand beside a
// resumed one): the second is refused at once, naming the lock, and
// touches nothing; once the first ends the next one runs. A lock the
// sync cannot take for another reason is no "another sync is running".
func TestSyncRefusesWhileAnotherSyncsIntoTheDestination(t *testing.T) {
	set, _ := tablesync.ParseSet("3")
	to := t.TempDir()
	lockPath := filepath.Join(to, ".tbhost-sync", "lock")
	if err := os.MkdirAll(filepath.Dir(lockPath), 0o755); err != nil {
		t.Fatal(err)
	}
	held, err := filelock.Exclusive(lockPath, 0o644) // the first sync, at work
	if err != nil {
		t.Fatal(err)
	}
	_, err = tablesync.Sync(context.Background(), tablesync.Options{From: t.TempDir(), To: to, Set: set})
	if err == nil || !strings.Contains(err.Error(), "another tbhost tables sync is running into "+to) || !strings.Contains(err.Error(), lockPath) {
		t.Fatalf("a second sync into %s: %v; want it refused naming the lock", to, err)
	}
	if _, err := os.Stat(filepath.Join(to, ".tbhost-sync", "state.json")); !os.IsNotExist(err) {
		t.Errorf("the refused sync wrote its state: %v", err)
	}
	held.Unlock()
	_, err = tablesync.Sync(context.Background(), tablesync.Options{From: t.TempDir(), To: to, Set: set})
	if err != nil && strings.Contains(err.Error(), "another tbhost tables sync") {
		t.Fatalf("after the first sync ended: %v", err)
	}
	if err := os.Remove(lockPath); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(lockPath, 0o755); err != nil { // a directory where the lock file goes
		t.Fatal(err)
	}
	_, err = tablesync.Sync(context.Background(), tablesync.Options{From: t.TempDir(), To: to, Set: set})
	if err == nil || strings.Contains(err.Error(), "another tbhost tables sync") || !strings.Contains(err.Error(), lockPath) {
		t.Errorf("a lock that cannot be opened: %v; want its own error, naming it", err)
	}
}

// Audit defect 3: one dangling symlink on the source stopped the whole sync
// (exit 3, rsync's "exit status 23: symlink has no referent"). That table
// is refused and named (exit 1), a dangling link that is not a table is a
// warning, and the rest is copied; from a daemon and from a local
// directory given through a symlink (rsync names the links differently).
// Any other error of the listing still stops it, a dangling link or not.
func TestSyncDanglingSymlinkOnTheSource(t *testing.T) {
	h := rsyncd.NewOldHost(t)
	for _, n := range []string{"KBNvK.rtbw", "KQPvK.rtbz"} {
		if err := os.Remove(h.Path(n)); err != nil {
			t.Fatal(err)
		}
		// relative: the daemon runs as nobody, and a target under a 0700
		// directory would be "Permission denied", not a dangling link
		if err := os.Symlink(filepath.Join("gone", n), h.Path(n)); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("nowhere", filepath.Join(h.Dir, "README"))
	link := filepath.Join(t.TempDir(), "old-tables")
	os.Symlink(h.Dir, link)
	lists, err := tablesync.LoadLists(h.Lists)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := tablesync.ParseSet("3-7")
	for _, from := range []string{h.URL, link} {
		to := t.TempDir()
		rep, err := tablesync.Sync(context.Background(), tablesync.Options{From: from, To: to, Set: set, Lists: lists})
		if err != nil {
			t.Fatalf("from %s: a dangling link stopped the sync: %v", from, err)
		}
		var refused []string
		for _, r := range rep.Refused {
			refused = append(refused, r.Rel)
			if p := strings.Join(r.Problems, "; "); !strings.Contains(p, "symlink has no referent") || !strings.Contains(p, r.Name) || r.KeptAt != "" {
				t.Errorf("from %s: %s refused with %q, kept at %q; want the dangling link named, nothing kept", from, r.Rel, p, r.KeptAt)
			}
		}
		if want := []string{"KBNvK.rtbw", "dtz/KQPvK.rtbz"}; !reflect.DeepEqual(refused, want) {
			t.Errorf("from %s: refused %v, want %v", from, refused, want)
		}
		if rep.Landed != 22 || rep.OnSource != 24 || rep.MissingCount != 0 || !rep.ProblemsFound() || rep.Complete {
			t.Errorf("from %s: landed %d, on source %d, missing %v; problems %v, complete %v; want 22 landed of 24, none missing, problems found",
				from, rep.Landed, rep.OnSource, rep.Missing, rep.ProblemsFound(), rep.Complete)
		}
		if w := strings.Join(rep.Warnings, "\n"); !strings.Contains(w, "README is a symlink with no referent") {
			t.Errorf("from %s: the dangling README is not a warning:\n%s", from, w)
		}
	}

	// an unreadable directory beside the dangling links: rsync's exit 23
	// for another cause, which is not tolerated
	locked := filepath.Join(h.Dir, "locked")
	os.Mkdir(locked, 0o755)
	os.WriteFile(filepath.Join(locked, "KRvKN.rtbw"), []byte("x"), 0o644)
	os.Chmod(locked, 0)
	defer os.Chmod(locked, 0o755)
	_, err = tablesync.Sync(context.Background(), tablesync.Options{From: h.URL, To: t.TempDir(), Set: set, Lists: lists})
	if err == nil || !strings.Contains(err.Error(), "locked") || !strings.Contains(err.Error(), "exit status 23") {
		t.Errorf("a listing with an unreadable directory and dangling links: %v; want it stopped with rsync's error", err)
	}
}

// A sync killed while it saved its state (kill -9 between the temporary's
// create and its rename) left the temporary beside state.json; the next
// sync, once it holds the lock, removes it. A sync refused by the lock
// removes nothing: the temporary may be the running sync's.
func TestSyncRemovesTheTemporaryStateOfAKilledRun(t *testing.T) {
	set, _ := tablesync.ParseSet("3")
	to := t.TempDir()
	work := filepath.Join(to, ".tbhost-sync")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	temps := []string{".state.json.tmp2243892192", "state.json.tmp"} // this tbhost's, an older one's
	for _, n := range append(temps, "keep.json") {
		if err := os.WriteFile(filepath.Join(work, n), []byte("{"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	held, err := filelock.Exclusive(filepath.Join(work, "lock"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tablesync.Sync(context.Background(), tablesync.Options{From: t.TempDir(), To: to, Set: set}); err == nil {
		t.Fatal("a sync beside a held lock ran")
	}
	for _, n := range temps {
		if _, err := os.Stat(filepath.Join(work, n)); err != nil {
			t.Errorf("the refused sync removed %s: %v", n, err)
		}
	}
	held.Unlock()
	tablesync.Sync(context.Background(), tablesync.Options{From: t.TempDir(), To: to, Set: set})
	for _, n := range temps {
		if _, err := os.Stat(filepath.Join(work, n)); !os.IsNotExist(err) {
			t.Errorf("the next sync left %s: %v", n, err)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "keep.json")); err != nil {
		t.Errorf("the next sync removed a file that is no temporary of its state: %v", err)
	}
}
