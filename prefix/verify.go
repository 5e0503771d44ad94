package prefix

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tbhost/tbhost/internal/sysread"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
)

// Finding kinds reported by Verify.
const (
	FindMissing     = "missing"      // a table has no prefix in the store
	FindExtra       = "extra"        // a prefix (or leftover temp file) with no table
	FindTruncated   = "truncated"    // shorter than recorded
	FindWrongLength = "wrong-length" // longer than recorded, or not the table's prefix length
	FindStale       = "stale"        // the table changed since extraction
	FindCorrupt     = "corrupt"      // prefix bytes differ from what was extracted
	FindUnrecorded  = "unrecorded"   // a prefix the manifest does not know (fast path)
	FindBadTable    = "bad-table"    // the table itself is refused by the parser
	FindNotRegular  = "not-regular"  // a directory, FIFO, device or socket in place of a prefix file
)

// Finding is one problem verify found.
type Finding struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"` // table name
	Path   string `json:"path"` // the file concerned
	Detail string `json:"detail"`
}

func (f Finding) String() string {
	return fmt.Sprintf("%s %s: %s (%s)", strings.ToUpper(f.Kind), f.Name, f.Detail, f.Path)
}

// VerifyOptions configure Verify.
type VerifyOptions struct {
	Store    string
	Full     bool     // reread the tables' prefix bytes and compare (HDD reads)
	Jobs     int      // parallel tables, clamped to 1..MaxJobs
	Progress Progress // nil: silent; Advance/Done once per table
}

// VerifyReport is the result of Verify; Findings is empty when all is well.
type VerifyReport struct {
	Store     string `json:"store"`
	Full      bool   `json:"full"`
	Tables    int    `json:"tables"`
	OK        int    `json:"ok"`
	BytesRead int64  `json:"bytes_read"` // store bytes hashed (+ table bytes with --full)
	// PhysicalBytesRead is what the disks delivered to this process during
	// the run (/proc/self/io read_bytes); -1 where the kernel does not count it.
	PhysicalBytesRead int64     `json:"physical_bytes_read"`
	Findings          []Finding `json:"findings"`
}

// Verify checks the store against the tables. The fast path reads only the
// store (NVMe): each prefix is hashed and compared with the manifest, checked
// against the header it carries, and its table's size and mtime are compared
// with the manifest (stat only). Full also rereads each table's prefix bytes.
func Verify(ctx context.Context, sources []Source, opt VerifyOptions) (*VerifyReport, error) {
	phys := ReadPhysical()
	rep := &VerifyReport{Store: opt.Store, Full: opt.Full, Tables: len(sources), Findings: []Finding{}, PhysicalBytesRead: -1}
	defer func() { rep.PhysicalBytesRead = phys.Since() }()
	if err := checkStoreDir(opt.Store, "mount the store's file system there, or build the store with tbhost prefix extract"); err != nil {
		return rep, err
	}
	unlock, err := shareStore(opt.Store)
	if err != nil {
		return rep, err
	}
	defer unlock()
	man, err := LoadManifest(opt.Store)
	if err != nil {
		return rep, err
	}
	prog := opt.Progress
	if prog == nil {
		prog = nopProgress{}
	}
	var total int64
	for _, s := range sources {
		if e, ok := man[s.Name]; ok {
			total += e.Prefix
			if opt.Full {
				total += e.Prefix
			}
		}
	}
	prog.Begin(len(sources), total)
	defer prog.End()
	findings := make([][]Finding, len(sources))
	read := make([]int64, len(sources))
	var g errgroup.Group
	g.SetLimit(clampJobs(opt.Jobs))
	for i, src := range sources {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			e, has := man[src.Name]
			findings[i], read[i] = verifyOne(ctx, src, opt.Store, e, has, opt.Full)
			prog.Advance(read[i])
			prog.Done(src.Name, read[i], nil)
			return nil // findings are the result, not errors
		})
	}
	g.Wait()
	if err := ctx.Err(); err != nil {
		return rep, fmt.Errorf("verify interrupted: %w", err)
	}
	for i := range sources {
		rep.BytesRead += read[i]
		if len(findings[i]) == 0 {
			rep.OK++
		}
		rep.Findings = append(rep.Findings, findings[i]...)
	}

	// Extras: prefixes whose table is not among the sources, and leftovers.
	known := map[string]bool{}
	for _, s := range sources {
		known[s.Name] = true
	}
	ents, err := os.ReadDir(opt.Store)
	if err != nil {
		return rep, fmt.Errorf("read store %s: %w", opt.Store, err)
	}
	for _, d := range ents {
		name := d.Name()
		path := filepath.Join(opt.Store, name)
		switch {
		case isTemp(name):
			rep.Findings = append(rep.Findings, Finding{FindExtra, strings.TrimSuffix(strings.TrimPrefix(name, "."), PrefixSuffix+".tmp"), path,
				"temporary file left by an interrupted extract; rerun extract (it removes these)"})
		case strings.HasSuffix(name, PrefixSuffix) && !known[strings.TrimSuffix(name, PrefixSuffix)]:
			rep.Findings = append(rep.Findings, Finding{FindExtra, strings.TrimSuffix(name, PrefixSuffix), path,
				"prefix of a table that is not in the table directories; remove it, or add the table's directory"})
		}
	}
	sort.SliceStable(rep.Findings, func(i, j int) bool { return rep.Findings[i].Name < rep.Findings[j].Name })
	return rep, nil
}

