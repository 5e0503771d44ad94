package main

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/urfave/cli/v2"
)

// command is one command of the real app with the names that reach it.
type command struct {
	path []string // e.g. ["prefix", "verify"]
	cmd  *cli.Command
}

// tree lists every command of the real tbhost app, groups and leaves, at
// every depth.
func tree(app *cli.App) []command {
	var out []command
	var walk func(prefix []string, cmds []*cli.Command)
	walk = func(prefix []string, cmds []*cli.Command) {
		for _, c := range cmds {
			p := append(append([]string(nil), prefix...), c.Name)
			out = append(out, command{p, c})
			walk(p, c.Subcommands)
		}
	}
	walk(nil, app.Commands)
	return out
}

func leaves(t *testing.T) []command {
	var out []command
	for _, c := range tree(newApp(&cliutil.Env{})) {
		if len(c.cmd.Subcommands) == 0 {
			out = append(out, c)
		}
	}
	if len(out) < 20 {
		t.Fatalf("only %d leaf commands found; the walk is broken", len(out))
	}
	return out
}

// usageCode is what a usage error exits with: 2 in every command (issues 12
// and 18), monitor check included: Nagios reads it as CRITICAL, so a check
// line broken by a typo pages at once instead of hiding as UNKNOWN.
func usageCode(path []string) int {
	return cliutil.ExitUsage
}

// Issue 12 defect 4: an unknown flag was exit 3 in every subcommand, because
// only the top-level app had OnUsageError. Every command at every depth,
// with the flag before or after an argument, is a usage error now.
func TestEveryCommandRefusesAnUnknownFlag(t *testing.T) {
	for _, c := range tree(newApp(&cliutil.Env{})) {
		for _, args := range [][]string{
			append(append([]string(nil), c.path...), "--no-such-flag"),
			append(append([]string(nil), c.path...), "some-arg", "--no-such-flag"),
		} {
			if len(c.cmd.Subcommands) > 0 && args[len(args)-2] == "some-arg" {
				continue // a group's first argument is a command name
			}
			code, out, stderr := runTB(t, nil, args...)
			if code != usageCode(c.path) || !strings.Contains(stderr+out, "no-such-flag") {
				t.Errorf("tbhost %s: exit %d, want %d naming the flag\n%s%s", strings.Join(args, " "), code, usageCode(c.path), out, stderr)
			}
		}
	}
}

func TestEveryCommandShowsHelp(t *testing.T) {
	for _, c := range leaves(t) {
		for _, args := range [][]string{
			append(append([]string(nil), c.path...), "--help"),
			append(append([]string(nil), c.path...), "some-arg", "--help"),
			append(append([]string(nil), c.path...), "-h", "some-arg"),
		} {
			code, out, stderr := runTB(t, nil, args...)
			if code != 0 || !strings.Contains(out, "tbhost "+strings.Join(c.path, " ")) || !strings.Contains(out, "USAGE") {
				t.Errorf("tbhost %s: exit %d, want 0 and the command's help\n%.300s%s", strings.Join(args, " "), code, out, stderr)
			}
		}
	}
}

// A value that parses for each flag type of the tree, and one that does not.
func valueFor(f cli.Flag) (good, bad string) {
	switch f.(type) {
	case *cli.IntFlag, *cli.Int64Flag, *cli.Uint64Flag, *cli.UintFlag:
		return "7", "abc"
	case *cli.Float64Flag:
		return "1.5", "abc"
	case *cli.DurationFlag:
		return "7s", "10x"
	case *cli.GenericFlag:
		return "x=1", ""
	}
	return "some-value", ""
}

func takesValue(f cli.Flag) bool {
	tv, ok := f.(cli.DocGenerationFlag)
	return ok && tv.TakesValue()
}

