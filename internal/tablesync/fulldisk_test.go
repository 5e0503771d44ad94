package tablesync_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/smallfs"
	"github.com/tbhost/tbhost/internal/tablesync"
	"github.com/tbhost/tbhost/internal/tablesync/rsyncd"
)

// A destination that fills up in the middle of the copy (an array built
// too small, or the wrong mount): a tmpfs of about half the old host's
// bytes, so rsync's writes get the kernel's own ENOSPC. The run fails
// with an error that says the destination is full and how to go on; every
// file under its final name is byte for byte the old host's; once the
// destination has room, a rerun completes.
func TestSyncOntoAFullDestination(t *testing.T) {
	h := rsyncd.NewOldHost(t)
	var total int64
	for _, n := range h.Names {
		st, err := os.Stat(h.Path(n))
		if err != nil {
			t.Fatal(err)
		}
		total += st.Size()
	}
	to := smallfs.Mount(t, fmt.Sprint(total/2), "a full array")
	lists, err := tablesync.LoadLists(h.Lists)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := tablesync.ParseSet("3-7")
	opts := tablesync.Options{From: h.URL, To: to, Set: set, Lists: lists}

	rep, err := tablesync.Sync(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "No space left on device") || !strings.Contains(err.Error(), "destination "+to+" is full") {
		t.Fatalf("sync into a destination of %d bytes for %d: %v; want the full disk named, with its fix", total/2, total, err)
	}
	if rep.Complete || rep.Landed >= len(h.Names) {
		t.Errorf("report after the full disk: complete %v, %d landed of %d", rep.Complete, rep.Landed, len(h.Names))
	}
	landed := 0
	for _, n := range h.Names {
		rel, _ := filepath.Rel(h.Dir, h.Path(n))
		got, err := os.ReadFile(filepath.Join(to, rel))
		if err != nil {
			continue
		}
		landed++
		if want, _ := os.ReadFile(h.Path(n)); !bytes.Equal(got, want) {
			t.Errorf("%s under its final name differs from the old host's (%d of %d bytes)", rel, len(got), len(want))
		}
	}
	if landed != rep.Landed {
		t.Errorf("%d files under their final names, the report says %d landed", landed, rep.Landed)
	}
	t.Logf("%d of %d files (%d bytes) into %d bytes before the disk was full: %v", landed, len(h.Names), total, total/2, err)

	// room again: the rerun completes
	smallfs.Resize(t, to, fmt.Sprint(total*3))
	rep, err = tablesync.Sync(context.Background(), opts)
	if err != nil || !rep.Complete || rep.AlreadyVerified+rep.Landed != len(h.Names) {
		t.Fatalf("rerun with room: %v, complete %v, %d verified before, %d landed", err, rep.Complete, rep.AlreadyVerified, rep.Landed)
	}
}

// The same full destination with the old host's tables in a local
// directory (a mounted disk, documented as a SRC): there rsync's sender
// prints a file's landed mark before the receiver has written it, so when
// the disk fills up the marks of the files in flight name files that never
// arrive. The run must end as soon as rsync does, with the full disk
// named, not wait for each of them (it waited 30 s a file: minutes before
// cron heard of the full disk).
func TestSyncFromADirectoryOntoAFullDestinationEndsWithRsync(t *testing.T) {
	h := rsyncd.NewOldHost(t)
	var total int64
	for _, n := range h.Names {
		st, err := os.Stat(h.Path(n))
		if err != nil {
			t.Fatal(err)
		}
		total += st.Size()
	}
	// 300k: full within the first DTZ tables, with small ones in flight after
	to := smallfs.Mount(t, "300k", "a full array")
	lists, err := tablesync.LoadLists(h.Lists)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := tablesync.ParseSet("3-7")
	start := time.Now()
	rep, err := tablesync.Sync(context.Background(), tablesync.Options{From: h.Dir, To: to, Set: set, Lists: lists})
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "destination "+to+" is full") {
		t.Fatalf("sync into a destination of 300k for %d bytes: %v; want the full disk named, with its fix", total, err)
	}
	if took > 15*time.Second {
		t.Errorf("the sync took %v after rsync stopped on the full disk (%d landed): it waited for files rsync never wrote", took.Round(time.Second), rep.Landed)
	}
}

// On the full disk rsync exits without waiting for the receiver it forked
// for a local SRC, and that receiver may still hold a file in incoming/
// open as it exits (the clean-clone CI once met the busy tmpfs when the
// test unmounted it). The sync returns only once rsync's whole process
// group is gone. A stand-in rsync fails the copy the same way: its forked
// child, detached from the pipes tbhost reads, holds a file open under
// the destination for a second and marks when it is done.
func TestSyncReturnsOnlyOnceRsyncsForkedReceiverIsGone(t *testing.T) {
	h := rsyncd.NewOldHost(t)
	to := t.TempDir()
	mark := filepath.Join(t.TempDir(), "receiver-done")
	fake := filepath.Join(t.TempDir(), "rsync")
	script := `#!/bin/sh
case "$*" in
*--files-from=*)
	for last; do :; done
	( exec >/dev/null 2>&1 3>"$last/held"; sleep 1; touch "` + mark + `" ) &
	echo "rsync: [receiver] write failed on \"$last/held\": No space left on device (28)" >&2
	exit 11 ;;
esac
exec rsync "$@"
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	lists, err := tablesync.LoadLists(h.Lists)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := tablesync.ParseSet("3-7")
	_, err = tablesync.Sync(context.Background(), tablesync.Options{From: h.Dir, To: to, Set: set, Lists: lists, Rsync: fake})
	if err == nil || !strings.Contains(err.Error(), "destination "+to+" is full") {
		t.Fatalf("sync with the stand-in rsync failing on a full disk: %v; want the full disk named", err)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("the sync returned while rsync's forked receiver still held a file under %s open: %v", to, err)
	}
}
