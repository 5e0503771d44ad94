package prefix

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/smallfs"
	"golang.org/x/sys/unix"
)

// copiedPrefixes copies n synthetic tables' prefixes into store, each
// left as its temporary file, as a copy hands it to the finisher.
func copiedPrefixes(t *testing.T, n int, store string) []*copied {
	t.Helper()
	_, srcs := writeTables(t, coldSpecs(n))
	ctx := context.Background()
	env := newCopyEnv(store)
	var cs []*copied
	for _, p := range ParseAll(ctx, srcs, 2) {
		c, _, err := copyPrefix(ctx, p, env, UptoBlockLengths, newChunks(), nopProgress{})
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	return cs
}

// allReady is a closed channel holding cs: copies all ready at once.
func allReady(cs []*copied) <-chan *copied {
	ch := make(chan *copied, len(cs))
	for _, c := range cs {
		ch <- c
	}
	close(ch)
	return ch
}

// finishAll runs finishBatches over done with syncBatch and returns the
// outcomes and the syncBatch calls made.
func finishAll(done <-chan *copied, syncBatch func() error) ([]extractResult, int) {
	calls := 0
	counted := func() error { calls++; return syncBatch() }
	if syncBatch == nil {
		counted = nil // storeSyncfs's answer on a kernel before 5.8
	}
	results := make(chan extractResult)
	go func() {
		defer close(results)
		finishBatches(context.Background(), done, results, 0, counted)
	}()
	var out []extractResult
	for r := range results {
		out = append(out, r)
	}
	return out, calls
}

// Issue 16: the copies that are ready together are made durable together,
// one syncfs for up to batchFiles prefixes instead of an fsync each, and
// every prefix is renamed into place after it.
func TestReadyCopiesShareOneSyncfs(t *testing.T) {
	store := t.TempDir()
	n := batchFiles + 8
	syncBatch, closeSync := storeSyncfs(store)
	defer closeSync()
	if syncBatch == nil {
		t.Skip("this kernel's syncfs does not report writeback errors (before 5.8): extract fsyncs each prefix")
	}
	res, calls := finishAll(allReady(copiedPrefixes(t, n, store)), syncBatch)
	if calls != 2 {
		t.Errorf("%d prefixes ready at once: %d syncfs calls, want 2 (batches of %d and 8)", n, calls, batchFiles)
	}
	checkFinished(t, store, res, "")
}

// Where syncfs fails (a writeback error elsewhere on the file system, or
// no syncfs in a sandbox), each prefix is fsynced on its own: the batch is
// finished, and a prefix whose fsync fails (here: its file closed under
// it) is reported alone, not renamed.
func TestFailedSyncfsFallsBackToAnFsyncEach(t *testing.T) {
	store := t.TempDir()
	cs := copiedPrefixes(t, 5, store)
	bad := cs[2]
	bad.out.Close()
	res, calls := finishAll(allReady(cs), func() error { return unix.EIO })
	if calls != 1 {
		t.Errorf("5 prefixes ready at once: %d syncfs calls, want 1", calls)
	}
	checkFinished(t, store, res, bad.p.Name)
}

// checkFinished: an outcome for each copy; each without error is renamed
// into place with its bytes; failed (if not "") alone failed, at its
// fsync, and left no file behind.
func checkFinished(t *testing.T, store string, res []extractResult, failed string) {
	t.Helper()
	want := 0
	for _, r := range res {
		if r.p.Name == failed {
			if r.err == nil || !strings.Contains(r.err.Error(), "fsync") {
				t.Errorf("%s: its fsync failed, yet the outcome is %v", r.p.Name, r.err)
			}
			continue
		}
		if r.err != nil {
			t.Errorf("%s: %v", r.p.Name, r.err)
			continue
		}
		want++
		fi, err := os.Stat(PrefixPath(store, r.p.Name))
		if err != nil || fi.Size() != r.entry.Prefix || r.entry.Prefix == 0 {
			t.Errorf("%s: prefix in place: %v, size %v, want %d", r.p.Name, err, fi, r.entry.Prefix)
		}
	}
	ents, err := os.ReadDir(store)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != want {
		names := ""
		for _, e := range ents {
			names += " " + e.Name()
		}
		t.Errorf("store holds %d files, want the %d prefixes finished:%s", len(ents), want, names)
	}
}

// Without a trusted syncfs (a kernel before 5.8) each prefix is fsynced.
func TestNoSyncfsFsyncsEach(t *testing.T) {
	store := t.TempDir()
	cs := copiedPrefixes(t, 4, store)
	bad := cs[1]
	bad.out.Close()
	res, _ := finishAll(allReady(cs), nil)
	checkFinished(t, store, res, bad.p.Name)
}

func TestSyncfsTrustedFromLinux58(t *testing.T) {
	for release, want := range map[string]bool{
		"6.1.0-18-amd64": true, "5.8.0": true, "5.10.209": true, "10.0": true,
		"5.7.19": false, "4.18.0-513.el8.x86_64": false, "3.10.0": false, "": false, "linux": false,
	} {
		if got := syncfsReportsErrors(release); got != want {
			t.Errorf("syncfsReportsErrors(%q) = %v, want %v", release, got, want)
		}
	}
}

// After one failed syncfs, every later batch is fsynced prefix by prefix,
// though syncfs itself would succeed again (it reports an error once): the
// error it reported may have been a later batch's prefix's.
func TestSyncfsFailedOnceIsNotTrustedAgain(t *testing.T) {
	calls := 0
	sync := failedOnce(func() error {
		calls++
		if calls == 2 {
			return unix.EIO
		}
		return nil
	})
	for i, want := range []bool{true, false, false, false} {
		if ok := sync() == nil; ok != want {
			t.Errorf("call %d: syncfs trusted %v, want %v", i+1, ok, want)
		}
	}
	if calls != 2 {
		t.Errorf("syncfs called %d times, want 2 (none after it failed)", calls)
	}
}

// doneSignal is a Progress that closes its channel when the table named
// name is done (record calls Done after the flush that result triggered).
type doneSignal struct {
	nopProgress
	name string
	ch   chan struct{}
}

func (d doneSignal) Done(name string, _ int64, _ error) {
	if name == d.name {
		close(d.ch)
	}
}

// A run whose store stops taking its directory fsync part way (its disk
// failed, as in the lab's TestExtractOntoAFailingStore): the prefixes
// recorded before stay written; the one renamed after is not recorded,
// and the report moves it from written to failed, beside the table whose
// copy failed.
func TestRecordCountsOnlyRecordedPrefixesAfterAFailedFlush(t *testing.T) {
	store, logDir := t.TempDir(), t.TempDir()
	log, err := openManifestLog(logDir) // the manifest apart, to read it after
	if err != nil {
		t.Fatal(err)
	}
	defer log.close()
	ok := func(n string) extractResult {
		return extractResult{p: Parsed{Source: Source{Name: n, Path: "/t/" + n}}, read: 100,
			entry: ManifestEntry{Name: n, Source: "/t/" + n, Prefix: 100}}
	}
	flushedB := make(chan struct{})
	results := make(chan extractResult)
	go func() {
		defer close(results)
		results <- ok("A")
		time.Sleep(flushEvery + 50*time.Millisecond)
		results <- ok("B") // flushes A and B
		<-flushedB
		if err := os.Remove(store); err != nil { // the directory fsync fails from now on
			t.Error(err)
		}
		results <- ok("C")
		results <- extractResult{p: Parsed{Source: Source{Name: "D", Path: "/t/D"}}, err: errors.New("copy failed")}
	}()
	rep := &ExtractReport{Failed: []Failure{}}
	err = record(results, store, log, Manifest{}, rep, doneSignal{name: "B", ch: flushedB})
	if err == nil {
		t.Fatal("record: no error although the store's directory fsync failed")
	}
	var failed []string
	for _, f := range rep.Failed {
		failed = append(failed, f.Name+": "+f.Error)
	}
	if rep.Written != 2 || rep.BytesWritten != 200 || len(failed) != 2 ||
		!strings.HasPrefix(failed[0], "D: copy failed") || !strings.HasPrefix(failed[1], "C: renamed into the store but not made durable and recorded: ") {
		t.Errorf("report: %d written (%d bytes), failed %q; want 2 written (200 bytes), D's copy and C's record failed", rep.Written, rep.BytesWritten, failed)
	}
	if n := manifestLines(logDir); n != 2 {
		t.Errorf("the manifest has %d lines, want A's and B's", n)
	}
}

// A store that fills up while a batch's manifest lines are appended: the
// buffer has already written some of the batch's lines when the rest
// fails. Those lines must not stay in the manifest, or the next extract
// takes as recorded (and skips) prefixes the report named as failed and
// to be redone: the manifest is cut back to its last whole batch, and it
// records exactly the report's written.
func TestRecordLeavesNoLinesOfAFailedBatchOnAFullStore(t *testing.T) {
	store := smallfs.Mount(t, "128k", "a full store")
	log, err := openManifestLog(store)
	if err != nil {
		t.Fatal(err)
	}
	defer log.close()
	// leave 80 KiB: a batch of lines (about 60 KiB) and then part of the next
	if err := os.WriteFile(filepath.Join(store, "filler"), make([]byte, 48<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	results := make(chan extractResult)
	go func() {
		defer close(results)
		for i := range 2 * flushEntries {
			n := fmt.Sprintf("K%03dvK.rtbw", i)
			results <- extractResult{p: Parsed{Source: Source{Name: n, Path: "/t/" + n}}, read: 100,
				entry: ManifestEntry{Name: n, Source: "/srv/syzygy/" + n, Prefix: 100, Upto: "block-lengths",
					SHA256: strings.Repeat("ab", 32), Extracted: "2026-12-07T18:00:00Z"}}
		}
	}()
	rep := &ExtractReport{Failed: []Failure{}}
	err = record(results, store, log, Manifest{}, rep, nopProgress{})
	const fix = "file system is full: free space on it, or extract with --capacity"
	if !errors.Is(err, unix.ENOSPC) || !strings.Contains(err.Error(), fix) {
		t.Fatalf("record onto a full store: %v, want ENOSPC and its fix", err)
	}
	man, err := LoadManifest(store)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Written != flushEntries {
		t.Errorf("%d written, want the first batch's %d", rep.Written, flushEntries)
	}
	if len(man) != rep.Written || manifestLines(store) != rep.Written || rep.Written+len(rep.Failed) != 2*flushEntries {
		t.Fatalf("the manifest records %d prefixes in %d lines, the report %d written and %d failed of %d", len(man), manifestLines(store), rep.Written, len(rep.Failed), 2*flushEntries)
	}
	for _, f := range rep.Failed {
		if _, ok := man[f.Name]; ok {
			t.Fatalf("%s is in the manifest but reported failed (%s)", f.Name, f.Error)
		}
		if !strings.Contains(f.Error, fix) {
			t.Fatalf("failed %s: %q; want the full disk's fix", f.Name, f.Error)
		}
	}
}
