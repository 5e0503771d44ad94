package pkgbuild

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/tbhostapp"
)

// The package these tests install: TBHOST_DEB (make deb-test passes the one
// make deb built, with its version) or one built here from the tree.
const (
	testVersion = "0.0~test1"
	testCommit  = "0123456789ab"
)

var (
	debOnce    sync.Once
	debPath    string
	debVersion string
	debCommit  string
	debErr     error
	debTmp     string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if debTmp != "" {
		os.RemoveAll(debTmp)
	}
	os.Exit(code)
}

func testDeb(t *testing.T) (path, version, commit string) {
	t.Helper()
	debOnce.Do(func() {
		if p := os.Getenv("TBHOST_DEB"); p != "" {
			debPath = p
			// tbhost_<version>_amd64.deb; the commit is checked against the binary
			debVersion = strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), Name+"_"), "_"+Arch+".deb")
			return
		}
		debVersion, debCommit = testVersion, testCommit
		debTmp, debErr = os.MkdirTemp("", "pkgbuild-test-")
		if debErr != nil {
			return
		}
		bin := filepath.Join(debTmp, "tbhost")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+testVersion+" -X main.commit="+testCommit, "-o", bin, "github.com/tbhost/tbhost/cmd/tbhost")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			debErr = &buildErr{string(out), err}
			return
		}
		debPath = filepath.Join(debTmp, FileName(testVersion))
		var buf bytes.Buffer
		debErr = Build(Spec{
			Version: testVersion, Commit: testCommit, Date: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
			Binary: bin, Source: "../..", Staging: filepath.Join(debTmp, "staging"),
			App: tbhostapp.New(&cliutil.Env{}, tbhostapp.Build{Version: testVersion, Commit: testCommit}),
		}, &buf)
		if debErr == nil {
			debErr = os.WriteFile(debPath, buf.Bytes(), 0o644)
		}
	})
	if debErr != nil {
		t.Fatalf("build the package: %v", debErr)
	}
	return debPath, debVersion, debCommit
}

type buildErr struct {
	out string
	err error
}

func (e *buildErr) Error() string { return "go build: " + e.err.Error() + "\n" + e.out }

func need(t *testing.T, prog, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(prog)
	if err != nil {
		t.Skipf("%s not installed (Debian package %s; .ci/install-deps installs it): skipping", prog, pkg)
	}
	return p
}

func run(t *testing.T, env []string, argv ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), "LC_ALL=C.UTF-8"), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

func mustRun(t *testing.T, env []string, argv ...string) string {
	t.Helper()
	o, e, err := run(t, env, argv...)
	if err != nil {
		t.Fatalf("%s: %v\n%s%s", strings.Join(argv, " "), err, o, e)
	}
	return o
}

