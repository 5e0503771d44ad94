package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/blockdev/fixture"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/execx"
)

// A --root tree without lvm/ (a snapshot taken where lvm could not be
// asked) under the real runner: no command asks this machine's lvm, whose
// arrays would be shown as the tree's, and lvm apply and replace, which
// would write this machine's disks after checking the tree's identities,
// stop at their first lvm call, before anything is written. An lvm on
// PATH records every call.
func TestRootTreeNeverRunsThisHostsLVM(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "snap")
	if err := fixture.LabGuest().Write(tree); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	calls := filepath.Join(t.TempDir(), "lvm-calls")
	script := "#!/bin/sh\necho \"$@\" >> " + calls + "\necho '{\"report\":[{\"lv\":[]}]}'\n"
	if err := os.WriteFile(filepath.Join(bin, "lvm"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	plan := filepath.Join(t.TempDir(), "plan.yaml")
	if code, _, stderr := runTB(t, execx.Exec{}, "--root", tree, "lvm", "plan", "-o", plan); code != 0 {
		t.Fatalf("plan from the tree: %d %s", code, stderr)
	}
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"lvm", "status"}, 3, "no lvm/ directory"},
		{[]string{"integrity", "status"}, 3, "no lvm/ directory"},
		{[]string{"lvm", "apply", "--yes", plan}, 3, "no lvm/ directory"},
		{[]string{"lvm", "apply", "--dry-run", plan}, 3, "no lvm/ directory"},
		{[]string{"lvm", "replace", "--yes", "vg-hdd/tables", "--old", "missing", "--new", "/dev/sdg"}, 3, "no lvm/ directory"},
	} {
		code, _, stderr := runTB(t, execx.Exec{}, append([]string{"--root", tree}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.says) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", strings.Join(c.args, " "), code, stderr, c.code, c.says)
		}
	}
	if b, err := os.ReadFile(calls); err == nil {
		t.Errorf("this machine's lvm was run under --root:\n%s", b)
	}
	// a rig that declares its lvm a stand-in for the tree's (the Ansible
	// tests' fake lvm2) is asked
	var out, errb bytes.Buffer
	env := &cliutil.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Runner: execx.Exec{}, RootLVMOnPath: true}
	run([]string{"tbhost", "--root", tree, "lvm", "status"}, env)
	if b, err := os.ReadFile(calls); err != nil || !strings.Contains(string(b), "lvs") {
		t.Errorf("with RootLVMOnPath the lvm on PATH was not asked: %v %q; stderr %s", err, b, errb.String())
	}
}
