package prefix

import (
	"bytes"
	"context"
	"errors"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tbhost/tbhost/prefix/prefixtest"
)

// swapSides names the same pieces with the colours swapped: KRvKN -> KNvKR.
func swapSides(name string) string {
	ext := filepath.Ext(name)
	sides := strings.Split(strings.TrimSuffix(name, ext), "v")
	return sides[1] + "v" + sides[0] + ext
}

// Issue 12 item 8: KvKR.rtbw holding KRvK's bytes was accepted (the piece
// types matched, the colours did not). Every real table under the name with
// its sides swapped must be refused as a material mismatch naming the file,
// by Parse, ParseFile, CheckMaterial and CheckMaterialFile; every real table
// under its own name passes CheckMaterialFile.
func TestMaterialMismatchRefused(t *testing.T) {
	dir := t.TempDir()
	swapped := 0
	for _, path := range realTableFiles(t) {
		name := filepath.Base(path)
		if err := CheckMaterialFile(path); err != nil {
			t.Errorf("%s: real table fails the material check: %v", name, err)
		}
		other := swapSides(name)
		if other == name {
			continue // symmetric: KQvKQ
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		bad := filepath.Join(dir, other)
		if err := os.WriteFile(bad, b, 0o644); err != nil {
			t.Fatal(err)
		}
		swapped++
		_, perr := Parse(other, bytes.NewReader(b), int64(len(b)))
		_, ferr := ParseFile(bad)
		cerr := CheckMaterial(other, bytes.NewReader(b), int64(len(b)))
		mferr := CheckMaterialFile(bad)
		for what, err := range map[string]error{"Parse": perr, "ParseFile": ferr, "CheckMaterial": cerr, "CheckMaterialFile": mferr} {
			if !errors.Is(err, ErrMaterial) || !errors.Is(err, ErrInconsistent) || !IsRefusal(err) {
				t.Errorf("%s holding %s's bytes: %s gave %v, want a material mismatch", other, name, what, err)
				continue
			}
			if !strings.Contains(err.Error(), other) || !strings.Contains(err.Error(), "do not match the material") {
				t.Errorf("%s: %s: %q does not name the file and the mismatch", other, what, err)
			}
		}
		if ferr != nil && !strings.HasPrefix(ferr.Error(), bad+": ") {
			t.Errorf("ParseFile error %q does not start with the path", ferr)
		}
	}
	if swapped < 20 {
		t.Fatalf("only %d real tables with a swapped name: the test checks too little", swapped)
	}
}

// The same through extract and verify: the mislabelled file is named, no
// prefix is written for it, the others are extracted.
func TestExtractAndVerifyReportMaterialMismatch(t *testing.T) {
	tables, set := writeSet(t)
	if err := os.WriteFile(filepath.Join(tables, "KvKR.rtbw"), set["KRvK.rtbw"], 0o644); err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	rep := extract(t, tables, store, ExtractOptions{Jobs: 2})
	if rep.Written != len(set) || len(rep.Failed) != 1 || rep.Failed[0].Name != "KvKR.rtbw" ||
		!strings.Contains(rep.Failed[0].Error, "KvKR.rtbw") || !strings.Contains(rep.Failed[0].Error, "material") {
		t.Fatalf("extract: written %d, failed %+v", rep.Written, rep.Failed)
	}
	if _, err := os.Stat(PrefixPath(store, "KvKR.rtbw")); err == nil {
		t.Error("a prefix was written for the mislabelled table")
	}
	v := verify(t, tables, store, false)
	if len(v.Findings) != 1 || v.Findings[0].Kind != FindBadTable || v.Findings[0].Name != "KvKR.rtbw" || !strings.Contains(v.Findings[0].Detail, "material") {
		t.Fatalf("verify: %+v", v.Findings)
	}
}

// Issue 12 item 8: a directory in place of a .prefix file was reported
// TRUNCATED. It is reported as what it is, and extract refuses that table
// (nothing in the directory is touched), extracts the others and names it.
func TestDirectoryInPlaceOfPrefix(t *testing.T) {
	tables, set := writeSet(t)
	store := t.TempDir()
	extract(t, tables, store, ExtractOptions{})
	victim := PrefixPath(store, "KQvKQ.rtbw")
	if err := os.Remove(victim); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(victim, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(tables, "KQvKQ.rtbw"), store); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "directory") {
		t.Errorf("Open with a directory as prefix: %v", err)
	}
	for _, full := range []bool{false, true} {
		v := verify(t, tables, store, full)
		if len(v.Findings) != 1 || v.Findings[0].Kind != FindNotRegular || v.Findings[0].Path != victim ||
			!strings.Contains(v.Findings[0].Detail, "directory, not a prefix file") {
			t.Fatalf("verify full=%v: %+v", full, v.Findings)
		}
	}
	rep := extract(t, tables, store, ExtractOptions{Force: true})
	if rep.Written != len(set)-1 || len(rep.Failed) != 1 || rep.Failed[0].Name != "KQvKQ.rtbw" ||
		!strings.Contains(rep.Failed[0].Error, victim+" is a directory") {
		t.Fatalf("extract over a directory: written %d, failed %+v", rep.Written, rep.Failed)
	}
	if rep.BytesRead != rep.BytesWritten {
		t.Errorf("read %d bytes for %d written: the refused table was read", rep.BytesRead, rep.BytesWritten)
	}
	if st, err := os.Stat(filepath.Join(victim, "keep")); err != nil || !st.IsDir() {
		t.Fatalf("the directory's contents were touched: %v", err)
	}
	ents, _ := os.ReadDir(store)
	for _, e := range ents {
		if isTemp(e.Name()) {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

// A FIFO in place of a prefix, or of a table, must not hang verify or
// extract (opening a FIFO blocks): verify reports it, extract replaces the
// prefix FIFO with the prefix, and the parser refuses the table FIFO.
func TestFIFOsDoNotHang(t *testing.T) {
	tables, set := writeSet(t)
	store := t.TempDir()
	extract(t, tables, store, ExtractOptions{})
	fifo := PrefixPath(store, "KRvK.rtbw")
	os.Remove(fifo)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	// a FIFO among the tables is refused by the table walker (internal/
	// tablewalk: "not a regular file", naming it) before anything opens it
	watchdog := time.AfterFunc(60*time.Second, func() { panic("verify, extract or Open hangs on a FIFO") })
	defer watchdog.Stop()
	if _, err := Open(filepath.Join(tables, "KRvK.rtbw"), store); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "named pipe") {
		t.Errorf("Open with a FIFO prefix: %v", err)
	}
	v := verify(t, tables, store, true)
	kinds := map[string]string{}
	for _, f := range v.Findings {
		kinds[f.Name] = f.Kind
	}
	if kinds["KRvK.rtbw"] != FindNotRegular || len(v.Findings) != 1 {
		t.Errorf("verify: %+v", v.Findings)
	}
	rep := extract(t, tables, store, ExtractOptions{})
	if rep.Written != 1 || len(rep.Failed) != 0 {
		t.Errorf("extract: %+v", rep)
	}
	if v := verify(t, tables, store, false); len(v.Findings) != 0 || v.OK != len(set) {
		t.Errorf("after extract: %+v", v.Findings)
	}
	tableFIFO := filepath.Join(t.TempDir(), "KNvKN.rtbw")
	if err := syscall.Mkfifo(tableFIFO, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseFile(tableFIFO); !errors.Is(err, ErrNotRegular) || !IsRefusal(err) {
		t.Errorf("ParseFile of a FIFO: %v", err)
	}
}

// Issue 12 defect 6: Jobs of a million must neither spawn a million copies
// nor allocate a buffer set per requested job: memory stays bounded by
// MaxJobs, and the run still does its work.
func TestHugeJobsIsBounded(t *testing.T) {
	const jobs = 1_000_000
	tables := t.TempDir()
	names := manyNames(40) // more tables than MaxJobs
	for _, n := range names {
		if _, _, err := prefixtest.WriteTable(tables, prefixtest.Spec{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	store := t.TempDir()
	srcs, err := FindTables([]string{tables})
	if err != nil {
		t.Fatal(err)
	}
	ps := ParseAll(context.Background(), srcs, 2)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	peak := &peakGoroutines{}
	rep, err := Extract(context.Background(), ps, ExtractOptions{Store: store, Jobs: jobs, Progress: peak})
	if err != nil || rep.Written != len(names) {
		t.Fatalf("extract: %v %+v", err, rep)
	}
	v, err := Verify(context.Background(), srcs, VerifyOptions{Store: store, Full: true, Jobs: jobs, Progress: peak})
	if err != nil || len(v.Findings) != 0 || v.OK != len(names) {
		t.Fatalf("verify: %v %+v", err, v)
	}
	runtime.ReadMemStats(&after)
	bound := uint64(MaxJobs*digestChunks*digestChunk + 64<<20)
	if got := after.TotalAlloc - before.TotalAlloc; got > bound {
		t.Errorf("extract and verify with --jobs %d allocated %d MiB, bound %d MiB", jobs, got>>20, bound>>20)
	}
	if peak.max.Load() > MaxJobs+64 {
		t.Errorf("%d goroutines ran at once for --jobs %d; MaxJobs is %d", peak.max.Load(), jobs, MaxJobs)
	}
}

// manyNames returns n distinct 3-4 piece WDL table names.
func manyNames(n int) []string {
	pieces := []string{"Q", "R", "B", "N", "P"}
	var out []string
	for _, a := range pieces {
		out = append(out, "K"+a+"vK.rtbw")
		for _, b := range pieces {
			out = append(out, "K"+a+b+"vK.rtbw", "K"+a+"vK"+b+".rtbw")
		}
	}
	return out[:n]
}

// peakGoroutines records the most goroutines seen while tables finish.
type peakGoroutines struct{ max atomic.Int64 }

func (p *peakGoroutines) Begin(int, int64) {}
func (p *peakGoroutines) Advance(int64) {
	n := int64(runtime.NumGoroutine())
	for {
		old := p.max.Load()
		if n <= old || p.max.CompareAndSwap(old, n) {
			return
		}
	}
}
func (p *peakGoroutines) Done(string, int64, error) {}
func (p *peakGoroutines) End()                      {}

// The README promises prefix as a library for Go servers (prefix.Open): its
// code and its exported API must not depend on the module's internal/
// packages, which other modules cannot import.
func TestImportsNoInternalPackages(t *testing.T) {
	for _, dir := range []string{".", "prefixtest"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range ast.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				// internal/tablewalk, internal/sysread, internal/jsonlines,
				// internal/filelock and internal/atomicfile are used inside (Go lets a package import its own module's internal/
				// packages, also when another module imports it); no exported API
				// exposes their types
				if (strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal")) &&
					!strings.HasSuffix(path, "/internal/tablewalk") && !strings.HasSuffix(path, "/internal/sysread") &&
					!strings.HasSuffix(path, "/internal/jsonlines") && !strings.HasSuffix(path, "/internal/filelock") &&
					!strings.HasSuffix(path, "/internal/atomicfile") {
					t.Errorf("%s imports %s: callers outside the module could not use it", f, path)
				}
			}
		}
	}
}
