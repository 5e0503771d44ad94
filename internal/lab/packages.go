package lab

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// KernelMetapackage is the Debian package whose dependency names the
// current kernel image package (linux-image-6.1.0-NN-amd64).
const KernelMetapackage = "linux-image-amd64"

// toolPackages are the Debian packages whose programs run in the guest.
// Their shared libraries come from the lib* packages they depend on
// (resolved with apt-cache depends, checked with ldd). rsync is the old
// host's daemon and tables sync's client in the migrate scenario.
func toolPackages() []string {
	return []string{"busybox-static", "lvm2", "dmsetup", "kmod", "e2fsprogs", "util-linux", "fdisk", "rsync"}
}

// libraryPackage reports whether a dependency is followed when collecting
// shared libraries: Debian names library packages lib*, plus zlib1g.
func libraryPackage(name string) bool {
	return strings.HasPrefix(name, "lib") || name == "zlib1g"
}

var kernelPackageRE = regexp.MustCompile(`^linux-image-[0-9][^ ]*$`)

// parseDepends parses `apt-cache depends` output into package -> direct
// dependencies (Depends and PreDepends). Of alternatives (a | b) only the
// first is kept; virtual packages (<name>) are skipped.
func parseDepends(out []byte) map[string][]string {
	deps := map[string][]string{}
	var cur string
	skipAlt := false // the previous line was "|Depends: x": the next one is its alternative
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		if line[0] != ' ' && line[0] != '|' {
			cur = strings.TrimSpace(line)
			deps[cur] = deps[cur][:0:0]
			skipAlt = false
			continue
		}
		if strings.HasPrefix(line, "    ") { // providers of a virtual package
			continue
		}
		t := strings.TrimSpace(line)
		alt := strings.HasPrefix(t, "|")
		t = strings.TrimPrefix(t, "|")
		kind, name, ok := strings.Cut(t, ":")
		if !ok || (kind != "Depends" && kind != "PreDepends") {
			skipAlt = alt
			continue
		}
		name = strings.TrimSpace(name)
		if skipAlt {
			skipAlt = alt
			continue
		}
		skipAlt = alt
		if strings.HasPrefix(name, "<") || cur == "" {
			continue
		}
		name, _, _ = strings.Cut(name, ":") // libc6:any
		deps[cur] = append(deps[cur], name)
	}
	return deps
}

// kernelPackage picks the kernel image package out of the metapackage's
// dependencies.
func kernelPackage(deps map[string][]string) (string, error) {
	for _, d := range deps[KernelMetapackage] {
		if kernelPackageRE.MatchString(d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("apt-cache depends %s names no linux-image-<version> package", KernelMetapackage)
}

// parsePolicy parses `apt-cache policy` output into package -> candidate
// version ("" when there is none).
func parsePolicy(out []byte) map[string]string {
	cand := map[string]string{}
	var cur string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		if line[0] != ' ' && strings.HasSuffix(line, ":") {
			cur = strings.TrimSuffix(line, ":")
			cur, _, _ = strings.Cut(cur, ":") // libc6:amd64:
			cand[cur] = ""
			continue
		}
		t := strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(t, "Candidate:"); ok && cur != "" {
			v = strings.TrimSpace(v)
			if v == "(none)" {
				v = ""
			}
			cand[cur] = v
		}
	}
	return cand
}

// debFileVersion is how apt-get download spells a version in a file name
// (the epoch colon is URL-escaped).
func debFileVersion(version string) string {
	return strings.ReplaceAll(version, ":", "%3a")
}

// aptDependsArgv is the apt-cache call that lists direct dependencies only.
func aptDependsArgv(pkgs ...string) []string {
	return append([]string{"apt-cache", "depends", "--no-recommends", "--no-suggests",
		"--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances"}, pkgs...)
}

// Resolve returns the Debian packages the guest needs, with candidate
// versions: the kernel behind linux-image-amd64, the tool packages, and the
// library packages they depend on (transitively). apt-cache runs through
// run; it is called once per dependency level.
func resolvePackages(ctx context.Context, run func(ctx context.Context, argv ...string) ([]byte, error)) (map[string]string, string, error) {
	out, err := run(ctx, aptDependsArgv(KernelMetapackage)...)
	if err != nil {
		return nil, "", fmt.Errorf("resolve the kernel package: %w", err)
	}
	kpkg, err := kernelPackage(parseDepends(out))
	if err != nil {
		return nil, "", err
	}
	want := map[string]bool{}
	level := toolPackages()
	for _, p := range level {
		want[p] = true
	}
	for len(level) > 0 {
		out, err := run(ctx, aptDependsArgv(level...)...)
		if err != nil {
			return nil, "", fmt.Errorf("resolve dependencies of %s: %w", strings.Join(level, " "), err)
		}
		deps := parseDepends(out)
		var next []string
		for _, p := range level {
			if _, ok := deps[p]; !ok {
				return nil, "", fmt.Errorf("apt-cache depends knows no package %s", p)
			}
			for _, d := range deps[p] {
				if libraryPackage(d) && !want[d] {
					want[d] = true
					next = append(next, d)
				}
			}
		}
		sort.Strings(next)
		level = next
	}
	names := []string{kpkg}
	for p := range want {
		names = append(names, p)
	}
	sort.Strings(names)
	out, err = run(ctx, append([]string{"apt-cache", "policy"}, names...)...)
	if err != nil {
		return nil, "", fmt.Errorf("candidate versions: %w", err)
	}
	cand := parsePolicy(out)
	versions := map[string]string{}
	var missing []string
	for _, n := range names {
		if cand[n] == "" {
			missing = append(missing, n)
			continue
		}
		versions[n] = cand[n]
	}
	if len(missing) > 0 {
		return nil, "", fmt.Errorf("no installable candidate for %s (apt-get update, or add bookworm to the apt sources)", strings.Join(missing, " "))
	}
	return versions, kpkg, nil
}
