package bench

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tbhost/tbhost/prefix/prefixtest"
)

func TestCheckOpenFilesCountsWhatEachConfigurationHolds(t *testing.T) {
	pread := ProbeConfig{IO: IOPread, Advise: AdviseNormal, Parallel: 1}
	store := pread
	store.Store = "/srv/prefix"
	mmap := ProbeConfig{IO: IOMmap, Advise: AdviseNormal, Parallel: 1, Store: "/srv/prefix"}
	const open = 10 // descriptors open before the tables
	for _, tc := range []struct {
		name  string
		c     ProbeConfig
		limit uint64
		ok    bool
	}{
		{"pread, the full set, exactly enough", pread, 3022 + openFilesSlack + open, true},
		{"pread, the full set, one short", pread, 3022 + openFilesSlack + open - 1, false},
		{"pread, the full set, the traditional 1024", pread, 1024, false},
		{"pread with a store, twice the files", store, 3022 + openFilesSlack + open, false},
		{"pread with a store, enough", store, 2*3022 + openFilesSlack + open, true},
		{"mmap keeps none open", mmap, 1024, true},
		{"mmap, with the limit all but used", mmap, 2 + openFilesSlack + open - 1, false},
	} {
		err := checkOpenFiles(tc.c, 3022, fileUse{limit: tc.limit, open: open})
		if (err == nil) != tc.ok {
			t.Errorf("%s: limit %d: %v, want ok=%v", tc.name, tc.limit, err, tc.ok)
			continue
		}
		if err != nil {
			wants := []string{"--io pread keeps every table file", "3022 tables", "with the 10 open now", "may open " + strconv.FormatUint(tc.limit, 10), "ulimit -n", "LimitNOFILE=", "or use --io mmap"}
			if tc.c.IO == IOMmap {
				wants[0], wants[len(wants)-1] = "--io mmap opens each table file", "in a systemd unit; `ulimit -Hn` shows the hard limit)"
				if strings.Contains(err.Error(), "use --io mmap") {
					t.Errorf("%s: %q advises mmap to an mmap run", tc.name, err)
				}
			}
			for _, want := range wants {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s: %q lacks %q", tc.name, err, want)
				}
			}
		}
	}
}

// smallTableSet writes n synthetic 3-4 piece tables (both kinds) and a
// prefix store for them; it returns the loaded set and the store.
func smallTableSet(t *testing.T, n int) (*TableSet, string) {
	t.Helper()
	dir, store := t.TempDir(), t.TempDir()
	var names []string
	for _, a := range "QRBNP" {
		names = append(names, "K"+string(a)+"vK")
		for _, b := range "QRBNP" {
			names = append(names, "K"+string(a)+"vK"+string(b))
		}
	}
	if 2*len(names) < n {
		t.Fatalf("only %d names for %d tables", 2*len(names), n)
	}
	for i := 0; i < n; i++ {
		name := names[i/2] + [2]string{".rtbw", ".rtbz"}[i%2]
		subs := make([]prefixtest.Sub, prefixtest.NumSubtables(name))
		if _, _, err := prefixtest.WriteTable(dir, prefixtest.Spec{Name: name, Subs: subs}); err != nil {
			t.Fatal(err)
		}
	}
	set, err := LoadTables(context.Background(), []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := set.ExtractStore(context.Background(), store); err != nil {
		t.Fatal(err)
	}
	return set, store
}

// lowerOpenFileLimit sets the process's soft RLIMIT_NOFILE to cur for the
// rest of the test.
func lowerOpenFileLimit(t *testing.T, cur uint64) {
	t.Helper()
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if cur > lim.Max {
		t.Skipf("the hard limit on open files is %d, below the %d this test sets", lim.Max, cur)
	}
	saved := lim
	lim.Cur = cur
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_NOFILE, &saved) })
}

func openDescriptors(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count this process's descriptors: %v", err)
	}
	return len(ents)
}

// Under a limit too low for the set, opening it for pread is refused
// before a single table is opened, with the count and the fix; mmap,
// which holds no table open, runs under the same limit.
func TestOpenRefusesATableSetOverTheOpenFileLimit(t *testing.T) {
	set, store := smallTableSet(t, 40)
	limit := uint64(openDescriptors(t) + 30) // room for 30 more: not 40 tables, with mmap the slack and two
	lowerOpenFileLimit(t, limit)
	for _, c := range []ProbeConfig{
		{IO: IOPread, Advise: AdviseRandom, Parallel: 1},
		{IO: IOPread, Advise: AdviseNormal, Parallel: 4, Store: store},
	} {
		before := openDescriptors(t)
		_, closers, _, err := set.open(c, c.Parallel == 1)
		if err == nil {
			t.Fatalf("%s: opened 40 tables with room for 30 more open files", c.Name())
		}
		if len(closers) != 0 || openDescriptors(t) != before {
			t.Errorf("%s: refused after opening files (%d closers, %d descriptors before, %d after)", c.Name(), len(closers), before, openDescriptors(t))
		}
		for _, want := range []string{"40 tables need about", "may open " + strconv.FormatUint(limit, 10), "ulimit -n 1024", "--io mmap"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q lacks %q", c.Name(), err, want)
			}
		}
	}
	mm := ProbeConfig{IO: IOMmap, Advise: AdviseNormal, Parallel: 1, Store: store}
	readers, closers, _, err := set.open(mm, true)
	for _, cl := range closers {
		cl.Close()
	}
	if err != nil || len(readers) != 40 {
		t.Fatalf("mmap through the store under the same limit: %d readers, %v", len(readers), err)
	}
}

