package ansible

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// offlineSanity are the ansible-test sanity tests that need nothing from
// the network. The others (ansible-doc, import, pep8, pylint,
// validate-modules, yamllint, runtime-metadata) install their requirements
// with pip into a venv, which an offline machine cannot do; run them where
// there is a network with `ansible-test sanity` in the collection directory.
var offlineSanity = []string{
	"action-plugin-docs", "changelog", "compile", "empty-init", "future-import-boilerplate",
	"ignores", "line-endings", "metaclass-boilerplate", "no-assert", "no-basestring",
	"no-dict-iteritems", "no-dict-iterkeys", "no-dict-itervalues", "no-get-exception",
	"no-illegal-filenames", "no-main-display", "no-smart-quotes", "no-unicode-literals",
	"pslint", "replace-urlopen", "shebang", "shellcheck", "symlinks",
	"use-argspec-type-path", "use-compat-six",
}

// TestAnsibleSanityOffline runs the offline part of `ansible-test sanity`
// on a copy of the collection (ansible-test writes tests/output into the
// tree it checks).
func TestAnsibleSanityOffline(t *testing.T) {
	if _, err := exec.LookPath("ansible-test"); err != nil {
		t.Skip("SKIP: ansible-test not installed (Debian package ansible-core); `make deps` installs it")
	}
	dst := filepath.Join(t.TempDir(), "ansible_collections", "tbhost", "tbhost")
	src := filepath.Join("ansible_collections", "tbhost", "tbhost")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if d.Name() == "__pycache__" || rel == filepath.Join("tests", "output") {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	ver, err := exec.Command("python3", "-c", `import sys; print("%d.%d" % sys.version_info[:2])`).Output()
	if err != nil {
		t.Fatalf("python3 (ansible-test needs it): %v", err)
	}
	// --python: only the interpreter that is there (ansible-test would
	// otherwise try every Python it supports and fail on the missing ones)
	args := []string{"sanity", "--local", "--color", "no", "--python", strings.TrimSpace(string(ver))}
	for _, s := range offlineSanity {
		args = append(args, "--test", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ansible-test", args...)
	cmd.Dir = dst
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ansible-test %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if n := strings.Count(string(out), "Running sanity test"); n != len(offlineSanity) {
		t.Fatalf("ansible-test ran %d sanity tests, want %d:\n%s", n, len(offlineSanity), out)
	}
}

// TestAnsibleDocParses: every module's documentation parses (the sanity
// tests that would check it need pip) and carries the common options from
// the doc fragment. A YAML slip in DOCUMENTATION (a "key: value" read into
// a description) fails here.
func TestAnsibleDocParses(t *testing.T) {
	if _, err := exec.LookPath("ansible-doc"); err != nil {
		t.Skip("SKIP: ansible-doc not installed (Debian package ansible-core); `make deps` installs it")
	}
	mods, _ := filepath.Glob(filepath.Join("ansible_collections", "tbhost", "tbhost", "plugins", "modules", "tbhost_*.py"))
	if len(mods) < 6 {
		t.Fatalf("found %d modules, want at least 6", len(mods))
	}
	here, _ := os.Getwd()
	for _, m := range mods {
		name := "tbhost.tbhost." + strings.TrimSuffix(filepath.Base(m), ".py")
		cmd := exec.Command("ansible-doc", "-t", "module", "--json", name)
		cmd.Env = append(os.Environ(), "ANSIBLE_COLLECTIONS_PATH="+here, "ANSIBLE_NOCOLOR=1")
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("ansible-doc %s: %v\n%s", name, err, out)
			continue
		}
		var doc map[string]struct {
			Doc struct {
				Options map[string]any `json:"options"`
			} `json:"doc"`
		}
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Errorf("ansible-doc %s: not JSON: %v", name, err)
			continue
		}
		opts := doc[name].Doc.Options
		for _, o := range []string{"binary", "root"} {
			if _, ok := opts[o]; !ok {
				t.Errorf("%s: option %q is not documented (options: %v)", name, o, opts)
			}
		}
	}
}
