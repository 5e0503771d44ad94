package bench

import (
	"context"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/prefix/prefixtest"
)

// shortenedTable writes a synthetic table, loads it, opens it as c says
// and then truncates the file to 100 bytes, as a table rewritten in place
// or cut by a failing copy would be under a running benchmark. It returns
// a prober of the opened table and the table's path.
func shortenedTable(t *testing.T, c ProbeConfig, ownProcessor bool) (*prober, string) {
	t.Helper()
	dir := t.TempDir()
	// ~250 KB: the probes read pages past the first one, which a mapping
	// of the cut file no longer has (within the last page the kernel
	// serves zeros, not a fault)
	path, _, err := prefixtest.WriteTable(dir, prefixtest.Spec{Name: "KQRvK.rtbz", Subs: []prefixtest.Sub{{BlockSizeLog: 8, IdxBits: 6}}})
	if err != nil {
		t.Fatal(err)
	}
	set, err := LoadTables(context.Background(), []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	readers, closers, _, err := set.open(c, ownProcessor)
	t.Cleanup(func() {
		for _, cl := range closers {
			cl.Close()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := newProber(set.tables, readers, Mix{DTZ: 4}, c.Parallel, Weighting{By: "positions"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 100); err != nil {
		t.Fatal(err)
	}
	return p, path
}

// A table shortened under a running benchmark fails the requests that
// read past its new end, naming it: pread's short reads used to count as
// reads (the probe decoding what its buffer held before), and a mapping's
// SIGBUS crashed the whole run (a Go fatal error, exit 2).
func TestShortenedTableFailsTheRequestNotTheRun(t *testing.T) {
	for _, tc := range []struct {
		c            ProbeConfig
		ownProcessor bool
		want         string
	}{
		{ProbeConfig{IO: IOPread, Advise: AdviseNormal, Parallel: 1}, false, "the file ends before the"},
		{ProbeConfig{IO: IOPread, Advise: AdviseRandom, Parallel: 1}, true, "the file ends before the"},
		{ProbeConfig{IO: IOMmap, Advise: AdviseNormal, Parallel: 1}, true, "faulted at"},
		{ProbeConfig{IO: IOMmap, Advise: AdviseRandom, Parallel: 2}, false, "faulted at"},
	} {
		t.Run(tc.c.Name(), func(t *testing.T) {
			p, path := shortenedTable(t, tc.c, tc.ownProcessor)
			rng := rand.New(rand.NewPCG(1, 2))
			out := p.request(context.Background(), rng)
			if out.Err == nil {
				t.Fatalf("a request over a table cut to 100 bytes succeeded: %+v", out)
			}
			if !strings.Contains(out.Err.Error(), path) || !strings.Contains(out.Err.Error(), tc.want) {
				t.Errorf("error %q: want the table's path and %q", out.Err, tc.want)
			}
			// the goroutine's fault setting is back: a fault outside the
			// reads is the runtime's again
			out = p.request(context.Background(), rng)
			if out.Err == nil {
				t.Errorf("the second request succeeded: %+v", out)
			}
		})
	}
}

// Only a memory fault becomes a request's error; any other panic in the
// reads goes on.
func TestFaultErrorPassesOtherPanicsOn(t *testing.T) {
	p := &prober{tables: []probeTable{{Path: "/srv/syzygy/KRvK.rtbw", Size: 4096}}}
	defer func() {
		if r := recover(); r != "not a fault" {
			t.Errorf("recovered %v, want the original panic", r)
		}
	}()
	p.faultError("not a fault", 0)
	t.Error("faultError returned for a panic that is not a fault")
}

// A probe run's failed reads are reported by their first error, not as
// HTTP "no-answer" statuses.
func TestProbeFailuresReportTheReadError(t *testing.T) {
	p, path := shortenedTable(t, ProbeConfig{IO: IOPread, Advise: AdviseNormal, Parallel: 1}, false)
	res, err := Drive(context.Background(), Load{Clients: 1, Requests: 5}, func(ctx context.Context, _ int, _ int64) Outcome {
		return p.request(ctx, rand.New(rand.NewPCG(1, 2)))
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := ProbeConfig{IO: IOPread, Advise: AdviseNormal, Parallel: 1}
	run := newRun(c.Name(), Load{Clients: 1, Requests: 5}, res)
	run.Probe = &c
	var out strings.Builder
	if err := (&Report{Command: "probe", Clients: 1, Runs: []Run{run}}).WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "5 of 5 measured requests FAILED ("+path) || strings.Contains(out.String(), "no-answer") {
		t.Errorf("the report should give the read error, not HTTP statuses:\n%s", out.String())
	}
}
