package pkgbuild

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
	"github.com/tbhost/tbhost/playbooks"
	"github.com/urfave/cli/v2"
)

// Package facts that do not change between builds.
const (
	Name       = "tbhost"
	Arch       = "amd64"
	Maintainer = "tbhost authors <tbhost@users.noreply.github.com>"
	Homepage   = "https://github.com/tbhost/tbhost"
)

// Spec is one build of the package.
type Spec struct {
	Version string    // Debian version (DebianVersion)
	Commit  string    // for the changelog entry
	Date    time.Time // commit date: every file's mtime and the changelog date (reproducible)
	Binary  string    // the static tbhost binary, built with the same version stamped in
	Source  string    // the repository root: packaging/, monitor/alerts/, docs/, README.md
	App     *cli.App  // the command tree the man pages are rendered from
	// Staging is a scratch directory for the generated files (man pages,
	// changelog, units); the caller removes it.
	Staging string
}

// FileName is Debian's name for the package file.
func FileName(version string) string { return Name + "_" + version + "_" + Arch + ".deb" }

// shipped is a file taken from the repository as it is.
type shipped struct{ src, dst string }

// fromRepo lists what the package ships straight from the repository.
var fromRepo = []shipped{
	{"packaging/systemd/tbhost-exporter.service", "/lib/systemd/system/tbhost-exporter.service"},
	{"packaging/completion/tbhost.bash", "/usr/share/bash-completion/completions/tbhost"},
	{"packaging/completion/_tbhost", "/usr/share/zsh/vendor-completions/_tbhost"},
	{"monitor/alerts/tbhost.rules.yml", "/usr/share/tbhost/tbhost.rules.yml"},
	{"monitor/alerts/tbhost-fleet.rules.yml", "/usr/share/tbhost/tbhost-fleet.rules.yml"},
	{"monitor/alerts/grafana-fleet.json", "/usr/share/tbhost/grafana-fleet.json"},
	{"packaging/debian/copyright", "/usr/share/doc/tbhost/copyright"},
	{"packaging/lintian/tbhost", "/usr/share/lintian/overrides/tbhost"},
}

// docs are compressed into /usr/share/doc/tbhost (Debian policy 12.3).
// Each command group's guide (docs/GROUP.md, or docs/GROUPs.md) is one of
// them (TestEveryCommandGroupsGuideShips); the developers' docs
// (performance, fuzzing) and the guide of contrib/ansible, which the package
// does not ship, are not.
var docs = []string{"README.md", "docs/lvm.md", "docs/prefix.md", "docs/monitor.md", "docs/integrity.md", "docs/tables.md", "docs/playbooks.md", "docs/bench.md", "docs/lab.md", "docs/packaging.md"}

// HealthCheckSchedule is the timer the package ships: the same units
// `tbhost playbook schedule health-check` prints, for /usr/bin/tbhost.
func HealthCheckSchedule() playbooks.Schedule {
	return playbooks.Schedule{Name: "health-check", Playbook: "health-check", Binary: "/usr/bin/tbhost", Hour: 3, Minute: 30}
}

