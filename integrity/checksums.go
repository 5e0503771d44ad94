package integrity

import (
	"bufio"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha3"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Algo is a digest algorithm of a published checksum list.
type Algo string

// Supported algorithms.
const (
	MD5     Algo = "md5"
	SHA1    Algo = "sha1"
	SHA256  Algo = "sha256"
	SHA512  Algo = "sha512"
	SHA3224 Algo = "sha3-224"
)

// Algos lists the supported algorithms, for help texts.
func Algos() []Algo { return []Algo{MD5, SHA1, SHA256, SHA512, SHA3224} }

// ParseAlgo reads an --algo value ("sha256", "SHA-256", "sha256sum").
func ParseAlgo(s string) (Algo, error) {
	n := strings.ToLower(strings.TrimSpace(s))
	n = strings.TrimSuffix(n, "sum")
	n = strings.ReplaceAll(n, "_", "-")
	switch n {
	case "md5":
		return MD5, nil
	case "sha1", "sha-1":
		return SHA1, nil
	case "sha256", "sha-256":
		return SHA256, nil
	case "sha512", "sha-512":
		return SHA512, nil
	case "sha3-224":
		return SHA3224, nil
	case "b2", "blake2", "blake2b", "b3", "blake3":
		return "", fmt.Errorf("algorithm %q is not supported; use one of the other published lists (md5, sha1, sha256, sha512, sha3-224)", s)
	}
	return "", fmt.Errorf("unknown algorithm %q (supported: md5, sha1, sha256, sha512, sha3-224)", s)
}

// New returns a fresh hash of the algorithm.
func (a Algo) New() hash.Hash {
	switch a {
	case MD5:
		return md5.New()
	case SHA1:
		return sha1.New()
	case SHA256:
		return sha256.New()
	case SHA512:
		return sha512.New()
	case SHA3224:
		return sha3.New224()
	}
	panic("integrity: unknown algorithm " + string(a))
}

// HexLen is the length of the algorithm's digest in hex digits.
func (a Algo) HexLen() int { return a.New().Size() * 2 }

// algoByLength picks the algorithm from a digest length. Lengths shared by
// two published algorithms are resolved by the list's file name (the
// syzygy-tables.info lists are called b2, b3, sha3-224, ...).
func algoByLength(n int, listName string) (Algo, error) {
	base := strings.ToLower(filepath.Base(listName))
	hint := func(names ...string) bool {
		for _, s := range names {
			if base == s || strings.HasPrefix(base, s+".") || strings.HasSuffix(base, "."+s) {
				return true
			}
		}
		return false
	}
	if hint("b2", "b3", "blake2", "blake2b", "blake3", "b2sum", "b3sum") {
		return "", fmt.Errorf("%s looks like a BLAKE2/BLAKE3 list, which tbhost cannot check; use the md5, sha1, sha256 or sha512 list, or pass --algo if the name misleads", listName)
	}
	switch n {
	case 32:
		return MD5, nil
	case 40:
		return SHA1, nil
	case 56:
		return SHA3224, nil
	case 64:
		return SHA256, nil
	case 128:
		return SHA512, nil
	}
	return "", fmt.Errorf("%s: %d-digit digests match no supported algorithm; pass --algo", listName, n)
}

// ChecksumList is a published list of digests, keyed by file base name.
type ChecksumList struct {
	Source  string
	Algo    Algo
	Digests map[string]string // base name -> lower-case hex
	// Warnings are harmless oddities of the list (a file named twice with
	// the same digest), one line each, for the user to see.
	Warnings []string
}

// Names returns the listed names, sorted.
func (l ChecksumList) Names() []string {
	out := make([]string, 0, len(l.Digests))
	for n := range l.Digests {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ErrDuplicate is wrapped by the error for a list that names one file twice
// with different values.
var ErrDuplicate = errors.New("names a file twice with different values")

// entries remembers where each name was first listed, so a second entry
// for the same file is refused (different value) or warned about (same
// value) instead of silently replacing the first.
type entries struct {
	source string
	first  map[string]listed
	warn   []string
}

type listed struct {
	line  int
	text  string
	value string
}

func newEntries(source string) *entries {
	return &entries{source: source, first: map[string]listed{}}
}

// add records name=value from line ln; it reports whether the name is new.
func (e *entries) add(name, value string, ln int, text string) (bool, error) {
	prev, dup := e.first[name]
	if !dup {
		e.first[name] = listed{line: ln, text: text, value: value}
		return true, nil
	}
	if prev.value != value {
		return false, fmt.Errorf("%s: %w: %s on line %d (%q) and line %d (%q); fix or re-download the list", e.source, ErrDuplicate, name, prev.line, prev.text, ln, text)
	}
	e.warn = append(e.warn, fmt.Sprintf("%s: %s is listed twice with the same value (lines %d and %d)", e.source, name, prev.line, ln))
	return false, nil
}

// maxListLine bounds one line of a list (a digest list line is ~200 bytes).
const maxListLine = 64 << 10

// The line formats of the lists, for messages about a line that is not one.
const (
	checksumLine = `"<hex digest>  <file name>" (the sha256sum format)`
	sizesLine    = `"<size><TAB><name>" (bytes.tsv)`
	trailerLine  = `"<name>: <32 hex digits>" (tbcheck.txt)`
)

// ErrListIsDir is wrapped by the error for a list path that is a directory.
var ErrListIsDir = errors.New("is a directory, not a file")

// ErrLongLine is wrapped by the error for a list line over maxListLine bytes.
var ErrLongLine = errors.New("line too long")

// openList opens a list. A directory is refused at once with a message
// that says so: read as a list it fails with EISDIR, reported as line 1.
// The error is an *fs.PathError, like a missing list: a path named on the
// command line that cannot be read as a list (exit 3 in the CLI).
func openList(file, what, name string) (*os.File, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		example := filepath.Join("checksums/syzygy-tables.info", name)
		if _, err := os.Stat(filepath.Join(file, name)); err == nil {
			example = filepath.Join(file, name) // the directory holds one: name it
		}
		return nil, &fs.PathError{Op: what, Path: file, Err: fmt.Errorf("%w (give a file such as %s)", ErrListIsDir, example)}
	}
	return f, nil
}

// ReadChecksumList reads a list in the `sha256sum` format ("<hex>  <name>",
// or "<hex> *<name>" in binary mode; blank lines and # comments skipped).
// algo "" picks the algorithm from the digest length.
func ReadChecksumList(file string, algo Algo) (ChecksumList, error) {
	f, err := openList(file, "checksum list", "sha256")
	if errors.Is(err, ErrListIsDir) {
		return ChecksumList{Source: file, Algo: algo}, err
	}
	if err != nil {
		return ChecksumList{Source: file, Algo: algo}, fmt.Errorf("checksum list: %w", err)
	}
	defer f.Close()
	return ParseChecksumList(f, file, algo)
}

// ParseChecksumList is ReadChecksumList on a reader; source names it in errors.
func ParseChecksumList(r io.Reader, source string, algo Algo) (ChecksumList, error) {
	l := ChecksumList{Source: source, Algo: algo, Digests: map[string]string{}}
	seen := newEntries(source)
	hexLen := 0
	err := eachLine(r, source, "checksum list", checksumLine, func(ln int, line string) error {
		// "<hex>  <name>" (text mode) or "<hex> *<name>" (binary mode): one
		// marker character, then the name as it is (a name may start with
		// "*"); a single space before the name is accepted too
		sum, name, ok := strings.Cut(line, " ")
		if strings.HasPrefix(name, " ") || strings.HasPrefix(name, "*") {
			name = name[1:]
		}
		if !ok || name == "" {
			return fmt.Errorf("%s:%d: want %s, got %q", source, ln, checksumLine, line)
		}
		if _, err := hex.DecodeString(sum); err != nil || len(sum) == 0 {
			return fmt.Errorf("%s:%d: %q is not a hex digest", source, ln, sum)
		}
		if hexLen == 0 {
			hexLen = len(sum)
		} else if len(sum) != hexLen {
			return fmt.Errorf("%s:%d: digest of %d hex digits after %d-digit ones: one list must use one algorithm", source, ln, len(sum), hexLen)
		}
		base := path.Base(filepath.ToSlash(name))
		if !validName(base) {
			return fmt.Errorf("%s:%d: %q is not a file name", source, ln, name)
		}
		sum = strings.ToLower(sum)
		if _, err := seen.add(base, sum, ln, line); err != nil {
			return err
		}
		l.Digests[base] = sum
		return nil
	})
	l.Warnings = seen.warn
	if err != nil {
		return l, err
	}
	if len(l.Digests) == 0 {
		return l, fmt.Errorf("checksum list %s: no entries", source)
	}
	if l.Algo == "" {
		a, err := algoByLength(hexLen, source)
		if err != nil {
			return l, err
		}
		l.Algo = a
	} else if l.Algo.HexLen() != hexLen {
		return l, fmt.Errorf("%s: digests have %d hex digits but %s has %d; wrong --algo?", source, hexLen, l.Algo, l.Algo.HexLen())
	}
	return l, nil
}

// validName is a base name a table directory can hold.
func validName(n string) bool {
	return n != "" && n != "." && n != ".." && n != "/" && !strings.ContainsAny(n, "/\x00")
}

// ReadSizes reads a `<size>\t<name>` list (syzygy-tables.info's bytes.tsv).
// It also returns warnings (a file listed twice with the same size).
func ReadSizes(file string) (map[string]int64, []string, error) {
	f, err := openList(file, "sizes list", "bytes.tsv")
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return ParseSizes(f, file)
}

// ParseSizes is ReadSizes on a reader; source names it in errors.
func ParseSizes(r io.Reader, source string) (map[string]int64, []string, error) {
	out := map[string]int64{}
	seen := newEntries(source)
	err := eachLine(r, source, "sizes list", sizesLine, func(ln int, line string) error {
		f := strings.Fields(line)
		if len(f) != 2 {
			return fmt.Errorf("%s:%d: want \"<size><TAB><name>\", got %q", source, ln, line)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("%s:%d: %q is not a size in bytes", source, ln, f[0])
		}
		if !validName(f[1]) {
			return fmt.Errorf("%s:%d: %q is not a file name", source, ln, f[1])
		}
		if _, err := seen.add(f[1], strconv.FormatInt(n, 10), ln, line); err != nil {
			return err
		}
		out[f[1]] = n
		return nil
	})
	return out, seen.warn, err
}

// ReadTrailers reads a `<name>: <32 hex digits>` list (tbcheck.txt): the
// 16-byte checksum the Syzygy generator embeds as the last bytes of a file.
// It also returns warnings (a file listed twice with the same checksum).
func ReadTrailers(file string) (map[string]string, []string, error) {
	f, err := openList(file, "trailer list", "tbcheck.txt")
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return ParseTrailers(f, file)
}

// ParseTrailers is ReadTrailers on a reader; source names it in errors.
func ParseTrailers(r io.Reader, source string) (map[string]string, []string, error) {
	out := map[string]string{}
	seen := newEntries(source)
	err := eachLine(r, source, "trailer list", trailerLine, func(ln int, line string) error {
		name, sum, ok := strings.Cut(line, ":")
		sum = strings.ToLower(strings.TrimSpace(sum))
		name = strings.TrimSpace(name)
		if b, err := hex.DecodeString(sum); !ok || err != nil || len(b) != TrailerSize || !validName(name) {
			return fmt.Errorf("%s:%d: want \"<name>: <32 hex digits>\", got %q", source, ln, line)
		}
		if _, err := seen.add(name, sum, ln, line); err != nil {
			return err
		}
		out[name] = sum
		return nil
	})
	return out, seen.warn, err
}

// TrailerSize is the length of the checksum the generator appends to a table.
const TrailerSize = 16

// eachLine calls fn for every line of r that is not blank or a # comment,
// trimmed, with its 1-based number. A line longer than maxListLine is an
// error naming the line and what a line of this kind of list looks like
// (format): such a line means the wrong file (a binary, a table) was given.
func eachLine(r io.Reader, source, kind, format string, fn func(int, string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxListLine)
	ln := 0
	for sc.Scan() {
		ln++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := fn(ln, line); err != nil {
			return err
		}
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return fmt.Errorf("%s:%d: %w: over %d bytes, but a %s line is %s: the wrong file?", source, ln+1, ErrLongLine, maxListLine, kind, format)
	case err != nil:
		return fmt.Errorf("%s: read after line %d: %w", source, ln, err)
	}
	return nil
}