// When the opens meet the limit anyway (descriptors opened after the
// check, the system's own limit), the error is the limit's, with the fix,
// and not the store's advice to rebuild a prefix that is there.
func TestOpenAtTheOpenFileLimitSaysHowToRaiseIt(t *testing.T) {
	set, store := smallTableSet(t, 40)
	limit := uint64(openDescriptors(t) + 20) // room for 20 more: 80 files do not fit
	lowerOpenFileLimit(t, limit)
	_, closers, _, err := set.openAll(ProbeConfig{IO: IOPread, Advise: AdviseRandom, Parallel: 1, Store: store}, true)
	for _, cl := range closers {
		cl.Close()
	}
	if err == nil {
		t.Fatal("opened 80 files with room for 20")
	}
	if !tooManyOpenFiles(err) {
		t.Fatalf("want the descriptor limit's error, got %v", err)
	}
	if !strings.Contains(err.Error(), "raise the limit") || strings.Contains(err.Error(), "tbhost prefix extract") {
		t.Errorf("the error should say how to raise the limit, and not to rebuild the store: %v", err)
	}
}

// manyTableSet writes a synthetic table of each kind for every material of
// three to seven pieces with more pieces on the white side (2752 files;
// those of five pieces and more with single-value subtables, so they stay
// small), extracts a prefix store for them and returns the loaded set and
// the store.
func manyTableSet(t *testing.T) (*TableSet, string) {
	t.Helper()
	dir, store := t.TempDir(), t.TempDir()
	var combos func(n int, from string) []string
	combos = func(n int, from string) []string {
		if n == 0 {
			return []string{""}
		}
		var out []string
		for i, p := range from {
			for _, rest := range combos(n-1, from[i:]) {
				out = append(out, string(p)+rest)
			}
		}
		return out
	}
	files := 0
	for pieces := 3; pieces <= 7; pieces++ {
		for black := 0; 2*black < pieces-2; black++ {
			for _, w := range combos(pieces-2-black, "QRBNP") {
				for _, b := range combos(black, "QRBNP") {
					for _, ext := range []string{".rtbw", ".rtbz"} {
						name := "K" + w + "vK" + b + ext
						subs := make([]prefixtest.Sub, prefixtest.NumSubtables(name))
						for i := range subs {
							subs[i].Single = pieces >= 5
						}
						if _, _, err := prefixtest.WriteTable(dir, prefixtest.Spec{Name: name, Subs: subs}); err != nil {
							t.Fatal(err)
						}
						files++
					}
				}
			}
		}
	}
	set, err := LoadTables(context.Background(), []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.tables) != files {
		t.Fatalf("loaded %d of %d tables", len(set.tables), files)
	}
	if err := set.ExtractStore(context.Background(), store); err != nil {
		t.Fatal(err)
	}
	return set, store
}

// readBytes is this process's read(2)/pread(2) byte count so far
// (/proc/self/io rchar).
func readBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("no rchar in /proc/self/io")
	return 0
}

// Opening a set through its store reads the store's manifest once, not
// once a table: for the 3022 tables of the full set the manifest is ~750
// KB and opening through it took 35 s, reading it 3022 times (2.3 GB).
func TestOpenThroughTheStoreReadsTheManifestOnce(t *testing.T) {
	set, store := manyTableSet(t)
	man, err := os.Stat(filepath.Join(store, "tbhost-prefix-manifest.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// each table's header parse and the prefix check read a few hundred
	// bytes; a manifest read per table would be len(set.tables) manifests
	budget := 2*man.Size() + int64(len(set.tables))*4096
	before := readBytes(t)
	_, closers, _, err := set.open(ProbeConfig{IO: IOPread, Advise: AdviseRandom, Parallel: 1, Store: store}, true)
	read := readBytes(t) - before
	for _, cl := range closers {
		cl.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("opened %d tables through a store whose manifest is %d bytes: read %d bytes", len(set.tables), man.Size(), read)
	if read > budget {
		t.Errorf("opening %d tables through the store read %d bytes, over %d: the manifest (%d bytes) is read more than once", len(set.tables), read, budget, man.Size())
	}
}
