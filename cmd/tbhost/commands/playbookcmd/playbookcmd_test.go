package playbookcmd

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/playbooks"
	"github.com/urfave/cli/v2"
)

// issueInterface is the command tree the other command groups are being
// built to (their flags as named in issues 2, 4, 5, 6 and 8). The embedded
// playbooks must validate against it; cmd/tbhost's test checks them against
// the real tree once the groups are merged.
func issueInterface() []*cli.Command {
	str := func(names ...string) cli.Flag {
		return &cli.StringFlag{Name: names[0], Aliases: names[1:]}
	}
	slice := func(name string) cli.Flag { return &cli.StringSliceFlag{Name: name} }
	boolean := func(name string) cli.Flag { return &cli.BoolFlag{Name: name} }
	leaf := func(name string, flags ...cli.Flag) *cli.Command {
		return &cli.Command{Name: name, Flags: append(flags, cliutil.JSONFlag()), Action: func(*cli.Context) error { return nil }}
	}
	group := func(name string, subs ...*cli.Command) *cli.Command {
		return &cli.Command{Name: name, Subcommands: subs, Action: cliutil.GroupAction}
	}
	return []*cli.Command{
		leaf("inventory"),
		group("lvm",
			leaf("plan", slice("hdd"), slice("nvme"), str("prefix-size"), str("integrity-mode"), str("integrity-blocksize"), str("output", "o"), slice("wipe"), boolean("example")),
			leaf("apply", boolean("dry-run"), boolean("yes"), boolean("wait-sync")),
			leaf("status", str("plan")),
			leaf("replace", boolean("dry-run"), boolean("yes"), str("old"), str("new"), str("plan"), str("plan-out"), str("state-dir"), str("poll"))),
		group("prefix",
			leaf("stats", boolean("files")),
			leaf("plan", slice("tables"), str("capacity")),
			leaf("extract", slice("tables"), str("store"), str("upto"), str("jobs")),
			leaf("verify", slice("tables"), str("store"), boolean("full"))),
		group("monitor",
			leaf("check", str("for"), str("interval"), str("warn"), str("crit"), str("min-reads"), str("no-traffic"), boolean("quiet"), str("textfile")),
			leaf("watch"),
			leaf("serve", str("listen"))),
		group("integrity",
			leaf("status"),
			leaf("scrub", str("rate"), str("budget"), str("until"), str("state"), boolean("syncaction")),
			leaf("verify-tables", str("checksums"), str("jobs"), str("rate"), boolean("complete"), boolean("no-hash"))),
		group("bench",
			leaf("probe", slice("tables"), str("store"), str("io"), str("advise"), str("parallel"), str("requests"), str("warmup"), str("clients"), str("rate"), boolean("matrix"), str("out"), str("offset")),
			leaf("replay", str("log"), slice("target"), str("clients"), str("warmup"), str("rate"), str("out"), str("offset"), slice("gate"))),
		group("tables",
			leaf("sync", str("from"), str("to"), str("checksums"), str("set"), str("bwlimit"))),
	}
}

// testApp is tbhost as main builds it, with the playbook group and, if
// withGroups, stubs of the other groups.
func testApp(withGroups bool, stdin string) (*cli.App, *cliutil.Env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	cmds := []*cli.Command{Command()}
	if withGroups {
		cmds = append(cmds, issueInterface()...)
	}
	env := &cliutil.Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Runner: execx.NewRecorded()}
	return cliutil.NewApp(env, cmds), env, &out, &errb
}

func runApp(t *testing.T, withGroups bool, args ...string) (int, string, string) {
	t.Helper()
	app, env, out, errb := testApp(withGroups, "")
	code := cliutil.Run(app, env, append([]string{"tbhost"}, args...))
	return code, out.String(), errb.String()
}

func TestEmbeddedPlaybooksValidateAgainstTheIssuesInterface(t *testing.T) {
	code, out, stderr := runApp(t, true, "playbook", "validate")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	for _, n := range []string{"provision-host", "pre-cutover", "health-check", "replace-disk", "migrate"} {
		if !strings.Contains(out, "ok: "+n) {
			t.Errorf("no ok for %s:\n%s", n, out)
		}
	}
}

