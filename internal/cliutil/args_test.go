package cliutil

import (
	"reflect"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func testApp() *cli.App {
	return &cli.App{
		Name:  "tbhost",
		Flags: GlobalFlags(),
		Commands: []*cli.Command{{
			Name: "monitor",
			Subcommands: []*cli.Command{{
				Name: "check",
				Flags: []cli.Flag{
					&cli.DurationFlag{Name: "for"},
					&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}},
					&cli.StringFlag{Name: "output", Aliases: []string{"o"}},
				},
			}},
		}},
	}
}

func TestFlagsFirst(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"tbhost monitor check vg/lv --for 10s", "tbhost monitor check --for 10s -- vg/lv"},
		{"tbhost --root /x monitor check vg/lv -q a", "tbhost --root /x monitor check -q -- vg/lv a"},
		{"tbhost monitor check a -o out b --for=1s", "tbhost monitor check -o out --for=1s -- a b"},
		{"tbhost monitor check a -- --for 1s -", "tbhost monitor check -- a --for 1s -"},
		{"tbhost monitor check - --quiet", "tbhost monitor check --quiet -- -"},
		{"tbhost monitor check a --for", "tbhost monitor check --for"},
		{"tbhost monitor check a --help", "tbhost monitor check --help"},
		{"tbhost monitor check a --bogus b", "tbhost monitor check --bogus -- a b"},
		{"tbhost monitor check --for 1s", "tbhost monitor check --for 1s"},
		{"tbhost monitor check a --generate-bash-completion", "tbhost monitor check -- a --generate-bash-completion"},
		{"tbhost help monitor --x", "tbhost help monitor --x"},
		{"tbhost monitor nope --for 1s", "tbhost monitor nope --for 1s"},
		{"tbhost --root", "tbhost --root"},
		{"tbhost", "tbhost"},
	} {
		got := FlagsFirst(testApp(), strings.Fields(tc.in))
		if !reflect.DeepEqual(got, strings.Fields(tc.want)) {
			t.Errorf("FlagsFirst(%s)\n got %q\nwant %q", tc.in, got, strings.Fields(tc.want))
		}
	}
}

// A usage error in a subcommand at any depth is exit 2 (urfave/cli calls only
// the running command's OnUsageError, which NewApp sets everywhere).
func TestNewAppUsageErrorsAtEveryDepth(t *testing.T) {
	for _, args := range [][]string{
		{"tbhost", "--bogus"},
		{"tbhost", "monitor", "--bogus"},
		{"tbhost", "monitor", "check", "--bogus"},
		{"tbhost", "monitor", "check", "--for", "10x"},
		{"tbhost", "monitor", "check", "vg/lv", "--for", "10x"},
	} {
		var out, errb strings.Builder
		env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb}
		app := testApp()
		app = NewApp(env, app.Commands)
		if code := Run(app, env, args); code != ExitUsage {
			t.Errorf("%q: exit %d, want %d: %s", args, code, ExitUsage, errb.String())
		}
	}
}