func verifyOne(ctx context.Context, src Source, store string, e ManifestEntry, has, full bool) ([]Finding, int64) {
	var out []Finding
	add := func(kind, path, format string, a ...any) {
		out = append(out, Finding{Kind: kind, Name: src.Name, Path: path, Detail: fmt.Sprintf(format, a...)})
	}
	if src.Err != nil { // the table is there by name only (a dangling link)
		add(FindBadTable, src.Path, "%v", src.Err)
		return out, 0
	}
	ppath := PrefixPath(store, src.Name)
	pst, err := os.Stat(ppath)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			add(FindMissing, ppath, "cannot stat the prefix: %v", err)
			return out, 0
		}
		if _, perr := ParseFile(src.Path); perr != nil {
			add(FindBadTable, src.Path, "no prefix, and the table itself is refused: %v", perr)
		} else {
			add(FindMissing, ppath, "no prefix in the store; run tbhost prefix extract")
		}
		return out, 0
	}
	if !pst.Mode().IsRegular() {
		add(FindNotRegular, ppath, "a %s, not a prefix file; servers cannot read it: move it away (rm -r it if it is junk) and rerun extract", sysread.FileKind(pst.Mode()))
		return out, 0
	}
	tst, err := os.Stat(src.Path)
	if err != nil {
		add(FindBadTable, src.Path, "cannot stat the table: %v", err)
		return out, 0
	}
	if !has {
		if !full {
			add(FindUnrecorded, ppath, "the manifest has no entry for this prefix: run verify --full to compare it with the table, or extract again to record it")
			return out, 0
		}
		l, err := ParseFile(src.Path)
		if err != nil {
			add(FindBadTable, src.Path, "%v", err)
			return out, 0
		}
		if pst.Size() != l.Prefix && pst.Size() != l.SparsePrefix {
			add(FindWrongLength, ppath, "prefix is %d bytes; the table's prefix is %d (or %d sparse)", pst.Size(), l.Prefix, l.SparsePrefix)
			return out, 0
		}
		same, n, err := sameBytes(ppath, src.Path, pst.Size())
		if err != nil {
			add(FindCorrupt, ppath, "%v", withDiskHint(err))
		} else if !same {
			add(FindStale, ppath, "prefix bytes differ from the table's first %d bytes; remove %s and rerun extract", pst.Size(), ppath)
		}
		return out, n
	}

	if tst.Size() != e.Size || mtimeNS(tst) != e.MtimeNS {
		add(FindStale, src.Path, "table changed since extraction (size %d -> %d, mtime %s -> %s); rerun extract",
			e.Size, tst.Size(), formatNS(e.MtimeNS), formatNS(mtimeNS(tst)))
	}
	switch {
	case pst.Size() < e.Prefix:
		add(FindTruncated, ppath, "prefix is %d bytes, %d were extracted; rerun extract (it rewrites prefixes of the wrong length)", pst.Size(), e.Prefix)
		return out, 0
	case pst.Size() > e.Prefix:
		add(FindWrongLength, ppath, "prefix is %d bytes, %d were extracted; rerun extract (it rewrites prefixes of the wrong length)", pst.Size(), e.Prefix)
		return out, 0
	}
	// The store's own bytes: hash them and check them against the header they carry.
	sum, n, cerr := hashAndCheck(ctx, ppath, src.Name, e)
	read := n
	switch {
	case errors.Is(cerr, unix.EIO):
		add(FindCorrupt, ppath, "%v", withDiskHint(cerr))
	case cerr != nil:
		add(FindCorrupt, ppath, "%v; remove %s and rerun extract", cerr, ppath)
	case sum != e.SHA256:
		add(FindCorrupt, ppath, "SHA-256 %s, the manifest recorded %s; remove %s and rerun extract", sum, e.SHA256, ppath)
	}
	if full {
		l, err := ParseFile(src.Path)
		if err != nil {
			add(FindBadTable, src.Path, "%v", err)
			return out, read
		}
		if l.PrefixLen(uptoOf(e.Upto)) != e.Prefix {
			add(FindStale, src.Path, "the table's %s prefix is now %d bytes, %d were extracted; rerun extract", e.Upto, l.PrefixLen(uptoOf(e.Upto)), e.Prefix)
			return out, read
		}
		tsum, m, err := hashPrefix(ctx, src.Path, e.Prefix)
		read += m
		if err != nil {
			add(FindBadTable, src.Path, "read table: %v", withDiskHint(err))
		} else if tsum != e.SHA256 {
			add(FindStale, src.Path, "the table's first %d bytes hash to %s, the prefix was extracted as %s: the table changed; remove %s and rerun extract", e.Prefix, tsum, e.SHA256, ppath)
		}
	}
	return out, read
}