func TestValidateNamesMissingCommandsOfThisBuild(t *testing.T) {
	code, out, _ := runApp(t, false, "playbook", "validate", "health-check")
	if code != 1 || !strings.Contains(out, `embedded:health-check:`) || !strings.Contains(out, `no command "monitor"`) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestLiveCommandsCheck(t *testing.T) {
	app, _, _, _ := testApp(true, "")
	lc := liveCommands{app}
	for _, ok := range [][]string{
		{"lvm", "apply", "--yes", "--dry-run", "/p.yaml"},
		{"lvm", "plan", "-o", "/p.yaml", "--hdd=/dev/a"},
		{"monitor", "check", "--for", "60s", "vg/lv"},
		{"lvm", "apply", "/p.yaml", "--yes"}, // flags after arguments work for every command
		{"prefix", "verify", "--tables", "/t", "--store", "/s", "--", "--odd"},
	} {
		if err := lc.Check(ok); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	for _, tc := range []struct {
		argv    []string
		want    string
		unknown bool
	}{
		{[]string{"lvm", "destroy"}, `no command "destroy" in "tbhost lvm" (it has: plan, apply, status, replace)`, true},
		{[]string{"nope"}, `no command "nope" in "tbhost"`, true},
		{[]string{"lvm"}, "tbhost lvm is a command group; name one of its commands: plan, apply, status", true},
		{[]string{"lvm", "apply", "/p.yaml", "--force"}, "tbhost lvm apply has no flag --force", false},
		{[]string{"lvm", "apply", "--force", "/p.yaml"}, "tbhost lvm apply has no flag --force", false},
		{[]string{"monitor", "check", "--for"}, "flag --for needs a value", false},
	} {
		err := lc.Check(tc.argv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.argv, err, tc.want)
			continue
		}
		_, isUnknown := err.(*playbooks.UnknownCommandError)
		if isUnknown != tc.unknown {
			t.Errorf("%v: unknown-command type %v, want %v", tc.argv, isUnknown, tc.unknown)
		}
	}
}

func TestDryRunOfEachEmbeddedPlaybook(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"provision-host", []string{"--set", "hdd=/dev/sda,/dev/sdb,/dev/sdc", "--set", "nvme=/dev/nvme0n1p4"},
			[]string{"tbhost lvm plan --hdd /dev/sda --hdd /dev/sdb --hdd /dev/sdc --nvme /dev/nvme0n1p4 -o /var/lib/tbhost/provision-host/plan.yaml", "tbhost lvm apply --yes /var/lib/tbhost/provision-host/plan.yaml", `type "apply"`}},
		{"pre-cutover", []string{"--hold-file", "/run/tbhost-hold"},
			[]string{"tbhost integrity verify-tables --checksums /var/lib/tbhost/checksums/sha256 --complete /srv/syzygy", "load:     tbhost bench probe --tables /srv/syzygy --store /srv/syzygy-prefix --clients 12", "hold:     waits while /run/tbhost-hold exists", "report:   go-no-go"}},
		{"health-check", nil,
			[]string{"tbhost integrity scrub --rate 400MiB/s --budget 2h vg-hdd/tables", "tbhost prefix verify --tables /srv/syzygy --store /srv/syzygy-prefix", "exit 1 = CRITICAL, exit 2 = UNKNOWN"}},
	} {
		args := append([]string{"playbook", "run", "--dry-run"}, tc.args...)
		code, out, stderr := runApp(t, true, append(args, tc.name)...)
		if code != 0 {
			t.Errorf("%s: exit %d\n%s%s", tc.name, code, out, stderr)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: dry run lacks %q:\n%s", tc.name, w, out)
			}
		}
		// issue 18: what will run, not template internals or empty values
		for _, bad := range []string{"map[", "file exists \n", "--log --target", "--log  --target"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s: dry run shows %q:\n%s", tc.name, bad, out)
			}
		}
	}
}

func TestRunUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"playbook", "run", "--set", "nope=1", "health-check"}, 2, `has no parameter "nope"`},
		{[]string{"playbook", "run", "no-such-playbook"}, 2, "built in: health-check, migrate, pre-cutover, provision-host"},
		{[]string{"playbook", "run", "--hold-file", "/x", "health-check"}, 2, "has no hold_file parameter"},
		{[]string{"playbook", "run", "health-check", "pre-cutover"}, 2, "takes one playbook"},
		{[]string{"playbook", "run", "health-check", "--no-such-flag"}, 2, "flag provided but not defined: -no-such-flag"},
		{[]string{"playbook", "run", "health-check", "--from"}, 2, "flag needs an argument: -from"},
		{[]string{"playbook", "schedule", "--at", "25:00", "health-check"}, 2, "HH:MM"},
	} {
		code, out, stderr := runApp(t, true, tc.args...)
		if code != tc.code || !strings.Contains(stderr+out, tc.want) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s%s", tc.args, code, tc.code, tc.want, out, stderr)
		}
	}
}

func TestShowDocumentsParametersAndSteps(t *testing.T) {
	code, out, _ := runApp(t, false, "playbook", "show", "pre-cutover")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	// issue 18: the YAML's own keys (tbhost:, report:, hold_file:), not "run: tbhost ..."
	for _, want := range []string{"PARAMETERS (--set NAME=VALUE):", "hold_file", "STEPS:", "go-no-go", "report: go-no-go", "hold_file: {{.hold_file}}",
		"tbhost: monitor check --for {{.load_for}}", "require: exists: {{.replay_log}}", "--dry-run"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "run: tbhost") {
		t.Errorf("show says run: where the YAML says tbhost:\n%s", out)
	}
}

func TestTypoInUserPlaybookFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "mine.yaml")
	os.WriteFile(f, []byte("name: mine\nsteps:\n  - name: a\n    shel: [true]\n"), 0o644)
	for _, cmd := range []string{"validate", "run"} {
		code, out, stderr := runApp(t, false, "playbook", cmd, f)
		if code != 1 || !strings.Contains(out+stderr, f+`:4:5: unknown key "shel" in a step (did you mean "shell"?)`) {
			t.Errorf("%s: exit %d\n%s%s", cmd, code, out, stderr)
		}
	}
}

