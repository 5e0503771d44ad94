package prefix

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tbhost/tbhost/prefix/prefixtest"
	"golang.org/x/sys/unix"
)

// coldSpecs is the cold-read fixture of issue 16: 5- and 6-piece tables
// whose data sections are several times their prefixes, so that any
// readahead past a prefix shows in the physical reads.
func coldSpecs(n int) []prefixtest.Spec {
	var out []prefixtest.Spec
	for _, m := range []string{"KQRvKRB", "KRBvKQN", "KQNvKRR", "KRRvKBN"} {
		out = append(out, prefixtest.Spec{Name: m + ".rtbz", Subs: []prefixtest.Sub{{IdxBits: 18, BlockSizeLog: 6}}})
	}
	pieces := []string{"Q", "R", "B", "N"}
	for _, a := range pieces {
		for _, b := range pieces {
			for _, c := range pieces {
				for _, m := range []string{"K" + a + b + "vK" + c, "K" + a + b + c + "vK"} {
					for _, ext := range []string{".rtbw", ".rtbz"} {
						if len(out) == n {
							return out
						}
						sub := prefixtest.Sub{IdxBits: 13, BlockSizeLog: 9}
						subs := []prefixtest.Sub{sub}
						if prefixtest.NumSubtables(m+ext) == 2 {
							subs = append(subs, sub)
						}
						out = append(out, prefixtest.Spec{Name: m + ext, Subs: subs})
					}
				}
			}
		}
	}
	return out
}

// dropCaches empties the page cache (root only) and reads this test's own
// executable back in, so that faulting in its code does not count as the
// run's reads. It skips, saying why, where that is impossible.
func dropCaches(t *testing.T) {
	t.Helper()
	unix.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0); err != nil {
		t.Skipf("cold-cache test needs root to write /proc/sys/vm/drop_caches: %v", err)
	}
	if _, err := os.ReadFile("/proc/self/exe"); err != nil {
		t.Fatalf("read own executable back into the cache: %v", err)
	}
}

// largeSpecs are four tables with prefixes of tens of MB, as real 6-7
// piece ones have (the ratio benchmark's large set).
func largeSpecs() []prefixtest.Spec {
	var large []prefixtest.Spec
	for _, m := range []string{"KQRvKRB", "KRBvKQN", "KQNvKRR", "KRRvKBN"} {
		large = append(large, prefixtest.Spec{Name: m + ".rtbz", Subs: []prefixtest.Sub{{IdxBits: 10, BlockSizeLog: 6}}})
	}
	return large
}

