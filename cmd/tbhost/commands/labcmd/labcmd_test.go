package labcmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/lab/rehearse"
	"github.com/urfave/cli/v2"
)

// runLab runs `tbhost lab ...` in-process; nothing is recorded, so any
// attempt to exec a program fails the command instead of running it.
func runLab(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cliutil.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Runner: execx.NewRecorded()}
	code := cliutil.Run(cliutil.NewApp(env, []*cli.Command{Command()}), env, append([]string{"tbhost", "lab"}, args...))
	return code, out.String(), errb.String()
}

func TestRunUsageErrorsExit2BeforeBooting(t *testing.T) {
	script := filepath.Join(t.TempDir(), "s.sh")
	os.WriteFile(script, []byte("true\n"), 0o644)
	// a missing script is "could not run" (3), as a missing file is in
	// every command (README, exit codes); still before booting
	if code, _, stderr := runLab(t, "run", "/no/such/script"); code != cliutil.ExitCannotRun || !strings.Contains(stderr, "script") {
		t.Errorf("run /no/such/script: exit %d stderr %q, want 3", code, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "exactly one SCRIPT"},
		{[]string{"run", "--block", "1k", script}, "--block"},
		{[]string{"run", "--hdd-size", "1MiB", script}, "--hdd-size"},
		{[]string{"run", "--hdd", "30", script}, "24 disks"},
		{[]string{"run", "--file", "relative=x", script}, "--file"},
		{[]string{"nope"}, "nope"},
	} {
		code, _, stderr := runLab(t, tc.args...)
		if code != cliutil.ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d stderr %q, want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestParseDisksShapes(t *testing.T) {
	var got []string
	app := &cli.App{Flags: runCommand().Flags, Action: func(c *cli.Context) error {
		ds, err := parseDisks(c)
		if err != nil {
			return err
		}
		for _, d := range ds {
			got = append(got, d.Name+"/"+d.Serial+"/"+string(d.Kind))
			if d.LogicalBlockSize != 512 || d.PhysicalBlockSize != 4096 {
				t.Errorf("%s: %d/%d, want 512e", d.Name, d.LogicalBlockSize, d.PhysicalBlockSize)
			}
		}
		if ds[0].SizeMiB != 512 || ds[2].SizeMiB != 64 {
			t.Errorf("sizes %d %d", ds[0].SizeMiB, ds[2].SizeMiB)
		}
		return nil
	}}
	if err := app.Run([]string{"x", "--hdd", "2", "--nvme", "1", "--hdd-size", "512MiB", "--nvme-size", "64MiB", "--block", "512e"}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "hdd1/HDD1/hdd hdd2/HDD2/hdd nvme1/NVME1/nvme" {
		t.Errorf("disks %v", got)
	}
}

func TestRehearseUsageErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("version: 1\ndevices: [\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"rehearse"}, "exactly one PLAN.yaml", cliutil.ExitUsage},
		// the README's rule: a missing file 3, a file refused 1
		{[]string{"rehearse", "/no/such/plan.yaml"}, "plan.yaml", cliutil.ExitCannotRun},
		{[]string{"rehearse", bad}, "bad.yaml", cliutil.ExitProblem},
	} {
		code, _, stderr := runLab(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d stderr %q, want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

func TestWriteRehearsalNamesScaleShapesAndProblems(t *testing.T) {
	rep := &rehearse.Report{
		Plan:   "ref.yaml",
		Scales: []rehearse.Scale{{Role: "hdd", Factor: 22355.6, Real: 6001175126016, Lab: 256 << 20}},
		Arrays: []rehearse.ArrayComparison{{Array: "vg-hdd/tables", State: "ok",
			Planned:   rehearse.ArrayShape{Type: "raid5", Stripes: 6, DataStripes: 5, Devices: 6, Integrity: true, IntegrityMode: "journal", IntegrityBlockSize: 4096},
			Rehearsed: rehearse.ArrayShape{Type: "raid5", Stripes: 6, DataStripes: 5, Devices: 6, Integrity: true, IntegrityMode: "journal", IntegrityBlockSize: 4096}}},
		MonitorStatus: "WARNING", MonitorLine: "vg-hdd/tables: sdc reads 40% below the mean",
		Problems: []string{"monitor check under a read load: WARNING"},
	}
	var b bytes.Buffer
	writeRehearsal(&b, rep)
	out := b.String()
	for _, want := range []string{"PROBLEM: 1 finding", "scale hdd : 1:22356", "vg-hdd/tables (planned)  raid5", "journal/4096", "monitor check under read load: WARNING"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
