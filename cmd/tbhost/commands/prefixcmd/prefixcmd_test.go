package prefixcmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/realdata"
	"github.com/tbhost/tbhost/prefix"
	"github.com/tbhost/tbhost/prefix/prefixtest"
	"github.com/urfave/cli/v2"
)

// runCLI runs `tbhost ...` in-process with only the prefix group installed.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cliutil.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Runner: execx.NewRecorded()}
	code := cliutil.Run(cliutil.NewApp(env, []*cli.Command{Command()}), env, append([]string{"tbhost"}, args...))
	return code, out.String(), errb.String()
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}

var byteFields = []string{"size", "header", "sparse_index", "block_lengths", "data", "sparse_prefix", "prefix"}

func keys(m map[string]any) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}

// The acceptance test: stats --json totals on the real tables equal an
// independent count (prefixtest.Count reads each whole file and finds the
// prefix backward, from the size and the data blocks).
func TestStatsJSONEqualsIndependentCount(t *testing.T) {
	dir := realdata.Tables(t)
	code, out, errs := runCLI(t, "prefix", "stats", "--json", "--files", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(keys(raw), ","); got != "files,totals" {
		t.Fatalf("top-level keys %s", got)
	}
	wantFile := append([]string{"kind", "name"}, byteFields...)
	sort.Strings(wantFile)
	for _, f := range raw["files"].([]any) {
		if got := keys(f.(map[string]any)); strings.Join(got, ",") != strings.Join(wantFile, ",") {
			t.Fatalf("file keys %v, want %v", got, wantFile)
		}
	}
	wantTot := append([]string{"files"}, byteFields...)
	sort.Strings(wantTot)
	tots := raw["totals"].(map[string]any)
	if got := strings.Join(keys(tots), ","); got != "all,dtz,wdl" {
		t.Fatalf("totals keys %s", got)
	}
	for _, k := range []string{"wdl", "dtz", "all"} {
		if got := keys(tots[k].(map[string]any)); strings.Join(got, ",") != strings.Join(wantTot, ",") {
			t.Fatalf("totals.%s keys %v", k, got)
		}
	}

	var st prefix.Stats
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.rtb[wz]"))
	want := map[string]*prefix.Totals{"wdl": {}, "dtz": {}, "all": {}}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		c, err := prefixtest.Count(filepath.Base(p), b)
		if err != nil {
			t.Fatal(err)
		}
		kind := "wdl"
		if strings.HasSuffix(p, ".rtbz") {
			kind = "dtz"
		}
		for _, k := range []string{kind, "all"} {
			w := want[k]
			w.Files++
			w.Size += int64(len(b))
			w.Header += c.Header
			w.SparseIndex += c.SparseIndex
			w.BlockLengths += c.BlockLengths
			w.Data += c.Data
			w.SparsePrefix += c.SparsePrefix
			w.Prefix += c.Prefix
		}
		if c.Prefix%64 != 0 || (len(b) == 80 && c.Prefix != 64) {
			t.Errorf("%s: independent prefix %d", p, c.Prefix)
		}
	}
	if st.Totals.WDL != *want["wdl"] || st.Totals.DTZ != *want["dtz"] || st.Totals.All != *want["all"] {
		t.Fatalf("stats totals %+v\nindependent  wdl %+v dtz %+v all %+v", st.Totals, *want["wdl"], *want["dtz"], *want["all"])
	}
	if st.Totals.All.Files != len(files) || len(st.Files) != len(files) {
		t.Fatalf("%d files in totals, %d listed, %d on disk", st.Totals.All.Files, len(st.Files), len(files))
	}
	for _, f := range st.Files {
		if f.Prefix%64 != 0 {
			t.Errorf("%s: prefix %d is not a multiple of 64", f.Name, f.Prefix)
		}
		if f.Size == 80 && f.Prefix != 64 {
			t.Errorf("%s: 80-byte file has prefix %d, want 64", f.Name, f.Prefix)
		}
	}
	// Without --files there is no files key.
	_, out, _ = runCLI(t, "--json", "prefix", "stats", dir)
	raw = nil
	json.Unmarshal([]byte(out), &raw)
	if _, ok := raw["files"]; ok {
		t.Error("files listed without --files")
	}
}