// Issue 12 defect 4: a typed flag's bad value (--jobs abc, --for 10x) is a
// usage error, before or after the arguments.
func TestEveryTypedFlagRefusesABadValue(t *testing.T) {
	n := 0
	for _, c := range leaves(t) {
		for _, f := range c.cmd.Flags {
			_, bad := valueFor(f)
			if bad == "" {
				continue
			}
			name := "--" + f.Names()[0]
			for _, args := range [][]string{
				append(append([]string(nil), c.path...), name, bad),
				append(append([]string(nil), c.path...), "some-arg", name, bad),
			} {
				n++
				code, out, stderr := runTB(t, nil, args...)
				if code != usageCode(c.path) || !strings.Contains(stderr+out, bad) {
					t.Errorf("tbhost %s: exit %d, want %d naming the value\n%s%s", strings.Join(args, " "), code, usageCode(c.path), out, stderr)
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d typed flags tried", n)
	}
}

// recordingApp is the real app with every leaf's Action replaced by one that
// records what the command saw, so every flag of every command can be typed
// without running anything.
func recordingApp(seen *map[string]*cli.Context) (*cli.App, *cliutil.Env) {
	var out, errb bytes.Buffer
	env := &cliutil.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb}
	app := newApp(env)
	for _, c := range tree(app) {
		if len(c.cmd.Subcommands) == 0 {
			key := strings.Join(c.path, " ")
			c.cmd.Action = func(ctx *cli.Context) error { (*seen)[key] = ctx; return nil }
		}
	}
	return app, env
}

// Issue 13: flags after positional arguments worked in playbookcmd only
// (`monitor check vg-hdd/tables --for 10s`: UNKNOWN no array "--for"). Every
// flag of every command now works after, between and before the arguments,
// in both the "--flag value" and "--flag=value" forms, and "--" ends flags.
func TestEveryFlagWorksAfterTheArguments(t *testing.T) {
	n := 0
	for _, c := range leaves(t) {
		key := strings.Join(c.path, " ")
		for _, f := range c.cmd.Flags {
			name := f.Names()[0]
			good, _ := valueFor(f)
			var forms [][]string
			if takesValue(f) {
				forms = [][]string{{"--" + name, good}, {"--" + name + "=" + good}}
			} else {
				forms = [][]string{{"--" + name}, {"--" + name + "=true"}}
			}
			for _, flag := range forms {
				for _, args := range [][]string{
					append([]string{"pos1", "pos2"}, flag...),
					append(append([]string{"pos1"}, flag...), "pos2"),
					append(append([]string(nil), flag...), "pos1", "pos2"),
				} {
					n++
					seen := map[string]*cli.Context{}
					app, env := recordingApp(&seen)
					argv := append(append([]string{"tbhost"}, c.path...), args...)
					code := cliutil.Run(app, env, argv)
					ctx := seen[key]
					if code != 0 || ctx == nil {
						t.Errorf("%s: exit %d, action not run: %s", strings.Join(argv, " "), code, env.Stderr)
						continue
					}
					if got := ctx.Args().Slice(); !reflect.DeepEqual(got, []string{"pos1", "pos2"}) {
						t.Errorf("%s: arguments %q, want [pos1 pos2]", strings.Join(argv, " "), got)
					}
					if !ctx.IsSet(name) {
						t.Errorf("%s: --%s not set", strings.Join(argv, " "), name)
					} else if v := valueOf(ctx, f); takesValue(f) && !strings.Contains(v, good) {
						t.Errorf("%s: --%s = %q, want %q", strings.Join(argv, " "), name, v, good)
					}
				}
			}
		}
	}
	if n < 500 {
		t.Fatalf("only %d combinations tried", n)
	}
}

// valueOf is a flag's value as text (a GenericFlag's Value need not be a flag.Getter).
func valueOf(ctx *cli.Context, f cli.Flag) string {
	if _, ok := f.(*cli.GenericFlag); ok {
		return fmt.Sprint(ctx.Generic(f.Names()[0]))
	}
	return fmt.Sprint(ctx.Value(f.Names()[0]))
}

func TestDoubleDashEndsFlagsEverywhere(t *testing.T) {
	for _, c := range leaves(t) {
		key := strings.Join(c.path, " ")
		seen := map[string]*cli.Context{}
		app, env := recordingApp(&seen)
		argv := append(append([]string{"tbhost"}, c.path...), "pos1", "--", "--json", "-")
		if code := cliutil.Run(app, env, argv); code != 0 || seen[key] == nil {
			t.Fatalf("%s: exit %d %s", strings.Join(argv, " "), code, env.Stderr)
		}
		if got := seen[key].Args().Slice(); !reflect.DeepEqual(got, []string{"pos1", "--json", "-"}) {
			t.Errorf("%s: arguments %q", strings.Join(argv, " "), got)
		}
	}
}

func TestValueFlagWithoutValueIsUsageError(t *testing.T) {
	code, _, stderr := runTB(t, nil, "prefix", "verify", "/srv/syzygy", "--store")
	if code != cliutil.ExitUsage || !strings.Contains(stderr, "flag needs an argument: -store") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// The repros of issue 12 defect 4 and issue 13, as written there.
func TestIssueReprosOfFlagHandling(t *testing.T) {
	code, _, stderr := runTB(t, nil, "prefix", "verify", "--bogus")
	if code != 2 || !strings.Contains(stderr, "see tbhost prefix verify --help") {
		t.Errorf("prefix verify --bogus: exit %d %s", code, stderr)
	}
	code, _, stderr = runTB(t, nil, "prefix", "extract", "--jobs", "abc")
	if code != 2 || !strings.Contains(stderr, `invalid value "abc" for flag -jobs`) {
		t.Errorf("prefix extract --jobs abc: exit %d %s", code, stderr)
	}
	code, out, stderr := runTB(t, nil, "--root", derived(t, "balanced"), "monitor", "check", "vg-hdd/tables", "--for", "10s")
	if code != 0 || !strings.HasPrefix(out, "OK: vg-hdd/tables balanced (6 disks") {
		t.Errorf("monitor check vg-hdd/tables --for 10s: exit %d\n%s%s", code, out, stderr)
	}
}