// rootFiles lists every file, symlink and directory under root (relative),
// leaving out dpkg's own database.
func rootFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch rel {
		case ".", "var", "var/lib":
			return nil
		case "var/lib/dpkg":
			return filepath.SkipDir
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// The package installs into a throwaway root with dpkg, works there, and
// goes away again: remove leaves only tbhost's state, purge removes that too.
func TestInstalledPackage(t *testing.T) {
	dpkg := need(t, "dpkg", "dpkg")
	if os.Geteuid() != 0 {
		t.Skip("dpkg installs as root only (it chowns the files): run as root (CI does) to test the package install")
	}
	deb, version, commit := testDeb(t)
	root := t.TempDir()
	for _, d := range []string{"var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"var/lib/dpkg/status", "var/lib/dpkg/available"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// chrootless: the root has no /bin/sh; the maintainer scripts honour DPKG_ROOT
	dpkgArgs := []string{dpkg, "--root=" + root, "--force-script-chrootless", "--log=/dev/null"}
	mustRun(t, nil, append(dpkgArgs, "-i", deb)...)

	t.Run("version", func(t *testing.T) {
		out := mustRun(t, nil, filepath.Join(root, "usr/bin/tbhost"), "--version")
		if !strings.Contains(out, version) || (commit != "" && !strings.Contains(out, "commit "+commit)) || !strings.Contains(out, "commit ") {
			t.Errorf("installed tbhost --version = %q, want version %s and commit %q", out, version, commit)
		}
	})

	t.Run("shipped-files", func(t *testing.T) {
		for _, f := range []string{"usr/share/tbhost/tbhost.rules.yml", "usr/share/tbhost/tbhost-fleet.rules.yml", "usr/share/tbhost/grafana-fleet.json",
			"usr/share/doc/tbhost/copyright", "usr/share/doc/tbhost/changelog.gz", "usr/share/zsh/vendor-completions/_tbhost"} {
			if fi, err := os.Stat(filepath.Join(root, f)); err != nil || fi.Size() == 0 {
				t.Errorf("/%s not installed or empty: %v", f, err)
			}
		}
	})

	t.Run("man", func(t *testing.T) {
		man := need(t, "man", "man-db")
		pages, _ := filepath.Glob(filepath.Join(root, "usr/share/man/man8/*.8.gz"))
		if len(pages) < 9 { // tbhost(8) and one per command group
			t.Fatalf("man pages installed: %v, want tbhost.8.gz and one per command group", pages)
		}
		for _, p := range pages {
			o, e, err := run(t, []string{"MANWIDTH=80"}, man, "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", p)
			if err != nil || e != "" || !strings.Contains(o, ".SH NAME") && !strings.Contains(o, "NAME") {
				t.Errorf("man -l %s: %v\nstderr: %s", filepath.Base(p), err, e)
			}
		}
	})

	t.Run("systemd-units", func(t *testing.T) {
		analyze := need(t, "systemd-analyze", "systemd")
		units := []string{"tbhost-exporter.service", "tbhost-health-check.service", "tbhost-health-check.timer"}
		// verify in a copy of the installed root plus the host's units
		// (sysinit.target & co.): ExecStart= must exist in the root, and
		// Documentation=man: pages must be found (MANPATH: the root's).
		vroot := t.TempDir()
		mustRun(t, nil, "cp", "-a", root+"/.", vroot)
		for _, host := range []string{"/lib/systemd/system", "/usr/lib/systemd/system"} {
			if _, err := os.Stat(host + "/sysinit.target"); err == nil {
				mustRun(t, nil, "cp", "-an", host+"/.", filepath.Join(vroot, "lib/systemd/system"))
				break
			}
		}
		args := []string{analyze, "verify", "--root=" + vroot}
		for _, u := range units {
			if _, err := os.Stat(filepath.Join(root, "lib/systemd/system", u)); err != nil {
				t.Errorf("unit %s not installed: %v", u, err)
			}
			args = append(args, "/lib/systemd/system/"+u)
		}
		o, e, err := run(t, []string{"MANPATH=" + filepath.Join(vroot, "usr/share/man")}, args...)
		if err != nil || e != "" {
			t.Errorf("systemd-analyze verify: %v\n%s%s", err, o, e)
		}
		// nothing is enabled by the package: no symlinks in *.wants
		if w, _ := filepath.Glob(filepath.Join(root, "etc/systemd/system/*.wants/*")); len(w) > 0 {
			t.Errorf("the package enabled units: %v", w)
		}
	})

	t.Run("bash-completion", func(t *testing.T) {
		bash := need(t, "bash", "bash")
		script := filepath.Join(root, "usr/share/bash-completion/completions/tbhost")
		o := mustRun(t, []string{"PATH=" + filepath.Join(root, "usr/bin") + ":" + os.Getenv("PATH")}, bash, "--norc", "-c",
			`unset -f _init_completion; source "$1"; COMP_WORDS=(tbhost lv); COMP_CWORD=1; _tbhost; echo "${COMPREPLY[*]}"; COMP_WORDS=(tbhost lvm ""); COMP_CWORD=2; _tbhost; echo "${COMPREPLY[*]}"`, "bash", script)
		lines := strings.Split(strings.TrimSpace(o), "\n")
		if len(lines) != 2 || lines[0] != "lvm" || !strings.Contains(lines[1], "plan") || !strings.Contains(lines[1], "apply") {
			t.Errorf("bash completion of 'tbhost lv' and 'tbhost lvm ': %q, want lvm, then plan apply status", o)
		}
	})

	// state a playbook run or a scrub left behind: remove keeps it
	state := filepath.Join(root, "var/lib/tbhost/playbooks/health-check/state.json")
	if err := os.MkdirAll(filepath.Dir(state), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(state, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, nil, append(dpkgArgs, "-r", Name)...)
	want := []string{"var/lib/tbhost", "var/lib/tbhost/playbooks", "var/lib/tbhost/playbooks/health-check", "var/lib/tbhost/playbooks/health-check/state.json"}
	if got := rootFiles(t, root); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("after dpkg -r the root holds:\n%s\nwant only tbhost's state:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	mustRun(t, nil, append(dpkgArgs, "-P", Name)...)
	if got := rootFiles(t, root); len(got) != 0 {
		t.Errorf("after dpkg -P the root still holds: %v", got)
	}
}

// lintian finds no errors (overrides are justified in packaging/lintian/tbhost).
func TestInstalledLintian(t *testing.T) {
	lintian := need(t, "lintian", "lintian")
	deb, _, _ := testDeb(t)
	o, e, err := run(t, nil, lintian, "--pedantic", "--fail-on", "error", deb)
	if err != nil {
		t.Errorf("lintian %s: %v\n%s%s", filepath.Base(deb), err, o, e)
	}
	for _, l := range strings.Split(o, "\n") {
		if strings.HasPrefix(l, "E: ") {
			t.Errorf("lintian error: %s", l)
		}
	}
	t.Logf("lintian:\n%s", o)
}