func uptoOf(s string) Upto {
	u, _ := ParseUpto(s)
	return u
}

// hashAndCheck hashes a prefix file and checks it against the header it
// carries (parsed with the recorded table size).
func hashAndCheck(ctx context.Context, path, name string, e ManifestEntry) (string, int64, error) {
	f, err := openFile(path, os.O_RDONLY, 0)
	if err != nil {
		return "", 0, fmt.Errorf("open prefix: %w", err)
	}
	defer f.Close()
	l, err := Parse(name, f, e.Size)
	if err != nil {
		return "", 0, fmt.Errorf("prefix header does not parse: %w", err)
	}
	if l.PrefixLen(uptoOf(e.Upto)) != e.Prefix {
		return "", 0, fmt.Errorf("the header in the prefix says %d bytes for --upto %s, the manifest %d", l.PrefixLen(uptoOf(e.Upto)), e.Upto, e.Prefix)
	}
	h := sha256.New()
	check := l.NewChecker()
	n, err := hashSection(ctx, io.NewSectionReader(f, 0, e.Prefix), io.MultiWriter(h, check))
	if err != nil {
		return "", n, fmt.Errorf("read prefix: %w", err)
	}
	if err := check.Close(); err != nil {
		return "", n, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// hashSection feeds r to digest with the read overlapped with the hashing
// (the pipeline of extract, with nothing written).
func hashSection(ctx context.Context, r io.Reader, digest io.Writer) (int64, error) {
	bufs := chunkPool.Get().(*chunks)
	defer chunkPool.Put(bufs)
	return copyAndDigest(ctx, nil, r, digest, bufs)
}

// hashPrefix hashes the first n bytes of a file.
func hashPrefix(ctx context.Context, path string, n int64) (string, int64, error) {
	f, err := openFile(path, os.O_RDONLY, 0)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	adviseRandom(f) // the prefix range of the table, nothing past it
	h := sha256.New()
	m, err := hashSection(ctx, newRangeReader(f, n), h)
	if err != nil {
		return "", m, err
	}
	if m != n {
		return "", m, fmt.Errorf("%w: %d of %d bytes", ErrTruncated, m, n)
	}
	return hex.EncodeToString(h.Sum(nil)), m, nil
}

// sameBytes compares the first n bytes of two files.
func sameBytes(a, b string, n int64) (bool, int64, error) {
	fa, err := openFile(a, os.O_RDONLY, 0)
	if err != nil {
		return false, 0, err
	}
	defer fa.Close()
	fb, err := openFile(b, os.O_RDONLY, 0)
	if err != nil {
		return false, 0, err
	}
	defer fb.Close()
	adviseRandom(fb) // the table: its first n bytes, nothing past them
	ba, bb := make([]byte, 1<<20), make([]byte, 1<<20)
	var off int64
	for off < n {
		k := min(int64(len(ba)), n-off)
		if _, err := fa.ReadAt(ba[:k], off); err != nil {
			return false, off, err
		}
		if _, err := fb.ReadAt(bb[:k], off); err != nil {
			return false, off, err
		}
		if !bytes.Equal(ba[:k], bb[:k]) {
			return false, off + k, nil
		}
		off += k
	}
	return true, 2 * n, nil
}
