package cliutil

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCodeOf(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{Problemf("refused"), ExitProblem},
		{fmt.Errorf("wrapped: %w", Usagef("bad flag")), ExitUsage},
		{errors.New("plain failure"), ExitCannotRun},
		{CannotRun(errors.New("no lvm")), ExitCannotRun},
	}
	for _, c := range cases {
		if got := CodeOf(c.err); got != c.want {
			t.Errorf("CodeOf(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

func TestConfirmRefusesWithoutTerminal(t *testing.T) {
	var errb bytes.Buffer
	g := &Globals{Env: &Env{Stdin: strings.NewReader("yes\n"), Stderr: &errb}}
	err := g.Confirm("wipe /dev/sdb", "--yes")
	if CodeOf(err) != ExitProblem || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("got %v; want a refusal naming --yes", err)
	}
}

func TestConfirmNeedsTypedYes(t *testing.T) {
	for input, ok := range map[string]bool{"yes\n": true, "y\n": false, "\n": false, "no\n": false} {
		var errb bytes.Buffer
		g := &Globals{Env: &Env{Stdin: strings.NewReader(input), Stderr: &errb, IsTerminal: func() bool { return true }}}
		err := g.Confirm("wipe /dev/sdb", "--yes")
		if (err == nil) != ok {
			t.Errorf("input %q: err = %v", input, err)
		}
	}
}

func TestPathUnderRoot(t *testing.T) {
	g := &Globals{Root: "/tmp/snap"}
	if got := g.Path("/sys/block"); got != "/tmp/snap/sys/block" {
		t.Errorf("got %s", got)
	}
	g.Root = "/"
	if got := g.Path("/sys/block"); got != "/sys/block" {
		t.Errorf("got %s", got)
	}
}
