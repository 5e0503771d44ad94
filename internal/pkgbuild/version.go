// Package pkgbuild builds tbhost's Debian package with nfpm as a library:
// the version Debian sees (from git describe), the man pages rendered from
// the command tree, the completion scripts, the shipped units and rules,
// and the .deb itself. No outside packaging tools: cmd/mkdeb drives it.
package pkgbuild

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/tbhost/tbhost/internal/execx"
)

// FallbackVersion is the Debian version of a build without git metadata
// (a source tarball): it sorts before every tagged or git-dated version.
const FallbackVersion = "0.0~~unknown"

var (
	// git describe --tags --always --dirty: TAG[-N-gSHA][-dirty] or SHA[-dirty]
	describeTagged = regexp.MustCompile(`^(.+)-([0-9]+)-g([0-9a-f]{4,64})$`)
	describeSHA    = regexp.MustCompile(`^[0-9a-f]{7,64}$`) // --always abbreviates to 7+
	tagVersion     = regexp.MustCompile(`^[vV]?([0-9][0-9A-Za-z.+~-]*)$`)
	// Debian policy 5.6.12 for a native package (no revision, so no '-')
	debianUpstream = regexp.MustCompile(`^[0-9][0-9A-Za-z.+~]*$`)
)

// DebianVersion turns the output of `git describe --tags --always --dirty`
// and the commit's date into a Debian version:
//
//	v1.2.3                 -> 1.2.3
//	v1.2.3-rc1             -> 1.2.3~rc1             (sorts before 1.2.3)
//	v1.2.3-4-gabc1234      -> 1.2.3+git20261201.4.abc1234
//	abc1234                -> 0.0~git20261201.abc1234 (no tag yet)
//	...-dirty              -> ...+dirty
//
// A tag that does not start with a digit (after an optional v) is treated
// as no tag. describe is input from outside: anything else is an error.
func DebianVersion(describe string, date time.Time) (string, error) {
	d := strings.TrimSpace(describe)
	dirty := strings.HasSuffix(d, "-dirty")
	d = strings.TrimSuffix(d, "-dirty")
	day := date.UTC().Format("20060102")
	var v string
	switch {
	case describeSHA.MatchString(d): // --always: no tag reachable
		v = "0.0~git" + day + "." + d
	case describeTagged.MatchString(d):
		m := describeTagged.FindStringSubmatch(d)
		if t := tagVersion.FindStringSubmatch(m[1]); t != nil {
			v = strings.ReplaceAll(t[1], "-", "~") + "+git" + day + "." + m[2] + "." + m[3]
		} else { // a tag that is no version (e.g. "lab-ok"): as if untagged
			v = "0.0~git" + day + "." + m[3]
		}
	case tagVersion.MatchString(d): // exactly on a tag
		v = strings.ReplaceAll(tagVersion.FindStringSubmatch(d)[1], "-", "~")
	default:
		return "", fmt.Errorf("git describe printed %q: want TAG, TAG-N-gSHA or SHA (with -dirty); tag releases as vX.Y.Z", describe)
	}
	if dirty {
		v += "+dirty"
	}
	if !debianUpstream.MatchString(v) {
		return "", fmt.Errorf("git describe %q gives Debian version %q, which Debian rejects (allowed: digits first, then letters, digits, . + ~); rename the tag", describe, v)
	}
	return v, nil
}

// GitVersion asks git in dir for the Debian version, the commit and the
// commit's date. Without git or a repository it returns FallbackVersion,
// "unknown" and the zero time, and the reason as err (the caller decides
// whether a fallback is good enough).
func GitVersion(ctx context.Context, r execx.Runner, dir string) (version, commit string, date time.Time, err error) {
	git := func(args ...string) (string, error) {
		res, err := r.Run(ctx, append([]string{"git", "-C", dir}, args...)...)
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(res.Stdout)), nil
	}
	describe, err := git("describe", "--tags", "--always", "--dirty")
	if err != nil {
		return FallbackVersion, "unknown", time.Time{}, fmt.Errorf("git describe in %s: %w", dir, err)
	}
	commit, err = git("rev-parse", "--short=12", "HEAD")
	if err != nil {
		return FallbackVersion, "unknown", time.Time{}, fmt.Errorf("git rev-parse in %s: %w", dir, err)
	}
	ts, err := git("log", "-1", "--format=%ct")
	if err != nil {
		return FallbackVersion, commit, time.Time{}, fmt.Errorf("git log in %s: %w", dir, err)
	}
	var sec int64
	if _, err := fmt.Sscanf(ts, "%d", &sec); err != nil {
		return FallbackVersion, commit, time.Time{}, fmt.Errorf("git log -1 --format=%%ct in %s printed %q: %w", dir, ts, err)
	}
	date = time.Unix(sec, 0).UTC()
	version, err = DebianVersion(describe, date)
	if err != nil {
		return FallbackVersion, commit, date, err
	}
	return version, commit, date, nil
}