// coldFixture writes the tables of specs on a disk-backed file system, or
// skips. Each table's data section must be at least minData bytes (0:
// four times its prefix), so that readahead past a prefix shows.
func coldFixture(t *testing.T, specs []prefixtest.Spec, minData int64) (tables string, prefixBytes, fileBytes int64) {
	t.Helper()
	tables = t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(tables, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC {
		t.Skipf("cold-cache test needs a disk-backed TMPDIR; %s is in memory (set TMPDIR)", tables)
	}
	if !ReadPhysical().OK {
		t.Skipf("%s has no read_bytes (kernel without task I/O accounting)", procSelfIO)
	}
	for _, s := range specs {
		_, tb, err := prefixtest.WriteTable(tables, s)
		if err != nil {
			t.Fatal(err)
		}
		if minData == 0 && tb.Data < 4*tb.Prefix {
			t.Fatalf("%s: data section %d is not several times the prefix %d: readahead would not show", s.Name, tb.Data, tb.Prefix)
		}
		if tb.Data < minData {
			t.Fatalf("%s: data section %d is under %d bytes: readahead past the prefix would not show", s.Name, tb.Data, minData)
		}
		prefixBytes += tb.Prefix
		fileBytes += int64(len(tb.Bytes))
	}
	return tables, prefixBytes, fileBytes
}

// Issue 16: cold extract read 12-14x the prefix bytes from the disk (the
// header parse's readahead, then the copy's running past the prefix). Every
// byte of a table is read once: physical reads of parse+extract, and of
// verify --full, are at most 1.05x the bytes needed plus a 4 KiB page per
// table.
func TestColdExtractAndVerifyReadOnlyThePrefixes(t *testing.T) {
	if testing.Short() {
		t.Skip("writes ~300 MB of tables: not with -short")
	}
	const n = 200
	tables, prefixBytes, fileBytes := coldFixture(t, coldSpecs(n), 0)
	store := t.TempDir()
	ctx := context.Background()
	budget := func(need int64) int64 { return readOnceBudget(need, n) }

	srcs, rep := coldParseAndExtract(t, tables, store, fileBytes, prefixBytes, n)
	if max := budget(prefixBytes); rep.PhysicalBytesRead > max {
		t.Errorf("cold parse+extract read %d bytes from the disk for %d prefix bytes: more than %d (1.05x + 4 KiB per table)", rep.PhysicalBytesRead, prefixBytes, max)
	}

	dropCaches(t)
	vrep, err := Verify(ctx, srcs, VerifyOptions{Store: store, Full: true, Jobs: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(vrep.Findings) != 0 || vrep.OK != n {
		t.Fatalf("verify --full: %d ok, findings %v", vrep.OK, vrep.Findings)
	}
	t.Logf("cold verify --full: logical reads %d (store + tables), physical %d (%.3fx)",
		vrep.BytesRead, vrep.PhysicalBytesRead, float64(vrep.PhysicalBytesRead)/float64(vrep.BytesRead))
	if vrep.BytesRead != 2*prefixBytes {
		t.Fatalf("verify --full read %d bytes, want the prefixes twice (store and tables): %d", vrep.BytesRead, 2*prefixBytes)
	}
	if vrep.PhysicalBytesRead < prefixBytes {
		t.Fatalf("verify --full physical reads %d below the %d prefix bytes: the cache was not cold", vrep.PhysicalBytesRead, prefixBytes)
	}
	if max := budget(vrep.BytesRead); vrep.PhysicalBytesRead > max {
		t.Errorf("cold verify --full read %d bytes from the disk for %d needed: more than %d (1.05x + 4 KiB per table)", vrep.PhysicalBytesRead, vrep.BytesRead, max)
	}
}

// Large prefixes are read through the kernel's readahead up to two windows
// before their end, the rest through a mapping (rangeReader.streamHead):
// still every byte once, nothing past the prefix (1.05x + 4 KiB a table).
func TestColdExtractOfLargePrefixesReadsThemOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("writes ~500 MB of tables: not with -short")
	}
	specs := largeSpecs()
	for i := range specs { // 1 KiB blocks: a data section of 50-100 MB after each prefix
		specs[i].Subs[0].BlockSizeLog = 10
	}
	tables, prefixBytes, fileBytes := coldFixture(t, specs, 32<<20)
	st, err := os.Stat(filepath.Join(tables, specs[0].Name))
	if err != nil {
		t.Fatal(err)
	}
	if ra := new(readaheads).of(st); ra <= 0 {
		t.Logf("the tables' device has no read_ahead_kb: the head is not streamed, the test checks the WILLNEED reader")
	}
	_, rep := coldParseAndExtract(t, tables, t.TempDir(), fileBytes, prefixBytes, len(specs))
	if max := readOnceBudget(prefixBytes, len(specs)); rep.PhysicalBytesRead > max {
		t.Errorf("cold parse+extract read %d bytes from the disk for %d prefix bytes: more than %d (1.05x + 4 KiB per table)", rep.PhysicalBytesRead, prefixBytes, max)
	}
}

// readOnceBudget is what reading need bytes of n tables may cost the disk:
// 1.05x, plus a 4 KiB page per table.
func readOnceBudget(need int64, n int) int64 { return need + need/20 + 4096*int64(n) }

// coldParseAndExtract empties the page cache, looks the tables up (the
// file system's own metadata, directory and inode tables that ext4 reads
// ahead in 128 KiB runs, is not table bytes: logged apart), then parses and
// extracts them into store counting physical reads from there. It fails
// unless all n prefixes, prefixBytes in all, were written and the disk was
// really read (a warm cache would prove nothing).
func coldParseAndExtract(t *testing.T, tables, store string, fileBytes, prefixBytes int64, n int) ([]Source, *ExtractReport) {
	t.Helper()
	ctx := context.Background()
	dropCaches(t)
	meta := ReadPhysical()
	srcs, err := FindTables([]string{tables})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range srcs {
		if _, err := os.Stat(s.Path); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("looking up %d tables read %d bytes of file-system metadata", len(srcs), meta.Since())
	from := ReadPhysical()
	ps := ParseAll(ctx, srcs, 4)
	if errs := Errs(ps); len(errs) > 0 {
		t.Fatal(errs)
	}
	rep, err := Extract(ctx, ps, ExtractOptions{Store: store, Jobs: 4, PhysicalFrom: &from})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Written != n || rep.BytesWritten != prefixBytes {
		t.Fatalf("extract wrote %d prefixes, %d bytes; want %d, %d", rep.Written, rep.BytesWritten, n, prefixBytes)
	}
	t.Logf("cold extract: %d tables (%d bytes), prefixes %d bytes, physical reads %d (%.3fx)",
		n, fileBytes, prefixBytes, rep.PhysicalBytesRead, float64(rep.PhysicalBytesRead)/float64(prefixBytes))
	if rep.PhysicalBytesRead < 0 {
		t.Fatal("extract reported no physical reads although /proc/self/io counts them")
	}
	if rep.PhysicalBytesRead < prefixBytes/2 {
		t.Fatalf("physical reads %d are far below the %d prefix bytes: the cache was not cold, the test proves nothing", rep.PhysicalBytesRead, prefixBytes)
	}
	return srcs, rep
}
