package monitor

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/smart"
	"github.com/tbhost/tbhost/lvm"
)

// Issue 14: a member whose SMART shows reallocated and pending sectors is
// a WARNING naming the disk and the replace command; a healthy one is not.
func TestSMARTProblemsNameTheDiskAndTheReplace(t *testing.T) {
	read := func(n string) string {
		b, err := os.ReadFile("../internal/smart/testdata/" + n)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	r := execx.NewRecorded()
	r.On(execx.Reply{Stdout: read("ata-healthy.json")}, smart.Argv("/dev/sda")...)
	r.On(execx.Reply{Stdout: read("ata-reallocated-pending.json")}, smart.Argv("/dev/sdc")...)
	arrays := []Array{{Name: "vg-hdd/tables", Kind: "lvm", Members: []Member{{Disk: "sda"}, {Disk: "sdc"}, {Missing: true}}}}
	probs, notes := SMARTProblems(t.Context(), r, t.TempDir(), arrays)
	p := probs["vg-hdd/tables"]
	if len(p) != 1 || p[0].Severity != Warning || p[0].Code != lvm.CodeSMART || len(notes) != 0 {
		t.Fatalf("problems %+v notes %q", p, notes)
	}
	for _, want := range []string{"/dev/sdc (serial ZAD0C3D4)", "184 reallocated sectors", "16 pending sectors", "tbhost lvm replace --dry-run vg-hdd/tables --old /dev/sdc"} {
		if !strings.Contains(p[0].Text, want) {
			t.Errorf("%q lacks %q", p[0].Text, want)
		}
	}
	// without smartctl: a note, no problem
	probs, notes = SMARTProblems(t.Context(), notInstalled{}, t.TempDir(), arrays)
	if len(probs) != 0 || len(notes) != 1 || !strings.Contains(notes[0], "smartmontools") {
		t.Errorf("no smartctl: %+v %q", probs, notes)
	}
}

type notInstalled struct{}

func (notInstalled) Run(_ context.Context, argv ...string) (execx.Result, error) {
	return execx.Result{Argv: argv}, &execx.CommandError{Argv: argv, ExitCode: -1, Err: exec.ErrNotFound}
}
