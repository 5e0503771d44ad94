package tablesync

import (
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// rsync's exit code for a partial transfer: some files (or their
// attributes) could not be read or written, rsync says which on stderr.
const rsyncPartial = 23

// noReferent is rsync's line for a symlink --copy-links cannot follow (a
// dangling link): `symlink has no referent: "PATH"`, with " (in MODULE)"
// from a daemon, and "rsync: " or "rsync: [sender] " in front in some
// versions. PATH is as the sender sees it: module-relative from a daemon,
// the full path otherwise.
var noReferent = regexp.MustCompile(`^(?:rsync: (?:\[[a-z]+\] )?)?symlink has no referent: "(.*)"(?: \(in [^()]*\))?$`)

// partialSummary is the last line rsync writes for exit code 23.
const partialSummary = "rsync error: some files/attrs were not transferred"

// danglingLinks reads the stderr of a listing that ended with exit code 23.
// It returns the paths of the dangling links rsync named, and ok only when
// every line is one of those or rsync's exit-23 summary: any other error
// (an unreadable directory, an I/O error) is not tolerated.
func danglingLinks(stderr string) (paths []string, ok bool) {
	for _, line := range strings.Split(stderr, "\n") {
		line = strings.TrimSpace(line)
		switch m := noReferent.FindStringSubmatch(line); {
		case line == "" || strings.HasPrefix(line, partialSummary):
		case m != nil && m[1] != "":
			paths = append(paths, m[1])
		default:
			return nil, false
		}
	}
	return paths, len(paths) > 0
}

// brokenLink is a dangling symlink on the source: its path relative to
// the source root, and the path rsync printed.
type brokenLink struct {
	Rel, Printed string
}

// resolveLinks turns the paths rsync printed for dangling links into paths
// relative to the source root. rsync prints them relative to the daemon
// module, or in full: the source's own path is stripped where it leads;
// otherwise the longest tail of the path whose directory the listing holds
// is taken (the file name itself is always right).
func resolveLinks(printed []string, from, listing string) []brokenLink {
	dirs := listingDirs(listing)
	prefixes := sourcePaths(from)
	var out []brokenLink
	for _, p := range printed {
		out = append(out, brokenLink{Rel: relativeTo(p, prefixes, dirs), Printed: p})
	}
	return out
}

func relativeTo(p string, prefixes []string, dirs map[string]bool) string {
	clean := path.Clean(p)
	inListing := func(rel string) bool {
		d := path.Dir(rel)
		return rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") && !strings.HasPrefix(rel, "/") && (d == "." || dirs[d])
	}
	for _, pre := range prefixes {
		pre = strings.TrimSuffix(path.Clean(pre), "/")
		if pre == "." || pre == "" {
			if inListing(clean) {
				return clean
			}
			continue
		}
		if rel, ok := strings.CutPrefix(clean, pre+"/"); ok && inListing(rel) {
			return rel
		}
	}
	parts := strings.Split(strings.TrimPrefix(clean, "/"), "/")
	for k := 0; k < len(parts); k++ {
		if rel := strings.Join(parts[k:], "/"); inListing(rel) {
			return rel
		}
	}
	return path.Base(clean)
}

// sourcePaths are the paths rsync may print the source root as: for a
// daemon the directory inside the module, for ssh the remote path, for a
// local directory the path given, absolute and with its symlinks resolved.
func sourcePaths(from string) []string {
	switch {
	case strings.HasPrefix(from, "rsync://"):
		_, rest, _ := strings.Cut(strings.TrimPrefix(from, "rsync://"), "/") // host[:port]/module/dir
		_, dir, _ := strings.Cut(rest, "/")
		return []string{dir}
	case strings.Contains(from, "::"):
		_, rest, _ := strings.Cut(from, "::") // module/dir
		_, dir, _ := strings.Cut(rest, "/")
		return []string{dir}
	}
	if i := strings.IndexByte(from, ':'); i > 0 && !strings.Contains(from[:i], "/") {
		return []string{from[i+1:]} // host:dir over ssh
	}
	out := []string{from}
	if abs, err := filepath.Abs(from); err == nil {
		out = append(out, abs)
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			out = append(out, real)
		}
	}
	return out
}

// listingDirs are the directories of an rsync listing (ParseListing has
// accepted it), relative to the source root.
func listingDirs(listing string) map[string]bool {
	dirs := map[string]bool{}
	for _, line := range strings.Split(listing, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || len(f[0]) != 10 || f[0][0] != 'd' {
			continue
		}
		dirs[listingPath(line)] = true
	}
	return dirs
}
