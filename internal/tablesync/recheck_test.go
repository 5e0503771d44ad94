package tablesync_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/realdata"
	"github.com/tbhost/tbhost/internal/tablesync"
)

// localSync runs a sync of set 3 from the real tables (a local directory
// source: rsync without a daemon) with the lists of listsDir ("": none).
func localSync(t *testing.T, to, listsDir string) tablesync.Report {
	t.Helper()
	if _, err := exec.LookPath("rsync"); err != nil {
		t.Skip("SKIP: rsync not installed (Debian package rsync; `make deps` installs it)")
	}
	var lists tablesync.Lists
	if listsDir != "" {
		var err error
		if lists, err = tablesync.LoadLists(listsDir); err != nil {
			t.Fatal(err)
		}
	}
	set, _ := tablesync.ParseSet("3")
	rep, err := tablesync.Sync(context.Background(), tablesync.Options{From: realdata.Tables(t), To: to, Set: set, Lists: lists})
	if err != nil {
		t.Fatalf("sync (lists %q): %v", listsDir, err)
	}
	return rep
}

func refusedNames(rep tablesync.Report) []string {
	out := []string{}
	for _, r := range rep.Refused {
		out = append(out, r.Name)
	}
	sort.Strings(out)
	return out
}

// oldGenerator are the six 3-piece real tables the published lists
// disagree with (realdata.OldGenerator), sorted.
func oldGenerator() []string {
	out := append([]string{}, realdata.OldGenerator...)
	sort.Strings(out)
	return out
}

// checkRefusesOldGenerator: a run with the published lists over set 3
// refuses exactly the six old-generator files, keeps the four others, and
// none of the six is left in the destination.
func checkRefusesOldGenerator(t *testing.T, what string, rep tablesync.Report, to string) {
	t.Helper()
	if got := refusedNames(rep); !reflect.DeepEqual(got, oldGenerator()) {
		t.Errorf("%s: refused %v, want the old-generator files %v", what, got, oldGenerator())
	}
	if rep.AlreadyVerified+rep.Landed != 4 || rep.Complete || !rep.ProblemsFound() {
		t.Errorf("%s: %d verified before + %d landed, complete %v, problems %v; want 4 files, not complete, problems found",
			what, rep.AlreadyVerified, rep.Landed, rep.Complete, rep.ProblemsFound())
	}
	for _, n := range realdata.OldGenerator {
		if _, err := os.Stat(filepath.Join(to, n)); !os.IsNotExist(err) {
			t.Errorf("%s: %s, which fails the lists, is in the destination (%v)", what, n, err)
		}
	}
}

// Audit defect 1: files accepted by an earlier run with weaker checks were
// trusted by a later run with stronger ones ("10 verified before ...
// complete", exit 0, though 6 of them fail the published lists). Both
// routes: structure only then the lists; the lists, none, the lists again.
// Either way a run with the lists ends as a fresh run with the lists does.
func TestSyncDoesNotTrustFilesVerifiedWithFewerChecks(t *testing.T) {
	lists := filepath.Join(realdata.Dir(t), "checksums", "syzygy-tables.info")

	to := t.TempDir()
	if rep := localSync(t, to, ""); rep.Landed != 10 || !rep.Complete {
		t.Fatalf("structure only: %d landed, complete %v; want all 10 of set 3", rep.Landed, rep.Complete)
	}
	checkRefusesOldGenerator(t, "with the lists after a run without", localSync(t, to, lists), to)
	checkRefusesOldGenerator(t, "with the lists again", localSync(t, to, lists), to)

	to = t.TempDir()
	checkRefusesOldGenerator(t, "with the lists", localSync(t, to, lists), to)
	if rep := localSync(t, to, ""); rep.Landed != 6 || rep.AlreadyVerified != 4 {
		t.Fatalf("without lists after the refusals: %d landed, %d verified before; want 6, 4", rep.Landed, rep.AlreadyVerified)
	}
	rep := localSync(t, to, lists)
	checkRefusesOldGenerator(t, "with the lists after a run without copied the refused files in", rep, to)
	if rep.AlreadyVerified != 4 {
		t.Errorf("verified before %d, want 4", rep.AlreadyVerified)
	}

	// sizes and embedded checksums only (no digest list): the recorded
	// files are compared with them, not taken on the state's word
	cheap := t.TempDir()
	for _, l := range []string{"bytes.tsv", "tbcheck.txt"} {
		body, err := os.ReadFile(filepath.Join(lists, l))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(cheap, l), body, 0o644)
	}
	to = t.TempDir()
	localSync(t, to, "")
	checkRefusesOldGenerator(t, "with sizes and trailers after a run without", localSync(t, to, cheap), to)
}

// The state is outside input: a digest it records is only a pass when the
// current list publishes the same one. Files verified against other lists
// (here a sha256 list of the files' own digests, as an outdated or wrong
// list would be) fail against the published one; a recorded digest edited
// by hand is a finding, and the file is checked again from disk.
func TestSyncComparesTheStateDigestWithTheList(t *testing.T) {
	data := realdata.Dir(t)
	own := t.TempDir()
	var b strings.Builder
	names, _ := filepath.Glob(filepath.Join(data, "tables", "K?vK.rtb[wz]"))
	for _, p := range names {
		body, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(body)
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(sum[:]), filepath.Base(p))
	}
	if err := os.WriteFile(filepath.Join(own, "sha256"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// the published sha256 alone: the trailers cannot catch what the digest misses
	published := t.TempDir()
	body, err := os.ReadFile(filepath.Join(data, "checksums", "syzygy-tables.info", "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(published, "sha256"), body, 0o644)

	to := t.TempDir()
	if rep := localSync(t, to, own); rep.Landed != 10 || !rep.Complete {
		t.Fatalf("against the files' own digests: %d landed, complete %v; want all 10", rep.Landed, rep.Complete)
	}
	rep := localSync(t, to, published)
	checkRefusesOldGenerator(t, "against the published sha256 after other lists", rep, to)
	if w := strings.Join(rep.Warnings, "\n"); !strings.Contains(w, "records sha256") || !strings.Contains(w, "KQvK.rtbw") {
		t.Errorf("the state's digests the list disagrees with are not reported:\n%s", w)
	}

	// a good file's recorded digest edited: not a pass on the state's word,
	// nor a refusal: the file is read again, verifies, and its digest is
	// recorded anew
	statePath := filepath.Join(to, ".tbhost-sync", "state.json")
	var st map[string]any
	raw, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // mtime_ns does not survive a float64
	if err := dec.Decode(&st); err != nil {
		t.Fatal(err)
	}
	files := st["files"].(map[string]any)
	entry := files["KBvK.rtbw"].(map[string]any)
	good := entry["digest"]
	entry["digest"] = strings.Repeat("0", 64)
	raw, _ = json.Marshal(st)
	os.WriteFile(statePath, raw, 0o644)
	rep = localSync(t, to, published)
	checkRefusesOldGenerator(t, "after the state was edited", rep, to)
	if w := strings.Join(rep.Warnings, "\n"); !strings.Contains(w, "sha256 "+strings.Repeat("0", 64)+" for KBvK.rtbw") {
		t.Errorf("the edited state entry is not reported:\n%s", w)
	}
	raw, _ = os.ReadFile(statePath)
	json.Unmarshal(raw, &st)
	if got := st["files"].(map[string]any)["KBvK.rtbw"].(map[string]any)["digest"]; got != good {
		t.Errorf("KBvK.rtbw's digest in the state after the rerun: %v, want %v", got, good)
	}
}
