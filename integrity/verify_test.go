package integrity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/realdata"
)

func realLists(t testing.TB, list string) (ChecksumList, map[string]int64, map[string]string) {
	t.Helper()
	base := filepath.Join(realdata.Dir(t), "checksums", "syzygy-tables.info")
	cl, err := ReadChecksumList(filepath.Join(base, list), "")
	if err != nil {
		t.Fatal(err)
	}
	sizes, _, err := ReadSizes(filepath.Join(base, "bytes.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	tr, _, err := ReadTrailers(filepath.Join(base, "tbcheck.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return cl, sizes, tr
}

func verdicts(rep VerifyReport, v string) []string {
	var out []string
	for _, f := range rep.Files {
		if f.Verdict == v {
			out = append(out, f.Name)
		}
	}
	sort.Strings(out)
	return out
}

func TestVerifyRealTablesEveryAlgorithm(t *testing.T) {
	syzygyDir := realdata.Dir(t)
	for _, list := range []string{"md5", "sha1", "sha256", "sha512", "sha3-224"} {
		t.Run(list, func(t *testing.T) {
			cl, sizes, tr := realLists(t, list)
			if string(cl.Algo) != list {
				t.Fatalf("list %s detected as %s", list, cl.Algo)
			}
			rep, err := Verify(context.Background(), VerifyOptions{
				Dirs: []string{filepath.Join(syzygyDir, "tables")}, Checksums: &cl, Sizes: sizes, Trailers: tr, Jobs: 2,
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := verdicts(rep, VerdictMismatch); !reflect.DeepEqual(got, realdata.OldGenerator) {
				t.Fatalf("mismatches %v, want exactly the old generator's %v", got, realdata.OldGenerator)
			}
			if rep.OK != 24 || len(rep.Files) != 30 || rep.Unlisted != 0 {
				t.Fatalf("ok %d of %d files (unlisted %d), want 24 of 30", rep.OK, len(rep.Files), rep.Unlisted)
			}
			if len(rep.Missing) != 3022-30 || rep.ProblemsFound != true {
				t.Fatalf("missing %d, problems %v", len(rep.Missing), rep.ProblemsFound)
			}
			for _, f := range rep.Files {
				if f.Verdict != VerdictMismatch {
					continue
				}
				// both digests are named, and they differ
				if len(f.Expected) != cl.Algo.HexLen() || len(f.Actual) != cl.Algo.HexLen() || f.Expected == f.Actual {
					t.Errorf("%s: expected %q actual %q", f.Name, f.Expected, f.Actual)
				}
				if !strings.Contains(strings.Join(f.Problems, "\n"), f.Expected) {
					t.Errorf("%s: problems %q do not name the published digest", f.Name, f.Problems)
				}
			}
		})
	}
}

func TestVerifyRealTablesCheapChecksOnly(t *testing.T) {
	syzygyDir := realdata.Dir(t)
	_, sizes, tr := realLists(t, "md5")
	rep, err := Verify(context.Background(), VerifyOptions{Dirs: []string{filepath.Join(syzygyDir, "tables")}, Sizes: sizes, Trailers: tr})
	if err != nil {
		t.Fatal(err)
	}
	// without hashing, the trailers alone catch all six; KQvK.rtbz and KRvK.rtbz also differ in size
	if got := verdicts(rep, VerdictMismatch); !reflect.DeepEqual(got, realdata.OldGenerator) {
		t.Fatalf("mismatches %v", got)
	}
	if rep.BytesHashed != 0 {
		t.Fatalf("hashed %d bytes in cheap mode", rep.BytesHashed)
	}
	sizeBad := 0
	for _, f := range rep.Files {
		for _, p := range f.Problems {
			if strings.HasPrefix(p, "size ") {
				sizeBad++
			}
		}
	}
	if sizeBad != 2 {
		t.Errorf("%d size mismatches, want 2 (KQvK.rtbz, KRvK.rtbz)", sizeBad)
	}
}

func TestVerifyCatchesFlippedByteInCopy(t *testing.T) {
	syzygyDir := realdata.Dir(t)
	cl, sizes, tr := realLists(t, "sha256")
	dir := t.TempDir()
	for _, n := range []string{"KRvKP.rtbw", "KBNvK.rtbz"} {
		b, err := os.ReadFile(filepath.Join(syzygyDir, "tables", n))
		if err != nil {
			t.Fatal(err)
		}
		if n == "KRvKP.rtbw" {
			b[len(b)/2] ^= 0x01 // one bit in the middle of the data blocks
		}
		os.WriteFile(filepath.Join(dir, n), b, 0o644)
	}
	rep, err := Verify(context.Background(), VerifyOptions{Dirs: []string{dir}, Checksums: &cl, Sizes: sizes, Trailers: tr})
	if err != nil {
		t.Fatal(err)
	}
	if got := verdicts(rep, VerdictMismatch); !reflect.DeepEqual(got, []string{"KRvKP.rtbw"}) {
		t.Fatalf("mismatches %v", got)
	}
	if rep.OK != 1 {
		t.Fatalf("ok %d", rep.OK)
	}
	// size and trailer are intact: only the digest can catch a flip in the middle
	for _, f := range rep.Files {
		if f.Name == "KRvKP.rtbw" && (len(f.Problems) != 1 || !strings.Contains(f.Problems[0], "sha256 differs")) {
			t.Errorf("problems %q", f.Problems)
		}
	}
}

// synthetic fixture: n files with a sha256 list; returns dir, list path.
func syntheticTables(t *testing.T, n, size int) (string, string) {
	t.Helper()
	dir := t.TempDir()
	tables := filepath.Join(dir, "tables")
	os.Mkdir(tables, 0o755)
	var list strings.Builder
	for i := 0; i < n; i++ {
		b := make([]byte, size+i)
		for j := range b {
			b[j] = byte(i*31 + j*7)
		}
		name := fmt.Sprintf("K%dvK.rtbw", i)
		os.WriteFile(filepath.Join(tables, name), b, 0o644)
		s := sha256.Sum256(b)
		fmt.Fprintf(&list, "%s  %s\n", hex.EncodeToString(s[:]), name)
	}
	fmt.Fprintf(&list, "%s  KMISSINGvK.rtbw\n", strings.Repeat("ab", 32))
	lp := filepath.Join(dir, "sha256")
	os.WriteFile(lp, []byte(list.String()), 0o644)
	os.WriteFile(filepath.Join(tables, "README"), []byte("not a table"), 0o644)
	os.WriteFile(filepath.Join(tables, ".hidden"), []byte("skipped"), 0o644)
	return tables, lp
}

func TestVerifySyntheticUnlistedMissingComplete(t *testing.T) {
	tables, lp := syntheticTables(t, 4, 1000)
	cl, err := ReadChecksumList(lp, "")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(context.Background(), VerifyOptions{Dirs: []string{tables}, Checksums: &cl})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK != 4 || rep.Unlisted != 1 || !reflect.DeepEqual(rep.Missing, []string{"KMISSINGvK.rtbw"}) {
		t.Fatalf("ok %d unlisted %d missing %v", rep.OK, rep.Unlisted, rep.Missing)
	}
	if rep.ProblemsFound {
		t.Fatal("missing files are not a problem without --complete")
	}
	rep, _ = Verify(context.Background(), VerifyOptions{Dirs: []string{tables}, Checksums: &cl, Complete: true})
	if !rep.ProblemsFound {
		t.Fatal("--complete: a listed file missing on disk is a problem")
	}
}

func TestVerifyResumesFromStateAfterInterrupt(t *testing.T) {
	tables, lp := syntheticTables(t, 6, 3<<20)
	cl, _ := ReadChecksumList(lp, "")
	state := filepath.Join(t.TempDir(), "verify.state")
	ctx, cancel := context.WithCancel(context.Background())
	var seen int64
	rep, err := Verify(ctx, VerifyOptions{Dirs: []string{tables}, Checksums: &cl, StatePath: state, Jobs: 1,
		Progress: func(n int64) {
			seen += n
			if seen > 7<<20 { // in the third file
				cancel()
			}
		}})
	if err == nil || !rep.Interrupted {
		t.Fatalf("want an interrupted run, got err %v", err)
	}
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("no state file after interrupt: %v", err)
	}
	rep2, err := Verify(context.Background(), VerifyOptions{Dirs: []string{tables}, Checksums: &cl, StatePath: state, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if rep2.Resumed != 2 || rep2.OK != 6 {
		t.Fatalf("resumed %d ok %d; want 2 files taken from the state, 6 ok", rep2.Resumed, rep2.OK)
	}
	if max := int64(4*(3<<20) + 4*5); rep2.BytesHashed > max {
		t.Fatalf("rerun hashed %d bytes, more than the 4 remaining files (%d)", rep2.BytesHashed, max)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Fatalf("a finished run must remove its state (next run re-hashes): %v", err)
	}
	// a file changed since the state was written is hashed again, not trusted
	ctx, cancel = context.WithCancel(context.Background())
	seen = 0
	Verify(ctx, VerifyOptions{Dirs: []string{tables}, Checksums: &cl, StatePath: state, Jobs: 1,
		Progress: func(n int64) {
			seen += n
			if seen > 7<<20 {
				cancel()
			}
		}})
	var victim string
	for _, f := range rep.Files {
		if f.Actual != "" {
			victim = f.Path
		}
	}
	b, _ := os.ReadFile(victim)
	b[10] ^= 0xff
	os.WriteFile(victim, b, 0o644)
	rep3, _ := Verify(context.Background(), VerifyOptions{Dirs: []string{tables}, Checksums: &cl, StatePath: state})
	if rep3.Mismatches != 1 || rep3.Resumed != 1 {
		t.Fatalf("mismatches %d resumed %d: the changed file must be re-hashed and caught", rep3.Mismatches, rep3.Resumed)
	}
}

func TestVerifyRateOnFakeClock(t *testing.T) {
	tables, lp := syntheticTables(t, 4, 2<<20)
	cl, _ := ReadChecksumList(lp, "")
	clk := newFakeClock()
	rep, err := Verify(context.Background(), VerifyOptions{Dirs: []string{tables}, Checksums: &cl, Rate: 1 << 20, Jobs: 2, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	// 8 MiB at 1 MiB/s: about 8 s of (fake) time
	if rep.Seconds < 7.5 || rep.Seconds > 8.5 {
		t.Fatalf("8 MiB at 1 MiB/s took %.2f fake seconds", rep.Seconds)
	}
}

func TestReadChecksumListFormats(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	md := strings.Repeat("a", 32)
	l, err := ReadChecksumList(write("list", "# comment\n"+md+"  sub/KQvK.rtbw\n"+strings.ToUpper(strings.Repeat("b", 32))+" *KRvK.rtbz\n\n"), "")
	if err != nil || l.Algo != MD5 || l.Digests["KQvK.rtbw"] != md || l.Digests["KRvK.rtbz"] != strings.Repeat("b", 32) {
		t.Fatalf("%v %+v", err, l)
	}
	for name, content := range map[string]string{
		"mixed":   md + "  a\n" + strings.Repeat("c", 40) + "  b\n",
		"nothex":  "zzzz  a\n",
		"noname":  md + "\n",
		"odd-len": strings.Repeat("a", 30) + "  x\n",
		"b2":      strings.Repeat("a", 128) + "  x\n",
		"empty":   "\n",
	} {
		if _, err := ReadChecksumList(write(name, content), ""); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
	if _, err := ReadChecksumList(write("sha-any", md+"  x\n"), SHA256); err == nil || !strings.Contains(err.Error(), "--algo") {
		t.Errorf("32-digit list with --algo sha256: %v", err)
	}
	if _, err := ParseAlgo("b3"); err == nil {
		t.Error("blake3 is not supported and must say so")
	}
	if a, err := ParseAlgo("SHA-512"); err != nil || a != SHA512 {
		t.Errorf("%v %v", a, err)
	}
}

// Audit: a dangling symlink under the tables failed the whole run. One
// with a table's name is that table unreadable (a problem); one with
// another name (notes.txt) is left out; the other tables are checked.
func TestVerifyDanglingSymlinks(t *testing.T) {
	tables, lp := syntheticTables(t, 3, 1000)
	cl, _ := ReadChecksumList(lp, "")
	os.Symlink(filepath.Join(tables, "gone"), filepath.Join(tables, "notes.txt"))
	rep, err := Verify(context.Background(), VerifyOptions{Dirs: []string{tables}, Checksums: &cl})
	if err != nil || rep.OK != 3 || rep.ProblemsFound {
		t.Fatalf("dangling notes.txt: %v, ok %d, problems %v", err, rep.OK, rep.ProblemsFound)
	}
	os.Remove(filepath.Join(tables, "K0vK.rtbw"))
	os.Symlink("/unmounted/K0vK.rtbw", filepath.Join(tables, "K0vK.rtbw"))
	rep, err = Verify(context.Background(), VerifyOptions{Dirs: []string{tables}, Checksums: &cl})
	if err != nil || rep.OK != 2 || rep.Unreadable != 1 || !rep.ProblemsFound || !reflect.DeepEqual(verdicts(rep, VerdictUnreadable), []string{"K0vK.rtbw"}) {
		t.Fatalf("dangling K0vK.rtbw: %v, ok %d, unreadable %v", err, rep.OK, verdicts(rep, VerdictUnreadable))
	}
}

// Audit: table files in no list passed as a clean run. They are a
// problem; a README in no list is not.
func TestVerifyUnlistedTablesAreAProblem(t *testing.T) {
	tables, lp := syntheticTables(t, 3, 1000) // with a README
	cl, _ := ReadChecksumList(lp, "")
	delete(cl.Digests, "K2vK.rtbw")
	rep, err := Verify(context.Background(), VerifyOptions{Dirs: []string{tables}, Checksums: &cl})
	if err != nil || rep.Unlisted != 2 || rep.UnlistedTables != 1 || !rep.ProblemsFound {
		t.Fatalf("%v: unlisted %d, of them tables %d, problems %v", err, rep.Unlisted, rep.UnlistedTables, rep.ProblemsFound)
	}
}

// Audit: an empty directory was "NOTHING CHECKED" (exit 1) here but "no
// table file" (exit 3) in prefix. No table file at all is ErrNoTables.
func TestVerifyNoTableFile(t *testing.T) {
	_, lp := syntheticTables(t, 2, 100)
	cl, _ := ReadChecksumList(lp, "")
	dir := t.TempDir()
	if _, err := Verify(context.Background(), VerifyOptions{Dirs: []string{dir}, Checksums: &cl}); !errors.Is(err, ErrNoTables) {
		t.Fatalf("empty directory: %v, want ErrNoTables", err)
	}
	os.WriteFile(filepath.Join(dir, "README"), []byte("x"), 0o644)
	os.Symlink("gone", filepath.Join(dir, "notes.txt"))
	if _, err := Verify(context.Background(), VerifyOptions{Dirs: []string{dir}, Checksums: &cl}); !errors.Is(err, ErrNoTables) {
		t.Fatalf("a README and a dangling notes.txt: %v, want ErrNoTables", err)
	}
	// a dangling link that may have been a directory of tables (an
	// unmounted disk) is no "no table file": it is reported, unreadable
	os.Symlink("/unmounted/7", filepath.Join(dir, "7-pieces"))
	rep, err := Verify(context.Background(), VerifyOptions{Dirs: []string{dir}, Checksums: &cl})
	if err != nil || rep.Unreadable != 1 || !rep.ProblemsFound {
		t.Fatalf("a dangling 7-pieces: %v, unreadable %d, want 1 and a problem", err, rep.Unreadable)
	}
	os.Remove(filepath.Join(dir, "7-pieces"))
	os.WriteFile(filepath.Join(dir, "KQRvKQR.rtbw"), []byte("x"), 0o644)
	rep, err = Verify(context.Background(), VerifyOptions{Dirs: []string{dir}, Checksums: &cl})
	if err != nil || !rep.NothingChecked || !rep.ProblemsFound {
		t.Fatalf("a table none of the list names: %v, nothing checked %v", err, rep.NothingChecked)
	}
}

// Two verify-tables runs on one --state (a nightly run still hashing when
// the next starts): the second is refused at once naming the lock, hashes
// nothing and leaves the first one's state alone; once the first ends the
// next runs, and a run killed mid-checkpoint leaves no temporary file for
// good. Without --state there is nothing to share and no lock.
func TestVerifyRefusesWhileAnotherRunHoldsTheState(t *testing.T) {
	tables, lp := syntheticTables(t, 3, 64<<10)
	cl, _ := ReadChecksumList(lp, "")
	state := filepath.Join(t.TempDir(), "verify.state")
	if err := os.WriteFile(state, []byte(`{"version":1,"files":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(state)
	unlock, err := lockVerifyState(state) // the first run, at work
	if err != nil {
		t.Fatal(err)
	}
	var hashed int64
	_, err = Verify(context.Background(), VerifyOptions{Dirs: []string{tables}, Checksums: &cl, StatePath: state,
		Progress: func(n int64) { hashed += n }})
	if !errors.Is(err, ErrVerifyBusy) || !strings.Contains(err.Error(), state+".lock") {
		t.Fatalf("a second run on a held state: %v; want ErrVerifyBusy naming the lock", err)
	}
	if after, _ := os.ReadFile(state); hashed != 0 || string(after) != string(before) {
		t.Fatalf("the refused run hashed %d bytes or changed the state", hashed)
	}
	if rep, err := Verify(context.Background(), VerifyOptions{Dirs: []string{tables}, Checksums: &cl}); err != nil || rep.OK != 3 {
		t.Fatalf("a run without --state beside it: %v, %d ok", err, rep.OK)
	}
	unlock()
	left := filepath.Join(filepath.Dir(state), ".verify.state.tmp42")
	if err := os.WriteFile(left, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep, err := Verify(context.Background(), VerifyOptions{Dirs: []string{tables}, Checksums: &cl, StatePath: state}); err != nil || rep.OK != 3 {
		t.Fatalf("after the first run ended: %v, %d ok", err, rep.OK)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("a killed run's temporary state is still there: %v", err)
	}
}
