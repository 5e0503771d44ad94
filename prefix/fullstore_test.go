package prefix

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/smallfs"
	"github.com/tbhost/tbhost/prefix/prefixtest"
)

// A store whose file system fills up during the run (another writer took
// the space the free-space check saw; FreeSpace says there is room here):
// a tmpfs of half the prefixes' size, so the kernel's own ENOSPC stops
// some copies and perhaps the manifest's appends. Every prefix under its
// final name is whole; the report's written are exactly the manifest's
// entries and every other table is named as failed with the full disk's
// error; no temporary file is left. Once the file system has room,
// extract again finishes and verify --full is clean. Twice: 60 small
// prefixes copied four at a time, and four of tens of MB (a real 6-7 piece
// prefix's size, many digest chunks each) one at a time, so the disk fills
// in the middle of one of them.
func TestExtractOntoAStoreThatFillsUp(t *testing.T) {
	for _, c := range []struct {
		name  string
		specs []prefixtest.Spec
		jobs  int
	}{{"60-small", coldSpecs(60), 4}, {"4-large", largeSpecs(), 1}} {
		t.Run(c.name, func(t *testing.T) { extractOntoAStoreThatFillsUp(t, c.specs, c.jobs) })
	}
}

func extractOntoAStoreThatFillsUp(t *testing.T, specs []prefixtest.Spec, jobs int) {
	ctx := context.Background()
	tables, srcs := writeTables(t, specs)
	parsed := ParseAll(ctx, srcs, 2)
	var need int64
	for _, p := range parsed {
		if p.Err != nil {
			t.Fatal(p.Err)
		}
		need += p.Layout.PrefixLen(UptoBlockLengths)
	}
	store := smallfs.Mount(t, fmt.Sprint(need/2), "a full store")

	plenty := func(string) (int64, error) { return need * 4, nil }
	rep, err := Extract(ctx, parsed, ExtractOptions{Store: store, Jobs: jobs, FreeSpace: plenty})
	var stopped *StoppedError
	if err != nil && (!errors.As(err, &stopped) || !strings.Contains(err.Error(), "no space left on device")) {
		t.Fatalf("extract onto a store that fills up: %v; want no error, or a stopped run naming the full disk", err)
	}
	if rep.Written < 1 || len(rep.Failed) < 1 || rep.Written+len(rep.Failed) != len(parsed) {
		t.Fatalf("%d written, %d failed of %d tables (%d bytes into a store of %d): want some of each, every table one of them",
			rep.Written, len(rep.Failed), len(parsed), need, need/2)
	}
	for _, f := range rep.Failed {
		if !strings.Contains(f.Error, "no space left on device") || !strings.Contains(f.Error, "file system is full: free space on it, or extract with --capacity") {
			t.Errorf("failed %s: %q; want the full disk's error and its fix", f.Name, f.Error)
		}
	}
	man, merr := LoadManifest(store)
	if merr != nil {
		t.Fatal(merr)
	}
	if len(man) != rep.Written {
		t.Errorf("the manifest records %d prefixes, the report says %d written", len(man), rep.Written)
	}
	temps, _ := filepath.Glob(filepath.Join(store, ".*"+PrefixSuffix+".tmp"))
	if len(temps) != 0 {
		t.Errorf("temporary files left in the full store: %q", temps)
	}
	// what is under a final name is whole: recorded ones verify against
	// the manifest, and nothing differs from its table
	fast := verify(t, tables, store, false)
	full := verify(t, tables, store, true)
	for _, f := range append(fast.Findings, full.Findings...) {
		if f.Kind != FindMissing && f.Kind != FindUnrecorded {
			t.Errorf("after the full run: %s", f)
		}
	}
	if fast.OK != rep.Written {
		t.Errorf("after the full run %d prefixes verify against the manifest, want the %d written", fast.OK, rep.Written)
	}
	t.Logf("%d prefixes (%d bytes) into a store of %d bytes: %d written, %d failed (%v; the first: %s)", len(parsed), need, need/2, rep.Written, len(rep.Failed), err, rep.Failed[0].Error)

	// room again: the rest is extracted, and the whole store verifies
	smallfs.Resize(t, store, fmt.Sprint(need*2))
	rep, err = Extract(ctx, parsed, ExtractOptions{Store: store, Jobs: jobs})
	if err != nil || len(rep.Failed) != 0 || rep.Written+rep.Skipped != len(parsed) {
		t.Fatalf("extract again with room: %v, %d written, %d unchanged, failed %+v", err, rep.Written, rep.Skipped, rep.Failed)
	}
	if v := verify(t, tables, store, true); len(v.Findings) != 0 || v.OK != len(parsed) {
		t.Errorf("verify --full after the second run: %d ok, %v", v.OK, v.Findings)
	}
}