// Build writes the .deb of spec to w.
func Build(spec Spec, w io.Writer) error {
	if !debianUpstream.MatchString(spec.Version) {
		return fmt.Errorf("package version %q: Debian wants digits first, then letters, digits, . + ~ (see pkgbuild.DebianVersion)", spec.Version)
	}
	if err := checkStatic(spec.Binary); err != nil {
		return err
	}
	if spec.Staging == "" || spec.Source == "" || spec.App == nil {
		return errors.New("pkgbuild.Build: Spec needs Source, Staging and App")
	}
	var contents files.Contents
	add := func(src, dst string, mode os.FileMode) {
		contents = append(contents, &files.Content{Source: src, Destination: dst, FileInfo: &files.ContentFileInfo{Mode: mode, MTime: spec.Date, Owner: "root", Group: "root"}})
	}
	stage := func(name string, b []byte) (string, error) {
		p := filepath.Join(spec.Staging, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", fmt.Errorf("staging %s: %w", p, err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return "", fmt.Errorf("staging %s: %w", p, err)
		}
		return p, nil
	}
	stageGz := func(name string, b []byte) (string, error) {
		z, err := gzipBytes(b)
		if err != nil {
			return "", fmt.Errorf("compress %s: %w", name, err)
		}
		return stage(name, z)
	}

	add(spec.Binary, "/usr/bin/tbhost", 0o755)
	for _, f := range fromRepo {
		src := filepath.Join(spec.Source, f.src)
		if _, err := os.Stat(src); err != nil {
			return fmt.Errorf("package file %s: %w (run make deb from the repository root)", src, err)
		}
		add(src, f.dst, 0o644)
	}
	for _, d := range docs {
		src := filepath.Join(spec.Source, d)
		b, err := os.ReadFile(src)
		if errors.Is(err, os.ErrNotExist) && d != "README.md" {
			continue
		}
		if err != nil {
			return fmt.Errorf("doc %s: %w", src, err)
		}
		p, err := stageGz(filepath.Join("doc", filepath.Base(d)+".gz"), b)
		if err != nil {
			return err
		}
		add(p, "/usr/share/doc/tbhost/"+filepath.Base(d)+".gz", 0o644)
	}

	pages, err := ManPages(spec.App)
	if err != nil {
		return err
	}
	for _, pg := range pages {
		p, err := stageGz(filepath.Join("man", pg.File()), pg.Troff)
		if err != nil {
			return err
		}
		add(p, fmt.Sprintf("/usr/share/man/man%d/%s", ManSection, pg.File()), 0o644)
	}

	hc := HealthCheckSchedule()
	for name, body := range map[string]string{hc.UnitName() + ".service": hc.Service(), hc.UnitName() + ".timer": hc.Timer()} {
		p, err := stage(filepath.Join("systemd", name), []byte(body))
		if err != nil {
			return err
		}
		add(p, "/lib/systemd/system/"+name, 0o644)
	}

	mods, err := goModules(spec.Binary)
	if err != nil {
		return err
	}
	p, err := stageGz("doc/go-modules.txt.gz", mods)
	if err != nil {
		return err
	}
	add(p, "/usr/share/doc/tbhost/go-modules.txt.gz", 0o644)

	p, err = stageGz("doc/changelog.gz", changelog(spec))
	if err != nil {
		return err
	}
	add(p, "/usr/share/doc/tbhost/changelog.gz", 0o644)

	script := func(name string) string { return filepath.Join(spec.Source, "packaging/debian", name) }
	info := &nfpm.Info{
		Name:          Name,
		Arch:          Arch,
		Platform:      "linux",
		Version:       spec.Version,
		VersionSchema: "none", // already a Debian version: no semver rewriting
		Section:       "admin",
		Priority:      "optional",
		Maintainer:    Maintainer,
		Homepage:      Homepage,
		License:       "Expat",
		Description: "plans, builds and monitors the storage of a chess tablebase server\n" +
			"tbhost turns the recipe of a public 7-piece Syzygy endgame tablebase server\n" +
			"into commands: LVM RAID 5 with dm-integrity over the HDDs and RAID 0 over\n" +
			"NVMe for the table-prefix store (plan, apply, status), the prefix store,\n" +
			"per-disk read monitoring with a Prometheus exporter and Nagios checks,\n" +
			"integrity scrubs and checksums, runbooks, and latency benchmarks.",
		MTime: spec.Date,
		Overridables: nfpm.Overridables{
			Recommends: []string{"lvm2"},
			Suggests:   []string{"prometheus", "prometheus-node-exporter"},
			Contents:   contents,
			Umask:      0o022,
			Scripts: nfpm.Scripts{
				PostInstall: script("postinst"),
				PreRemove:   script("prerm"),
				PostRemove:  script("postrm"),
			},
			Deb: nfpm.Deb{Compression: "xz"},
		},
	}
	if err := nfpm.PrepareForPackager(nfpm.WithDefaults(info), "deb"); err != nil {
		return fmt.Errorf("prepare package %s: %w", FileName(spec.Version), err)
	}
	if err := deb.Default.Package(info, w); err != nil {
		return fmt.Errorf("write package %s: %w", FileName(spec.Version), err)
	}
	return nil
}

// checkStatic refuses a binary that is not a static amd64 ELF executable:
// the package depends on no libc, so a dynamically linked tbhost would
// install and then not start.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("tbhost binary %s: %w (build it with make build)", path, err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("tbhost binary %s is for %v, the package is %s: build with GOARCH=amd64", path, f.Machine, Arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("tbhost binary %s is dynamically linked: build it with CGO_ENABLED=0 (make build)", path)
		}
	}
	return nil
}

// goModules lists the Go modules linked into the binary, from its build info.
func goModules(path string) ([]byte, error) {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tbhost binary %s: no Go build info: %w", path, err)
	}
	var lines []string
	for _, m := range bi.Deps {
		if m.Replace != nil {
			m = m.Replace
		}
		lines = append(lines, m.Path+" "+m.Version)
	}
	sort.Strings(lines)
	var b bytes.Buffer
	fmt.Fprintf(&b, "Go modules statically linked into /usr/bin/tbhost (built with %s).\n", bi.GoVersion)
	fmt.Fprintf(&b, "Each is under its own free licence; see the module's source.\n\n")
	b.WriteString(strings.Join(lines, "\n") + "\n")
	return b.Bytes(), nil
}

// changelog is the one-entry Debian changelog of a native package.
func changelog(spec Spec) []byte {
	return []byte(fmt.Sprintf("%s (%s) unstable; urgency=medium\n\n  * Built from commit %s.\n\n -- %s  %s\n",
		Name, spec.Version, spec.Commit, Maintainer, spec.Date.UTC().Format("Mon, 02 Jan 2006 15:04:05 -0700")))
}
