package prefix

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/prefix/prefixtest"
)

// goodSpecs is a small synthetic table set covering the shapes that matter.
func goodSpecs() []prefixtest.Spec {
	return []prefixtest.Spec{
		{Name: "KRvK.rtbw"},
		{Name: "KRvK.rtbz"},
		{Name: "KBvK.rtbw", Subs: []prefixtest.Sub{{Single: true}, {Single: true}}},
		{Name: "KQvKQ.rtbw", Subs: []prefixtest.Sub{{NumSyms: 7, IdxBits: 8, Extra: 3}}},
		{Name: "KPvK.rtbz", Subs: []prefixtest.Sub{{Mapped: true}, {Single: true}, {Mapped: true, Wide: true}, {}}},
		{Name: "KPvKP.rtbw"},
		{Name: "KRNvKB.rtbw", Subs: []prefixtest.Sub{{Single: true}, {BlockSizeLog: 9, NumSyms: 300}}},
	}
}

// writeSet writes the synthetic tables into a new directory.
func writeSet(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	out := map[string][]byte{}
	for _, s := range goodSpecs() {
		_, tb, err := prefixtest.WriteTable(dir, s)
		if err != nil {
			t.Fatal(err)
		}
		out[s.Name] = tb.Bytes
	}
	return dir, out
}

