package execx

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestExecCapturesOutputAndLocale(t *testing.T) {
	res, err := Exec{}.Run(context.Background(), "sh", "-c", `echo "$LC_ALL"; echo err >&2`)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(res.Stdout)); got != "C" {
		t.Errorf("LC_ALL = %q, want C", got)
	}
	if got := strings.TrimSpace(string(res.Stderr)); got != "err" {
		t.Errorf("stderr = %q", got)
	}
}

func TestExecTypedErrorCarriesExitCodeAndStderr(t *testing.T) {
	_, err := Exec{}.Run(context.Background(), "sh", "-c", "echo 'Volume group not found' >&2; exit 5")
	var ce *CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *CommandError", err)
	}
	if ce.ExitCode != 5 || !strings.Contains(ce.Stderr, "Volume group not found") {
		t.Errorf("got exit %d stderr %q", ce.ExitCode, ce.Stderr)
	}
	if !strings.Contains(err.Error(), "sh -c") || !strings.Contains(err.Error(), "exit status 5") {
		t.Errorf("message %q must name the command line and exit status", err)
	}
	if ExitCode(err) != 5 {
		t.Errorf("ExitCode = %d", ExitCode(err))
	}
}

func TestExecTimeoutKillsCommand(t *testing.T) {
	start := time.Now()
	_, err := Exec{Timeout: 200 * time.Millisecond}.Run(context.Background(), "sleep", "10")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want deadline exceeded, got %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %v: the command was not killed", time.Since(start))
	}
}

func TestExecNotFound(t *testing.T) {
	_, err := Exec{}.Run(context.Background(), "tbhost-no-such-program")
	if !NotFound(err) || !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("want not found, got %v", err)
	}
}

func TestRecordedRepliesInOrderAndRejectsUnknown(t *testing.T) {
	r := NewRecorded().
		On(Reply{Stdout: "one"}, "lvs", "a").
		On(Reply{Stdout: "two"}, "lvs", "a").
		On(Reply{Stderr: "boom", ExitCode: 5}, "lvcreate")
	ctx := context.Background()
	for _, want := range []string{"one", "two", "two"} {
		res, err := r.Run(ctx, "lvs", "a")
		if err != nil || string(res.Stdout) != want {
			t.Fatalf("got %q, %v; want %q", res.Stdout, err, want)
		}
	}
	if _, err := r.Run(ctx, "lvcreate"); ExitCode(err) != 5 {
		t.Errorf("want exit 5, got %v", err)
	}
	if _, err := r.Run(ctx, "rm", "-rf", "/"); err == nil {
		t.Error("an unrecorded command must fail")
	}
	if len(r.Calls) != 5 {
		t.Errorf("calls = %d", len(r.Calls))
	}
}

func TestQuote(t *testing.T) {
	got := Quote([]string{"lvcreate", "--name", "my lv", "it's"})
	want := `lvcreate --name 'my lv' 'it'\''s'`
	if got != want {
		t.Errorf("got %s want %s", got, want)
	}
}
