package lvmcmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/urfave/cli/v2"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cliutil.Env{Runner: execx.NewRecorded(), Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb}
	code := cliutil.Run(cliutil.NewApp(env, []*cli.Command{Command()}), env, append([]string{"tbhost"}, args...))
	return code, out.String(), errb.String()
}

// The command line of tbhost lvm replace (issue 14): usage errors exit 2
// and run nothing (the recorded runner has no replies: any lvm call fails).
func TestReplaceUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"lvm", "replace"}, "one VG/LV"},
		{[]string{"lvm", "replace", "tables", "--old", "missing", "--new", "/dev/sdg"}, "VG/LV"},
		{[]string{"lvm", "replace", "vg-hdd/tables", "--new", "/dev/sdg"}, "--old"},
		{[]string{"lvm", "replace", "vg-hdd/tables", "--old", "missing"}, "--new"},
		{[]string{"lvm", "replace", "--plan-out", "x.yaml", "vg-hdd/tables", "--old", "missing", "--new", "/dev/sdg"}, "--plan-out needs --plan"},
		{[]string{"lvm", "replace", "--hdd-rate", "fast", "vg-hdd/tables", "--old", "missing", "--new", "/dev/sdg"}, "--hdd-rate"},
	} {
		code, _, errs := runCLI(t, tc.args...)
		if code != cliutil.ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %q", tc.args, code, errs, tc.want)
		}
	}
	// a bad --new is tbhost's refusal (exit 1), not lvm's
	code, _, errs := runCLI(t, "lvm", "replace", "--state-dir", t.TempDir(), "vg-hdd/tables", "--old", "missing", "--new", "-rf")
	if code != cliutil.ExitProblem || !strings.Contains(errs, "looks like an option") {
		t.Errorf("--new -rf: exit %d %q", code, errs)
	}
}

func TestReadUptime(t *testing.T) {
	p := filepath.Join(t.TempDir(), "uptime")
	os.WriteFile(p, []byte("1234.56 2000.00\n"), 0o644)
	if d, err := readUptime(p); err != nil || d != 1234560*time.Millisecond {
		t.Errorf("%v %v", d, err)
	}
	for _, bad := range []string{"", "x 1", "-5 1"} {
		os.WriteFile(p, []byte(bad), 0o644)
		if _, err := readUptime(p); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