// writeBad adds hostile files under table names.
func writeBad(t *testing.T, dir string, good []byte) []string {
	t.Helper()
	rnd := make([]byte, 4096+16)
	rand.New(rand.NewSource(7)).Read(rnd)
	bad := map[string][]byte{
		"KQvKR.rtbw":  rnd,
		"KNvKN.rtbz":  []byte("version https://git-lfs.github.com/spec/v1\noid sha256:5f1c\nsize 54480\n"),
		"KBNvKP.rtbw": good[:len(good)/2],
	}
	var names []string
	for n, b := range bad {
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	return names
}

func extract(t *testing.T, tables, store string, opt ExtractOptions) *ExtractReport {
	t.Helper()
	srcs, err := FindTables([]string{tables})
	if err != nil {
		t.Fatal(err)
	}
	opt.Store = store
	rep, err := Extract(context.Background(), ParseAll(context.Background(), srcs, 2), opt)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func verify(t *testing.T, tables, store string, full bool) *VerifyReport {
	t.Helper()
	srcs, err := FindTables([]string{tables})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(context.Background(), srcs, VerifyOptions{Store: store, Full: full, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestExtractWritesExactPrefixes(t *testing.T) {
	tables, set := writeSet(t)
	store := t.TempDir()
	rep := extract(t, tables, store, ExtractOptions{Jobs: 3})
	if rep.Written != len(set) || rep.Skipped != 0 || len(rep.Failed) != 0 {
		t.Fatalf("report %+v", rep)
	}
	if rep.BytesRead != rep.BytesWritten {
		t.Errorf("read %d bytes for %d written: must read only the prefixes", rep.BytesRead, rep.BytesWritten)
	}
	man, err := LoadManifest(store)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range set {
		l, err := Parse(name, bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(store, name+".prefix"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, b[:l.Prefix]) {
			t.Errorf("%s: prefix file (%d bytes) is not the table's first %d bytes", name, len(got), l.Prefix)
		}
		sum := sha256.Sum256(b[:l.Prefix])
		e := man[name]
		if e.SHA256 != hex.EncodeToString(sum[:]) || e.Prefix != l.Prefix || e.Size != int64(len(b)) || !filepath.IsAbs(e.Source) {
			t.Errorf("%s: manifest entry %+v", name, e)
		}
	}
	if v := verify(t, tables, store, true); len(v.Findings) != 0 || v.OK != len(set) {
		t.Fatalf("fresh store has findings: %+v", v)
	}
}

func TestExtractSkipsAndReportsBadFiles(t *testing.T) {
	tables, set := writeSet(t)
	bad := writeBad(t, tables, set["KPvKP.rtbw"])
	store := t.TempDir()
	rep := extract(t, tables, store, ExtractOptions{Jobs: 2})
	if rep.Written != len(set) || len(rep.Failed) != len(bad) {
		t.Fatalf("written %d, failed %+v", rep.Written, rep.Failed)
	}
	for _, f := range rep.Failed {
		if _, err := os.Stat(filepath.Join(store, f.Name+".prefix")); err == nil {
			t.Errorf("a prefix was written for bad table %s", f.Name)
		}
		if !strings.Contains(f.Error, f.Name) {
			t.Errorf("failure %q does not name the file", f.Error)
		}
	}
	v := verify(t, tables, store, false)
	kinds := map[string]string{}
	for _, f := range v.Findings {
		kinds[f.Name] = f.Kind
	}
	for _, n := range bad {
		if kinds[n] != FindBadTable {
			t.Errorf("verify: %s is %q, want bad-table (findings %+v)", n, kinds[n], v.Findings)
		}
	}
	if v.OK != len(set) {
		t.Errorf("verify: %d ok, want %d", v.OK, len(set))
	}
}

func TestExtractResumesAfterCrash(t *testing.T) {
	tables, set := writeSet(t)
	store := t.TempDir()
	extract(t, tables, store, ExtractOptions{})
	// A crash: one prefix never renamed in (temp left), one manifest line torn.
	if err := os.Remove(filepath.Join(store, "KPvKP.rtbw.prefix")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(store, ".KPvKP.rtbw.prefix.tmp"), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(store, ManifestName), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"name":"KRvK.rtbz","sou`)
	f.Close()
	if v := verify(t, tables, store, false); len(v.Findings) != 2 {
		t.Fatalf("before the rerun want missing + extra temp, got %+v", v.Findings)
	}
	rep := extract(t, tables, store, ExtractOptions{})
	if rep.Written != 1 || rep.Skipped != len(set)-1 {
		t.Fatalf("rerun wrote %d, skipped %d; want 1 and %d", rep.Written, rep.Skipped, len(set)-1)
	}
	if _, err := os.Stat(filepath.Join(store, ".KPvKP.rtbw.prefix.tmp")); err == nil {
		t.Error("leftover temporary file not removed")
	}
	if v := verify(t, tables, store, true); len(v.Findings) != 0 {
		t.Fatalf("after the rerun: %+v", v.Findings)
	}
}

func TestExtractRefusesWhenStoreTooSmall(t *testing.T) {
	tables, _ := writeSet(t)
	store := t.TempDir()
	srcs, _ := FindTables([]string{tables})
	_, err := Extract(context.Background(), ParseAll(context.Background(), srcs, 1), ExtractOptions{
		Store: store, FreeSpace: func(string) (int64, error) { return 8192, nil },
	})
	if !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), store) {
		t.Fatalf("got %v, want ErrNoSpace naming the store", err)
	}
	ents, _ := os.ReadDir(store)
	for _, e := range ents {
		if e.Name() != LockName {
			t.Errorf("refused run wrote %s", e.Name())
		}
	}
}

func TestExtractRefusesMissingStore(t *testing.T) {
	tables, _ := writeSet(t)
	srcs, _ := FindTables([]string{tables})
	missing := filepath.Join(t.TempDir(), "not-mounted")
	_, err := Extract(context.Background(), ParseAll(context.Background(), srcs, 1), ExtractOptions{Store: missing})
	if err == nil || !strings.Contains(err.Error(), "not-mounted") {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("extract created the missing store directory")
	}
}

func TestExtractSparseAndRedoChanged(t *testing.T) {
	tables, set := writeSet(t)
	store := t.TempDir()
	extract(t, tables, store, ExtractOptions{Upto: UptoSparseIndex})
	for name, b := range set {
		l, _ := Parse(name, bytes.NewReader(b), int64(len(b)))
		got, _ := os.ReadFile(filepath.Join(store, name+".prefix"))
		if !bytes.Equal(got, b[:l.SparsePrefix]) {
			t.Errorf("%s: sparse prefix is %d bytes, want the first %d", name, len(got), l.SparsePrefix)
		}
	}
	// Switching to full prefixes rewrites everything; a changed table is redone.
	rep := extract(t, tables, store, ExtractOptions{})
	if rep.Written != len(set) {
		t.Fatalf("upto change rewrote %d of %d", rep.Written, len(set))
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(tables, "KRvK.rtbw"), later, later); err != nil {
		t.Fatal(err)
	}
	if v := verify(t, tables, store, false); len(v.Findings) != 1 || v.Findings[0].Kind != FindStale || v.Findings[0].Name != "KRvK.rtbw" {
		t.Fatalf("touched table: %+v", v.Findings)
	}
	rep = extract(t, tables, store, ExtractOptions{})
	if rep.Written != 1 {
		t.Fatalf("changed table: rerun wrote %d, want 1", rep.Written)
	}
	if v := verify(t, tables, store, false); len(v.Findings) != 0 {
		t.Fatalf("%+v", v.Findings)
	}
}

func TestVerifyFindings(t *testing.T) {
	type edit struct {
		name, kind string
		full       bool // only --full catches it
		do         func(t *testing.T, tables, store string)
	}
	pp := func(store, n string) string { return filepath.Join(store, n+".prefix") }
	edits := []edit{
		{"KQvKQ.rtbw", FindCorrupt, false, func(t *testing.T, _, store string) {
			b, _ := os.ReadFile(pp(store, "KQvKQ.rtbw"))
			b[len(b)/2] ^= 0x40 // in the sparse index: only the digest sees it
			os.WriteFile(pp(store, "KQvKQ.rtbw"), b, 0o644)
		}},
		{"KPvKP.rtbw", FindTruncated, false, func(t *testing.T, _, store string) {
			os.Truncate(pp(store, "KPvKP.rtbw"), 64)
		}},
		{"KRvK.rtbz", FindMissing, false, func(t *testing.T, _, store string) { os.Remove(pp(store, "KRvK.rtbz")) }},
		{"KQvK.rtbw", FindExtra, false, func(t *testing.T, _, store string) { os.WriteFile(pp(store, "KQvK.rtbw"), make([]byte, 64), 0o644) }},
		{"KRvK.rtbw", FindStale, false, func(t *testing.T, tables, _ string) {
			p := filepath.Join(tables, "KRvK.rtbw")
			b, _ := os.ReadFile(p)
			b[len(b)-20] ^= 1 // a data byte: the table changed (new mtime)
			os.WriteFile(p, b, 0o644)
		}},
		{"KPvK.rtbz", FindStale, true, func(t *testing.T, tables, store string) {
			// The table's block lengths change but size and mtime are kept:
			// only rereading the table can tell.
			p := filepath.Join(tables, "KPvK.rtbz")
			st, _ := os.Stat(p)
			b, _ := os.ReadFile(p)
			l, _ := Parse("KPvK.rtbz", bytes.NewReader(b), int64(len(b)))
			b[l.SparseIndex.Offset] ^= 1
			os.WriteFile(p, b, 0o644)
			os.Chtimes(p, st.ModTime(), st.ModTime())
		}},
		{"KBvK.rtbw", FindCorrupt, false, func(t *testing.T, _, store string) {
			b, _ := os.ReadFile(pp(store, "KBvK.rtbw"))
			b[5] ^= 0x10 // header: a prefix of another table
			os.WriteFile(pp(store, "KBvK.rtbw"), b, 0o644)
		}},
	}
	for _, e := range edits {
		t.Run(e.kind+"/"+e.name, func(t *testing.T) {
			tables, _ := writeSet(t)
			store := t.TempDir()
			extract(t, tables, store, ExtractOptions{})
			e.do(t, tables, store)
			for _, full := range []bool{false, true} {
				v := verify(t, tables, store, full)
				found := false
				for _, f := range v.Findings {
					if f.Name == e.name && f.Kind == e.kind {
						found = true
					} else if f.Name != e.name {
						t.Errorf("full=%v: unrelated finding %s", full, f)
					}
				}
				if found != (full || !e.full) {
					t.Errorf("full=%v: finding %s %s: %v (findings %v)", full, e.kind, e.name, found, v.Findings)
				}
			}
		})
	}
}

func TestVerifyWithoutManifest(t *testing.T) {
	tables, set := writeSet(t)
	store := t.TempDir()
	extract(t, tables, store, ExtractOptions{})
	os.Remove(filepath.Join(store, ManifestName))
	if v := verify(t, tables, store, false); len(v.Findings) != len(set) || v.Findings[0].Kind != FindUnrecorded {
		t.Fatalf("fast path without manifest: %+v", v.Findings)
	}
	if v := verify(t, tables, store, true); len(v.Findings) != 0 {
		t.Fatalf("--full without manifest: %+v", v.Findings)
	}
	b, _ := os.ReadFile(filepath.Join(store, "KRvK.rtbw.prefix"))
	b[len(b)-70] ^= 1
	os.WriteFile(filepath.Join(store, "KRvK.rtbw.prefix"), b, 0o644)
	if v := verify(t, tables, store, true); len(v.Findings) != 1 || v.Findings[0].Name != "KRvK.rtbw" {
		t.Fatalf("--full, damaged unrecorded prefix: %+v", v.Findings)
	}
}

func TestReaderAt(t *testing.T) {
	for _, upto := range []Upto{UptoBlockLengths, UptoSparseIndex} {
		tables, set := writeSet(t)
		store := t.TempDir()
		extract(t, tables, store, ExtractOptions{Upto: upto})
		for name, want := range set {
			r, err := Open(filepath.Join(tables, name), store)
			if err != nil {
				t.Fatal(err)
			}
			var _ io.ReaderAt = r
			size := int64(len(want))
			pl := r.PrefixLen()
			if pl != r.Layout().PrefixLen(upto) {
				t.Fatalf("%s: prefix len %d", name, pl)
			}
			// The prefix file answers below the boundary: prove it by reading
			// through a reader whose table is a different file of the same size.
			check := func(off int64, n int) {
				p := make([]byte, n)
				got, err := r.ReadAt(p, off)
				end := min(off+int64(n), size)
				wantN := int(max(end-off, 0))
				if got != wantN || !bytes.Equal(p[:got], want[off:off+int64(got)]) {
					t.Fatalf("%s upto %v: ReadAt(%d, %d) = %d, %v; want %d bytes of the table", name, upto, n, off, got, err, wantN)
				}
				if (wantN < n) != (err == io.EOF) {
					t.Fatalf("%s: ReadAt(%d, %d) err %v", name, n, off, err)
				}
			}
			for _, off := range []int64{0, pl - 5, pl - 1, pl, pl + 1, size - 16, size - 3} {
				for _, n := range []int{1, 7, 32, 68, 1000} {
					if off >= 0 && off < size {
						check(off, n)
					}
				}
			}
			rng := rand.New(rand.NewSource(3))
			for i := 0; i < 200; i++ {
				check(rng.Int63n(size), 1+rng.Intn(300))
			}
			if n, err := r.ReadAt(make([]byte, 4), size); n != 0 || err != io.EOF {
				t.Fatalf("read at size: %d, %v", n, err)
			}
			r.Close()
		}
	}
}

func TestReaderServesPrefixFromStore(t *testing.T) {
	tables, set := writeSet(t)
	store := t.TempDir()
	extract(t, tables, store, ExtractOptions{})
	// Replace the sparse index in the TABLE (keeping size and mtime) so the
	// prefix and the table disagree there: reads below the boundary must
	// come from the prefix file, reads above from the table.
	p := filepath.Join(tables, "KPvKP.rtbw")
	st, _ := os.Stat(p)
	b := append([]byte(nil), set["KPvKP.rtbw"]...)
	l, _ := Parse("KPvKP.rtbw", bytes.NewReader(b), int64(len(b)))
	b[l.SparseIndex.Offset] ^= 0xFF
	b[l.Prefix] ^= 0xFF
	os.WriteFile(p, b, 0o644)
	os.Chtimes(p, st.ModTime(), st.ModTime())
	r, err := Open(p, store)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := make([]byte, 2)
	if _, err := r.ReadAt(got[:1], l.SparseIndex.Offset); err != nil || got[0] != set["KPvKP.rtbw"][l.SparseIndex.Offset] {
		t.Errorf("below the boundary: got %#x, want the prefix's byte", got[0])
	}
	if _, err := r.ReadAt(got, l.Prefix-1); err != nil || got[0] != set["KPvKP.rtbw"][l.Prefix-1] || got[1] != b[l.Prefix] {
		t.Errorf("straddling read: got % x, want prefix byte then table byte", got)
	}
}

func TestReaderRefuses(t *testing.T) {
	cases := map[string]func(tables, store string){
		"prefix is": func(_, store string) { os.Truncate(filepath.Join(store, "KQvKQ.rtbw.prefix"), 128) },
		"header bytes differ": func(_, store string) {
			p := filepath.Join(store, "KQvKQ.rtbw.prefix")
			b, _ := os.ReadFile(p)
			b[12] ^= 1
			os.WriteFile(p, b, 0o644)
		},
		"stale prefix": func(tables, _ string) {
			later := time.Now().Add(time.Minute)
			os.Chtimes(filepath.Join(tables, "KQvKQ.rtbw"), later, later)
		},
		"no prefix": func(_, store string) { os.Remove(filepath.Join(store, "KQvKQ.rtbw.prefix")) },
		"foreign": func(_, store string) {
			// another table's prefix of the same length would still differ in its header
			b, _ := os.ReadFile(filepath.Join(store, "KRvK.rtbw.prefix"))
			os.WriteFile(filepath.Join(store, "KQvKQ.rtbw.prefix"), b, 0o644)
		},
	}
	for want, edit := range cases {
		tables, _ := writeSet(t)
		store := t.TempDir()
		extract(t, tables, store, ExtractOptions{})
		edit(tables, store)
		r, err := Open(filepath.Join(tables, "KQvKQ.rtbw"), store)
		if err == nil {
			r.Close()
			t.Errorf("%s: Open accepted", want)
			continue
		}
		if want == "no prefix" && !errors.Is(err, ErrNoPrefix) {
			t.Errorf("missing prefix: %v, want ErrNoPrefix", err)
		}
		if want != "foreign" && !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v", want, err)
		}
	}
}

func TestPlan(t *testing.T) {
	tables, _ := writeSet(t)
	srcs, _ := FindTables([]string{tables})
	var ls []*Layout
	for _, p := range ParseAll(context.Background(), srcs, 1) {
		if p.Err != nil {
			t.Fatal(p.Err)
		}
		ls = append(ls, p.Layout)
	}
	all := MakePlan(ls, 1<<40)
	if !all.FitsFull || all.FullTables != len(ls) || all.PlannedOnDisk != all.FullOnDisk {
		t.Fatalf("huge capacity: %+v", all)
	}
	none := MakePlan(ls, all.SparseOnDisk-1)
	if none.FitsSparse || none.FitsFull || none.FullTables != 0 {
		t.Fatalf("tiny capacity: %+v", none)
	}
	some := MakePlan(ls, all.FullOnDisk-1)
	if some.FitsFull || !some.FitsSparse || some.PlannedOnDisk > some.Capacity || some.FullTables == 0 || some.FullTables == len(ls) {
		t.Fatalf("partial: %+v", some)
	}

	// The rule: WDL first, then fewer pieces, then the cheaper upgrade; a
	// table that does not fit is skipped and later ones are still tried.
	mk := func(name string, kind Kind, pieces int, cost int64) *Layout {
		return &Layout{Name: name, Kind: kind, Pieces: pieces, SparsePrefix: FSBlock, Prefix: FSBlock + cost}
	}
	rule := []*Layout{
		mk("A", WDL, 4, 2*FSBlock), mk("B", DTZ, 3, FSBlock), mk("C", WDL, 5, FSBlock), mk("D", WDL, 4, FSBlock),
	}
	p := MakePlan(rule, 4*FSBlock+2*FSBlock+StoreOverhead(rule))
	got := ""
	for _, e := range p.Entries {
		if e.Upto == "block-lengths" {
			got += e.Name
		}
	}
	if got != "CD" || p.PlannedOnDisk != 6*FSBlock+StoreOverhead(rule) {
		t.Fatalf("full prefixes for %q (%d bytes), want C and D: D (WDL, 4 pieces, cheapest) first, A does not fit, C still does", got, p.PlannedOnDisk)
	}
}

func TestStatsTotals(t *testing.T) {
	tables, set := writeSet(t)
	writeBad(t, tables, set["KRvK.rtbw"])
	srcs, _ := FindTables([]string{tables})
	ps := ParseAll(context.Background(), srcs, 3)
	if len(Errs(ps)) != 3 {
		t.Fatalf("want 3 refused, got %v", Errs(ps))
	}
	st := Summarize(ps, true)
	var want Totals
	for name, b := range set {
		c, err := prefixtest.Count(name, b)
		if err != nil {
			t.Fatal(err)
		}
		want.add(FileStats{Size: int64(len(b)), Header: c.Header, SparseIndex: c.SparseIndex, BlockLengths: c.BlockLengths,
			Data: c.Data, SparsePrefix: c.SparsePrefix, Prefix: c.Prefix})
	}
	if st.Totals.All != want || len(st.Files) != len(set) {
		t.Fatalf("totals %+v, independent count %+v", st.Totals.All, want)
	}
	if st.Totals.WDL.Files+st.Totals.DTZ.Files != st.Totals.All.Files || st.Totals.DTZ.Files != 2 {
		t.Fatalf("per kind: %+v", st.Totals)
	}
}

func TestCheckerStreamsInAnyChunks(t *testing.T) {
	for _, s := range goodSpecs() {
		tb, _ := prefixtest.Build(s)
		l, _ := Parse(s.Name, bytes.NewReader(tb.Bytes), int64(len(tb.Bytes)))
		for _, chunk := range []int{1, 3, 64, 1 << 20} {
			c := l.NewChecker()
			p := tb.Bytes[:l.Prefix]
			for len(p) > 0 {
				n := min(chunk, len(p))
				if _, err := c.Write(p[:n]); err != nil {
					t.Fatalf("%s chunk %d: %v", s.Name, chunk, err)
				}
				p = p[n:]
			}
			if err := c.Close(); err != nil {
				t.Fatalf("%s chunk %d: %v", s.Name, chunk, err)
			}
		}
		if _, err := l.NewChecker().Write(tb.Bytes[:l.Prefix+1]); err == nil {
			t.Errorf("%s: a prefix one byte too long passed", s.Name)
		}
	}
}

func TestExtractRefusesConcurrentRun(t *testing.T) {
	tables, _ := writeSet(t)
	store := t.TempDir()
	unlock, err := lockStore(store)
	if err != nil {
		t.Fatal(err)
	}
	srcs, _ := FindTables([]string{tables})
	_, err = Extract(context.Background(), ParseAll(context.Background(), srcs, 1), ExtractOptions{Store: store})
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("second extract: %v, want ErrBusy", err)
	}
	unlock()
	extract(t, tables, store, ExtractOptions{})
	if v := verify(t, tables, store, false); len(v.Findings) != 0 {
		t.Fatalf("the lock file is not a finding: %+v", v.Findings)
	}
}

func TestFindTablesFollowsSymlinkedRoot(t *testing.T) {
	tables, set := writeSet(t)
	link := filepath.Join(t.TempDir(), "syzygy")
	if err := os.Symlink(tables, link); err != nil {
		t.Skip(err)
	}
	srcs, err := FindTables([]string{link})
	if err != nil || len(srcs) != len(set) {
		t.Fatalf("%d tables via a symlink (%v), want %d", len(srcs), err, len(set))
	}
	if _, err := FindTables([]string{tables, link}); err == nil || !strings.Contains(err.Error(), "two places") {
		t.Fatalf("same tables twice: %v", err)
	}
}

// A signal that arrives once every table has its outcome changes nothing
// (a Ctrl-C at the very end is not an interrupted run to finish); one
// that arrives before the tables are done stops the run with its report.
func TestExtractInterruptedOnlyWhenTablesAreLeft(t *testing.T) {
	tables, _ := writeSet(t)
	store := t.TempDir()
	srcs, err := FindTables([]string{tables})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	parsed := ParseAll(context.Background(), srcs, 2)
	rep, err := Extract(cancelled, parsed, ExtractOptions{Store: store})
	var stopped *StoppedError
	if !errors.As(err, &stopped) || !strings.Contains(err.Error(), "interrupted after 0 prefixes") || rep.Written != 0 {
		t.Fatalf("extract under a cancelled context with every table to do: %v, %d written; want it stopped, nothing written", err, rep.Written)
	}
	extract(t, tables, store, ExtractOptions{})
	rep, err = Extract(cancelled, parsed, ExtractOptions{Store: store})
	if err != nil || rep.Skipped != len(parsed) {
		t.Fatalf("extract under a cancelled context with nothing left to do: %v, %d unchanged of %d; want no error", err, rep.Skipped, len(parsed))
	}
}

// A crash left the manifest's last line torn and no compaction followed:
// the next run's appends start on a line of their own, so the entry after
// the torn line is read back (the compaction at a run's end would hide a
// swallowed entry; this reads the appends before it).
func TestManifestAppendsAfterATornLine(t *testing.T) {
	store := t.TempDir()
	if err := os.WriteFile(filepath.Join(store, ManifestName), []byte(`{"name":"KRvK.rtbw","prefix":1}`+"\n"+`{"name":"KRvK.rtbz","sou`), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := openManifestLog(store)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.write(ManifestEntry{Name: "KPvKP.rtbw", Prefix: 2}); err != nil {
		t.Fatal(err)
	}
	if err := m.sync(); err != nil {
		t.Fatal(err)
	}
	m.close()
	man, err := LoadManifest(store)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := man["KPvKP.rtbw"]; !ok || len(man) != 2 {
		t.Errorf("after an append behind a torn line the manifest reads %v; want KRvK.rtbw and KPvKP.rtbw", man)
	}
}

// A verify while an extract writes the store (the nightly health check
// meeting an extract started by hand): the extract's temporary files and
// its prefixes not recorded yet are no findings, so verify is refused
// naming the lock instead of reporting "left by an interrupted extract"
// (exit 1); and an extract does not start while a verify reads. Once the
// other one ends, each runs.
func TestVerifyAndExtractDoNotOverlap(t *testing.T) {
	tables, _ := writeSet(t)
	store := t.TempDir()
	extract(t, tables, store, ExtractOptions{Jobs: 2})
	srcs, err := FindTables([]string{tables})
	if err != nil {
		t.Fatal(err)
	}
	parsed := ParseAll(context.Background(), srcs, 2)

	unlock, err := lockStore(store) // an extract at work
	if err != nil {
		t.Fatal(err)
	}
	// its temporary file, as it streams a prefix
	if err := os.WriteFile(filepath.Join(store, tmpName(srcs[0].Name)), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Verify(context.Background(), srcs, VerifyOptions{Store: store})
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), filepath.Join(store, LockName)) {
		t.Fatalf("verify during an extract: %v; want ErrBusy naming the lock", err)
	}
	os.Remove(filepath.Join(store, tmpName(srcs[0].Name)))
	unlock()

	unshare, err := shareStore(store) // a verify at work
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Extract(context.Background(), parsed, ExtractOptions{Store: store, Force: true}); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "verify") {
		t.Fatalf("extract during a verify: %v; want ErrBusy naming verify", err)
	}
	if rep := verify(t, tables, store, false); len(rep.Findings) != 0 { // two verifies share the store
		t.Fatalf("a second verify beside the first: %+v", rep.Findings)
	}
	unshare()
	if rep := verify(t, tables, store, false); len(rep.Findings) != 0 {
		t.Fatalf("verify after the extract: %+v", rep.Findings)
	}
}