// Hostile input next to good tables: each bad file is named with a reason,
// nothing panics, the good files are counted, exit 1.
func TestHostileFilesAreNamedAndSkipped(t *testing.T) {
	dir := t.TempDir()
	good := map[string]bool{}
	for _, s := range []prefixtest.Spec{{Name: "KRvK.rtbw"}, {Name: "KPvK.rtbz"}, {Name: "KQvKQ.rtbw"}} {
		if _, _, err := prefixtest.WriteTable(dir, s); err != nil {
			t.Fatal(err)
		}
		good[s.Name] = true
	}
	rnd := make([]byte, 8192+16)
	rand.New(rand.NewSource(1)).Read(rnd)
	bad := map[string][]byte{
		"KRvKN.rtbw": rnd,
		"KRvKP.rtbz": []byte("version https://git-lfs.github.com/spec/v1\noid sha256:9d0d\nsize 193424\n"),
		"KQvKR.rtbw": []byte("<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head></html>\n"),
	}
	reasons := map[string]string{"KRvKN.rtbw": "wrong magic", "KRvKP.rtbz": "Git LFS", "KQvKR.rtbw": "HTML"}
	if data, err := realdata.Find(); err == nil {
		real := filepath.Join(data, "tables")
		for _, n := range []string{"KPvKP.rtbw", "KRvKP.rtbw", "KBNvK.rtbz"} {
			b, err := os.ReadFile(filepath.Join(real, n))
			if err != nil {
				t.Fatal(err)
			}
			bad[n] = b[:len(b)*2/3] // a truncated download
			reasons[n] = "truncated"
		}
	}
	for n, b := range bad {
		os.WriteFile(filepath.Join(dir, n), b, 0o644)
	}
	code, out, errs := runCLI(t, "prefix", "stats", "--json", "--files", dir)
	if code != cliutil.ExitProblem {
		t.Fatalf("exit %d, want 1; stderr %s", code, errs)
	}
	for n, why := range reasons {
		if !strings.Contains(errs, n) || !strings.Contains(errs, why) {
			t.Errorf("stderr does not name %s with %q:\n%s", n, why, errs)
		}
	}
	var st prefix.Stats
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.Totals.All.Files != len(good) {
		t.Errorf("counted %d good files, want %d", st.Totals.All.Files, len(good))
	}

	store := t.TempDir()
	code, _, errs = runCLI(t, "prefix", "extract", "--tables", dir, "--store", store)
	if code != cliutil.ExitProblem || !strings.Contains(errs, fmt.Sprintf("%d of %d tables failed", len(bad), len(bad)+len(good))) {
		t.Fatalf("extract exit %d, stderr %s", code, errs)
	}
	for n := range good {
		if _, err := os.Stat(filepath.Join(store, n+".prefix")); err != nil {
			t.Errorf("good table %s has no prefix: %v", n, err)
		}
	}
}

