package main

import (
	"bytes"
	"testing"

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