func TestScheduleInstallAndRefusals(t *testing.T) {
	dir := t.TempDir()
	pbFile := filepath.Join(dir, "nightly.yaml")
	os.WriteFile(pbFile, []byte("name: nightly\nnagios: true\nsteps:\n  - name: a\n    description: d\n    shell: [true]\n"), 0o644)
	bin := filepath.Join(dir, "tbhost")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	args := []string{"playbook", "schedule", "--install", "--dest", dir, "--binary", bin, pbFile}
	code, out, stderr := runApp(t, false, args...)
	if code != 0 || !strings.Contains(out, "systemctl enable --now tbhost-nightly.timer") {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	svc, err := os.ReadFile(filepath.Join(dir, "tbhost-nightly.service"))
	if err != nil || !strings.Contains(string(svc), "ExecStart="+bin+" playbook run --yes "+pbFile) {
		t.Fatalf("service: %v\n%s", err, svc)
	}
	if _, err := os.Stat(filepath.Join(dir, "tbhost-nightly.timer")); err != nil {
		t.Fatal(err)
	}
	t.Run("systemd-analyze verify", func(t *testing.T) {
		analyze, err := exec.LookPath("systemd-analyze")
		if err != nil {
			t.Skip("systemd-analyze not installed (Debian package systemd; .ci/install-deps installs it): units not verified")
		}
		if out, err := exec.Command(analyze, "verify", filepath.Join(dir, "tbhost-nightly.service"), filepath.Join(dir, "tbhost-nightly.timer")).CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("systemd-analyze verify: %v\n%s", err, out)
		}
	})
	if code, out, _ := runApp(t, false, args...); code != 0 || !strings.Contains(out, "unchanged") {
		t.Errorf("second install: exit %d %s", code, out)
	}
	os.WriteFile(filepath.Join(dir, "tbhost-nightly.timer"), []byte("# edited by hand\n"), 0o644)
	if code, _, stderr := runApp(t, false, args...); code != 1 || !strings.Contains(stderr, "--force") {
		t.Errorf("a hand-edited unit must not be replaced without --force: exit %d %s", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "tbhost-nightly.timer")); string(b) != "# edited by hand\n" {
		t.Error("the refused install changed the file")
	}
	code, out, _ = runApp(t, false, "playbook", "schedule", "--cron", "--at", "04:15", "--binary", bin, pbFile)
	if code != 0 || !strings.Contains(out, "15 4 * * * root flock -n /run/lock/tbhost-nightly.lock "+bin+" playbook run --yes "+pbFile) {
		t.Errorf("cron: exit %d\n%s", code, out)
	}
	// A playbook with a confirmation gate is never scheduled (it would run with --yes).
	if code, _, stderr := runApp(t, true, "playbook", "schedule", "--binary", bin, "provision-host"); code != 1 || !strings.Contains(stderr, "confirmation gate (step lvm-apply") {
		t.Errorf("provision-host scheduled: exit %d %s", code, stderr)
	}
	// A playbook that does not validate against this build is not scheduled.
	if code, _, stderr := runApp(t, false, "playbook", "schedule", "--binary", bin, "health-check"); code != 1 || !strings.Contains(stderr, "does not validate") {
		t.Errorf("invalid playbook scheduled: exit %d %s", code, stderr)
	}
}

// The issue writes flags after the playbook (run NAME [--dry-run] ...);
// urfave/cli alone would take them as arguments.
func TestFlagsAfterThePlaybookName(t *testing.T) {
	code, out, stderr := runApp(t, true, "playbook", "run", "provision-host", "--set", "hdd=/dev/sdx", "-n", "--from=lvm-plan")
	if code != 0 || !strings.Contains(out, "tbhost lvm plan --hdd /dev/sdx -o") {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = runApp(t, true, "playbook", "run", "health-check", "--dry-run", "--json")
	if code != 0 || !strings.HasPrefix(out, "{") || !strings.Contains(out, `"steps"`) {
		t.Errorf("--json after the name: exit %d %.200s", code, out)
	}
	code, out, _ = runApp(t, true, "playbook", "show", "health-check", "--json")
	if code != 0 || !strings.Contains(out, `"nagios": true`) {
		t.Errorf("show --json after the name: exit %d %.200s", code, out)
	}
	code, out, _ = runApp(t, true, "playbook", "run", "health-check", "--help")
	if code != 0 || !strings.Contains(out, "--accept-changes") {
		t.Errorf("--help after the name: exit %d %.300s", code, out)
	}
	code, out, _ = runApp(t, true, "playbook", "schedule", "health-check", "--cron", "--binary", "/usr/local/bin/tbhost", "--at", "02:10")
	if code != 0 || !strings.Contains(out, "10 2 * * * root flock -n") {
		t.Errorf("schedule flags after the name: exit %d\n%s", code, out)
	}
}