// Acceptance: extracted prefixes equal the tables' first bytes; damage to
// one prefix, or a change to one table, makes verify exit 1 naming it.
func TestExtractAndVerifyRealTables(t *testing.T) {
	tables := realdata.CopyTables(t)
	store := t.TempDir()
	code, out, errs := runCLI(t, "prefix", "extract", "--tables", tables, "--store", store, "--jobs", "3")
	if code != 0 {
		t.Fatalf("extract exit %d: %s %s", code, out, errs)
	}
	files, _ := filepath.Glob(filepath.Join(tables, "*.rtb[wz]"))
	for _, f := range files {
		l, err := prefix.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src, _ := os.ReadFile(f)
		got, err := os.ReadFile(filepath.Join(store, filepath.Base(f)+".prefix"))
		if err != nil || !bytes.Equal(got, src[:l.Prefix]) {
			t.Fatalf("%s: prefix (%d bytes, %v) is not the first %d bytes", f, len(got), err, l.Prefix)
		}
	}
	for _, args := range [][]string{{}, {"--full"}} {
		if code, out, _ := runCLI(t, append([]string{"prefix", "verify", "--tables", tables, "--store", store}, args...)...); code != 0 {
			t.Fatalf("verify %v on a fresh store: exit %d\n%s", args, code, out)
		}
	}

	damage := []struct {
		name, kind string
		do         func()
		undo       func()
	}{}
	pp := func(n string) string { return filepath.Join(store, n+".prefix") }
	save := func(p string) func() {
		b, _ := os.ReadFile(p)
		st, _ := os.Stat(p)
		return func() { os.WriteFile(p, b, 0o644); os.Chtimes(p, st.ModTime(), st.ModTime()) }
	}
	damage = append(damage,
		struct {
			name, kind string
			do         func()
			undo       func()
		}{"KRvKP.rtbw", "CORRUPT", func() {
			b, _ := os.ReadFile(pp("KRvKP.rtbw"))
			b[len(b)-100] ^= 1
			os.WriteFile(pp("KRvKP.rtbw"), b, 0o644)
		}, save(pp("KRvKP.rtbw"))},
		struct {
			name, kind string
			do         func()
			undo       func()
		}{"KQPvK.rtbz", "TRUNCATED", func() { os.Truncate(pp("KQPvK.rtbz"), 1000) }, save(pp("KQPvK.rtbz"))},
		struct {
			name, kind string
			do         func()
			undo       func()
		}{"KNvK.rtbw", "MISSING", func() { os.Remove(pp("KNvK.rtbw")) }, save(pp("KNvK.rtbw"))},
		struct {
			name, kind string
			do         func()
			undo       func()
		}{"KPvKP.rtbz", "STALE", func() {
			p := filepath.Join(tables, "KPvKP.rtbz")
			b, _ := os.ReadFile(p)
			b[len(b)-200] ^= 1
			os.WriteFile(p, b, 0o644)
			later := time.Now().Add(time.Second)
			os.Chtimes(p, later, later)
		}, save(filepath.Join(tables, "KPvKP.rtbz"))},
	)
	for _, d := range damage {
		d.do()
		for _, args := range [][]string{{}, {"--full"}, {"--json"}} {
			code, out, _ := runCLI(t, append([]string{"prefix", "verify", "--tables", tables, "--store", store}, args...)...)
			if code != cliutil.ExitProblem || !strings.Contains(out, d.name) || (args == nil && !strings.Contains(out, d.kind+" "+d.name)) {
				t.Errorf("%s %s, verify %v: exit %d\n%s", d.kind, d.name, args, code, out)
			}
		}
		d.undo()
	}
	if code, out, _ := runCLI(t, "prefix", "verify", "--tables", tables, "--store", store, "--full"); code != 0 {
		t.Fatalf("after undoing the damage: exit %d\n%s", code, out)
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"prefix", "stats"},
		{"prefix", "extract", "--store", dir},
		{"prefix", "extract", "--tables", dir, "--store", dir, "--upto", "data"},
		{"prefix", "plan", "--tables", dir, "--capacity", "12 apples"},
		{"prefix", "verify", "--tables", dir},
		{"prefix", "nosuch"},
		{"prefix", "extract", "--tables", dir, "--store", dir, "--jobs", "0"},
	} {
		if code, _, errs := runCLI(t, args...); code != cliutil.ExitUsage {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errs)
		}
	}
}

