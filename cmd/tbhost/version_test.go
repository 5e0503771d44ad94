package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tbhost/tbhost/internal/cliutil"
)

// tbhost --version prints the version and the commit the linker stamped in
// (make build: -X main.version=... -X main.commit=...).
func TestVersionPrintsVersionAndCommit(t *testing.T) {
	oldV, oldC := version, commit
	defer func() { version, commit = oldV, oldC }()
	version, commit = "0.0~git20261201.189c88f", "189c88f12a3d"
	var out bytes.Buffer
	env := &cliutil.Env{Stdout: &out, Stderr: &out}
	if code := run([]string{"tbhost", "--version"}, env); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	if got, want := out.String(), "tbhost version 0.0~git20261201.189c88f (commit 189c88f12a3d)\n"; got != want {
		t.Errorf("--version printed %q, want %q", got, want)
	}
}

// tbhost --json --version (the flags in any order, -v too) prints one JSON
// document, {"version", "commit"}, that docs/schemas/version.json accepts;
// without --version, --json changes nothing about the usual answer.
func TestVersionJSON(t *testing.T) {
	oldV, oldC := version, commit
	defer func() { version, commit = oldV, oldC }()
	version, commit = "0.0~git20261201.189c88f", "189c88f12a3d"
	path, _ := filepath.Abs(filepath.Join(schemaDir, "version.json"))
	sch, err := jsonschema.NewCompiler().Compile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--json", "--version"}, {"--version", "--json"}, {"-v", "--json"}, {"--json=true", "--version=true"}} {
		var out, errOut bytes.Buffer
		env := &cliutil.Env{Stdout: &out, Stderr: &errOut}
		if code := run(append([]string{"tbhost"}, args...), env); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut.String())
		}
		v, err := oneJSONDocument(out.String())
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out.String())
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("%v: %s does not match docs/schemas/version.json: %v", args, out.String(), err)
		}
		if m, _ := v.(map[string]any); m["version"] != version || m["commit"] != commit {
			t.Errorf("%v: printed %s, want version %q commit %q", args, out.String(), version, commit)
		}
	}
	// --version=false is no version request: the app's help, as without it
	var out bytes.Buffer
	if code := run([]string{"tbhost", "--json", "--version=false"}, &cliutil.Env{Stdout: &out, Stderr: &out}); code != 0 || strings.Contains(out.String(), commit) {
		t.Errorf("--version=false: exit %d, printed the version: %s", code, out.String())
	}
}