// Issue 12 defect 6: --jobs 1000000 ended in a fatal out-of-memory error.
// Above prefix.MaxJobs every subcommand refuses with a usage error (exit 2)
// naming the bound, before it reads a table or touches the store.
func TestHugeJobsIsUsageError(t *testing.T) {
	tables, store := t.TempDir(), t.TempDir()
	if _, _, err := prefixtest.WriteTable(tables, prefixtest.Spec{Name: "KRvK.rtbw"}); err != nil {
		t.Fatal(err)
	}
	huge := "1000000"
	for _, args := range [][]string{
		{"prefix", "extract", "--tables", tables, "--store", store, "--jobs", huge},
		{"prefix", "verify", "--tables", tables, "--store", store, "--jobs", huge},
		{"prefix", "stats", "--jobs", huge, tables},
		{"prefix", "plan", "--tables", tables, "--capacity", "1GiB", "--jobs", huge},
		{"prefix", "extract", "--tables", tables, "--store", store, "--jobs", fmt.Sprint(prefix.MaxJobs + 1)},
	} {
		code, out, errs := runCLI(t, args...)
		if code != cliutil.ExitUsage || !strings.Contains(errs, fmt.Sprintf("give 1 to %d", prefix.MaxJobs)) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 naming the bound", args, code, out, errs)
		}
	}
	if ents, _ := os.ReadDir(store); len(ents) != 0 {
		t.Errorf("the store was touched: %v", ents)
	}
	if code, _, errs := runCLI(t, "prefix", "extract", "--tables", tables, "--store", store, "--jobs", fmt.Sprint(prefix.MaxJobs)); code != 0 {
		t.Errorf("--jobs %d (the bound) refused: exit %d %s", prefix.MaxJobs, code, errs)
	}
}

func TestPlanCLI(t *testing.T) {
	dir := realdata.Tables(t)
	code, out, _ := runCLI(t, "prefix", "plan", "--tables", dir, "--capacity", "1GiB")
	if code != 0 || !strings.Contains(out, "FITS") {
		t.Fatalf("1 GiB: exit %d\n%s", code, out)
	}
	code, out, errs := runCLI(t, "prefix", "plan", "--tables", dir, "--capacity", "240KiB", "--list")
	if code != cliutil.ExitProblem || !strings.Contains(out, "rule:") || !strings.Contains(out, "sparse-index") || !strings.Contains(errs, "does not fit") {
		t.Fatalf("240 KiB (between sparse and full, manifest and directory counted): exit %d\n%s\n%s", code, out, errs)
	}
	var p prefix.Plan
	_, out, _ = runCLI(t, "prefix", "plan", "--json", "--tables", dir, "--capacity", "240KiB")
	if err := json.Unmarshal([]byte(out), &p); err != nil || p.FitsFull || !p.FitsSparse || p.PlannedOnDisk > p.Capacity {
		t.Fatalf("plan JSON %+v, %v", p, err)
	}
}

// prefix plan --store takes the capacity from the store's file system
// (f_bavail plus the store's own files), and refuses ambiguity.
func TestPlanStoreCapacity(t *testing.T) {
	dir := realdata.Tables(t)
	store := t.TempDir()
	code, out, errs := runCLI(t, "prefix", "plan", "--json", "--tables", dir, "--store", store)
	var p prefix.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("exit %d: %v\n%s\n%s", code, err, out, errs)
	}
	free, err := prefix.Statfs(store)
	if err != nil {
		t.Fatal(err)
	}
	// other processes write to the same file system meanwhile: within 64 MiB
	if d := p.Capacity - free; d < -(64<<20) || d > 64<<20 {
		t.Errorf("capacity %d, the store's f_bavail is %d", p.Capacity, free)
	}
	if (code == 0) != p.FitsFull {
		t.Errorf("exit %d with fits_full %v", code, p.FitsFull)
	}
	for _, args := range [][]string{
		{"prefix", "plan", "--tables", dir},
		{"prefix", "plan", "--tables", dir, "--store", store, "--capacity", "1GiB"},
	} {
		if code, _, errs := runCLI(t, args...); code != cliutil.ExitUsage || !strings.Contains(errs, "--store") {
			t.Errorf("%v: exit %d (%s), want 2 naming --store", args, code, errs)
		}
	}
	missing := filepath.Join(store, "not-mounted")
	if code, _, errs := runCLI(t, "prefix", "plan", "--tables", dir, "--store", missing); code != cliutil.ExitCannotRun || !strings.Contains(errs, "not-mounted") {
		t.Errorf("missing store: exit %d (%s), want 3 naming it", code, errs)
	}
}

// synthNames are pawnless tables absent from the real set, for bulk fixtures.
func synthNames() []string {
	var names []string
	pieces := []string{"Q", "R", "B", "N"}
	for _, a := range pieces {
		for _, b := range pieces {
			names = append(names, "K"+a+"vK"+b)
			names = append(names, "K"+a+b+"vK")
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n+".rtbw", n+".rtbz")
		}
	}
	return out
}

// buildTbhost builds the real binary into a directory every user may
// enter (a test may run it as another user) and checks it has the prefix
// command group.
func buildTbhost(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "tbhost")
	build := exec.Command("go", "build", "-o", bin, "github.com/tbhost/tbhost/cmd/tbhost")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if out, _ := exec.Command(bin, "prefix", "--help").CombinedOutput(); !strings.Contains(string(out), "extract") {
		t.Fatalf("the binary has no prefix command group (main.go commands()): %s", out)
	}
	return bin
}

// The crash test: the real binary extracts slowly, is killed with SIGKILL
// mid-run, and a rerun finishes a complete, verified store.
func TestExtractKilledMidRunThenRerun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildTbhost(t)
	tables := t.TempDir()
	made := 0
	for _, n := range synthNames() {
		if _, _, err := prefixtest.WriteTable(tables, prefixtest.Spec{Name: n}); err == nil {
			made++
		}
	}
	if made < 40 {
		t.Fatalf("only %d synthetic tables", made)
	}
	args := []string{"prefix", "extract", "--tables", tables, "--store"}
	store := t.TempDir()
	cmd := exec.Command(bin, append(args, store, "--jobs", "2", "--pause-each", "100ms")...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	done := 0
	for sc.Scan() {
		if strings.Contains(sc.Text(), "] K") {
			done++
		}
		if done == 24 { // 24 files x 100 ms / 2 jobs: past the first manifest flush (every second)
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if done < 24 {
		t.Fatalf("the run ended before the kill (%d files)", done)
	}

	// Whatever is under a final name is whole.
	finals, _ := filepath.Glob(filepath.Join(store, "*.prefix"))
	if len(finals) == 0 || len(finals) >= made {
		t.Fatalf("%d of %d prefixes after the kill: not mid-run", len(finals), made)
	}
	for _, f := range finals {
		name := strings.TrimSuffix(filepath.Base(f), ".prefix")
		l, err := prefix.ParseFile(filepath.Join(tables, name))
		if err != nil {
			t.Fatal(err)
		}
		src, _ := os.ReadFile(filepath.Join(tables, name))
		got, _ := os.ReadFile(f)
		if !bytes.Equal(got, src[:l.Prefix]) {
			t.Fatalf("%s under its final name is not the whole prefix (%d of %d bytes)", f, len(got), l.Prefix)
		}
	}
	// Before the rerun, verify must not pass.
	if out, err := exec.Command(bin, "prefix", "verify", "--tables", tables, "--store", store).Output(); err == nil {
		t.Fatalf("verify passed an incomplete store:\n%s", out)
	}
	out, err := exec.Command(bin, append(args, store, "--jobs", "2")...).CombinedOutput()
	if err != nil {
		t.Fatalf("rerun: %v\n%s", err, out)
	}
	var written, skipped int
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "extract into") {
			fmt.Sscanf(line[strings.Index(line, "tables, ")+len("tables, "):], "%d written, %d unchanged since the manifest", &written, &skipped)
		}
	}
	// Prefixes whose manifest batch was flushed before the kill are skipped;
	// the rest (renamed but not yet recorded, or not done) are redone.
	if skipped == 0 || skipped > len(finals) || written+skipped != made {
		t.Fatalf("rerun wrote %d and skipped %d of %d (%d were done before the kill)\n%s", written, skipped, made, len(finals), out)
	}
	for _, mode := range [][]string{nil, {"--full"}} {
		out, err := exec.Command(bin, append([]string{"prefix", "verify", "--tables", tables, "--store", store}, mode...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("verify %v after the rerun: %v\n%s", mode, err, out)
		}
	}
}

// SIGINT mid-run: extract stops with exit 3, and its --json document still
// holds the report next to the error (README: a partial extract keeps its
// result), whose written count is what the manifest records.
func TestExtractInterruptedReportsWhatItDid(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildTbhost(t)
	tables := t.TempDir()
	// more tables than a run holds copied but not yet renamed (a batch
	// and the finisher's queue, 2*32): those are still renamed after the
	// signal, the rest is not started
	names := synthNames()
	for _, a := range "QRBN" {
		for _, b := range "QRBN" {
			for _, c := range "QRBNP" {
				names = append(names, fmt.Sprintf("K%c%cvK%c.rtbw", a, b, c), fmt.Sprintf("K%c%cvK%c.rtbz", a, b, c))
			}
		}
	}
	made := 0
	for _, n := range names {
		if _, _, err := prefixtest.WriteTable(tables, prefixtest.Spec{Name: n}); err == nil {
			made++
		}
	}
	if made < 150 {
		t.Fatalf("only %d synthetic tables", made)
	}
	store := t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "prefix", "extract", "--json", "--tables", tables, "--store", store, "--jobs", "1", "--pause-each", "100ms")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// interrupted once the first manifest lines are written (a second in)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if st, err := os.Stat(filepath.Join(store, prefix.ManifestName)); err == nil && st.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no manifest line after 30 s\n%s", stderr.String())
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	var doc struct {
		prefix.ExtractReport
		Error *cliutil.ErrorJSON `json:"error"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, stdout.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 3 || doc.Error == nil || doc.Error.ExitCode != 3 || !strings.Contains(doc.Error.Message, "interrupted") {
		t.Fatalf("extract after SIGINT: exit %d, error %+v; want exit 3 and an error object saying it was interrupted\n%s", code, doc.Error, stdout.String())
	}
	man, err := prefix.LoadManifest(store)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Tables != made || doc.Written < 1 || doc.Written >= made || len(man) != doc.Written {
		t.Errorf("report after SIGINT: %d tables, %d written; the manifest records %d; want all %d tables, some but not all written, each recorded\n%s",
			doc.Tables, doc.Written, len(man), made, stdout.String())
	}
}

// On a terminal, extract draws a progress bar (files, bytes, rate, ETA) on
// stderr; in JSON mode without a terminal stdout is only the JSON report.
func TestExtractProgressOutputs(t *testing.T) {
	tables := t.TempDir()
	for _, s := range []prefixtest.Spec{{Name: "KRvK.rtbw"}, {Name: "KPvK.rtbz"}, {Name: "KQvKQ.rtbw"}} {
		prefixtest.WriteTable(tables, s)
	}
	var out, errb bytes.Buffer
	env := &cliutil.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Runner: execx.NewRecorded(),
		IsTerminal: func() bool { return true }}
	app := &cli.App{Name: "tbhost", Flags: cliutil.GlobalFlags(), Commands: []*cli.Command{Command()}, Writer: &out, ErrWriter: &errb}
	cliutil.Install(app, env)
	if err := app.Run([]string{"tbhost", "prefix", "extract", "--tables", tables, "--store", t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errb.String(), "files 3/3") || !strings.Contains(errb.String(), "100%") {
		t.Errorf("terminal progress: %q", errb.String())
	}
	code, stdout, stderr := runCLI(t, "prefix", "extract", "--json", "--tables", tables, "--store", t.TempDir())
	var rep prefix.ExtractReport
	if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil || rep.Written != 3 || stderr != "" {
		t.Fatalf("json mode: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, _, stderr = runCLI(t, "prefix", "extract", "--tables", tables, "--store", t.TempDir())
	if code != 0 || strings.Count(stderr, "extract: [") != 3 {
		t.Fatalf("plain progress lines: %q", stderr)
	}
}

func TestExtractWithCapacityFollowsPlan(t *testing.T) {
	dir := realdata.Tables(t)
	store := t.TempDir()
	code, _, errs := runCLI(t, "prefix", "extract", "--tables", dir, "--store", store, "--capacity", "230KiB")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	man, err := prefix.LoadManifest(store)
	if err != nil {
		t.Fatal(err)
	}
	sparse := 0
	for _, e := range man {
		if e.Upto == "sparse-index" {
			sparse++
			if !strings.HasSuffix(e.Name, ".rtbw") && !strings.HasSuffix(e.Name, ".rtbz") {
				t.Errorf("odd entry %+v", e)
			}
		}
	}
	if sparse == 0 || sparse == len(man) {
		t.Fatalf("%d of %d sparse: the plan was not applied", sparse, len(man))
	}
	if code, out, _ := runCLI(t, "prefix", "verify", "--full", "--tables", dir, "--store", store); code != 0 {
		t.Fatalf("verify: %d\n%s", code, out)
	}
	if code, _, _ := runCLI(t, "prefix", "extract", "--tables", dir, "--store", store, "--capacity", "100KiB"); code != cliutil.ExitProblem {
		t.Fatalf("capacity below the sparse prefixes: exit %d, want 1", code)
	}
	if code, _, _ := runCLI(t, "prefix", "extract", "--tables", dir, "--store", store, "--capacity", "1GiB", "--upto", "sparse-index"); code != cliutil.ExitUsage {
		t.Fatalf("--capacity with --upto: exit %d, want 2", code)
	}
}

// Flags after the directories are flags (cliutil.FlagsFirst), not directories.
func TestStatsFlagAfterDirectoryIsAFlag(t *testing.T) {
	dir := t.TempDir()
	prefixtest.WriteTable(dir, prefixtest.Spec{Name: "KRvK.rtbw"})
	code, out, errs := runCLI(t, "prefix", "stats", dir, "--json")
	if code != 0 || !strings.HasPrefix(out, "{") {
		t.Fatalf("exit %d, %s%s", code, out, errs)
	}
}

func TestVerifyProgressOnlyOnTerminal(t *testing.T) {
	tables := t.TempDir()
	for _, s := range []prefixtest.Spec{{Name: "KRvK.rtbw"}, {Name: "KPvK.rtbz"}} {
		prefixtest.WriteTable(tables, s)
	}
	store := t.TempDir()
	if code, _, errs := runCLI(t, "prefix", "extract", "--tables", tables, "--store", store); code != 0 {
		t.Fatal(errs)
	}
	var out, errb bytes.Buffer
	env := &cliutil.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Runner: execx.NewRecorded(),
		IsTerminal: func() bool { return true }}
	app := &cli.App{Name: "tbhost", Flags: cliutil.GlobalFlags(), Commands: []*cli.Command{Command()}, Writer: &out, ErrWriter: &errb}
	cliutil.Install(app, env)
	if err := app.Run([]string{"tbhost", "prefix", "verify", "--tables", tables, "--store", store}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errb.String(), "files 2/2") {
		t.Errorf("terminal: no progress bar in %q", errb.String())
	}
	if code, _, errs := runCLI(t, "prefix", "verify", "--tables", tables, "--store", store); code != 0 || errs != "" {
		t.Errorf("cron: exit %d, stderr %q (want silence)", code, errs)
	}
}

func TestProgressBarWithNothingToDo(t *testing.T) {
	var w bytes.Buffer
	p := &barProgress{w: &w}
	p.Begin(0, 0)
	p.End()
	l := &lineProgress{w: &w}
	l.Begin(0, 0)
	l.End()
	if !strings.Contains(w.String(), "0 prefixes to write") {
		t.Errorf("%q", w.String())
	}
}
