package playbookcmd

import (
	"strconv"
	"strings"

	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/urfave/cli/v2"
)

// opts reads a leaf command's flags wherever they were typed. urfave/cli v2
// stops reading flags at the first argument, so `tbhost playbook run
// provision-host --dry-run` (the way the issue and most users write it)
// would take --dry-run as an argument; opts parses those trailing flags too.
type opts struct {
	c     *cli.Context
	after map[string]string // primary flag name -> value given after the first argument
	args  []string          // the positional arguments
	help  bool
}

// parseOnePlaybook parses the options of a subcommand that takes exactly one
// playbook (NAME or FILE). handled is true when --help was asked for and
// shown: the caller returns err (showHelp's) and does nothing else.
func parseOnePlaybook(c *cli.Context, verb string) (o *opts, handled bool, err error) {
	o, err = parseOpts(c)
	if err != nil {
		return nil, true, err
	}
	if o.help {
		return nil, true, o.showHelp()
	}
	if len(o.args) != 1 {
		return nil, true, cliutil.Usagef("%s takes one playbook (NAME or FILE), got %q", verb, o.args)
	}
	return o, false, nil
}

func parseOpts(c *cli.Context) (*opts, error) {
	o := &opts{c: c, after: map[string]string{}}
	byName := map[string]cli.Flag{}
	for _, f := range c.Command.Flags {
		for _, n := range f.Names() {
			byName[n] = f
		}
	}
	all := c.Args().Slice()
	for i := 0; i < len(all); i++ {
		a := all[i]
		if a == "--" {
			o.args = append(o.args, all[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			o.args = append(o.args, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "help" || name == "h" {
			o.help = true
			continue
		}
		f := byName[name]
		if f == nil {
			return nil, cliutil.Usagef("flag provided but not defined: %s (see tbhost playbook %s --help)", a, c.Command.Name)
		}
		primary := f.Names()[0]
		if tv, ok := f.(interface{ TakesValue() bool }); ok && tv.TakesValue() {
			if !hasVal {
				i++
				if i >= len(all) {
					return nil, cliutil.Usagef("flag needs an argument: %s", a)
				}
				val = all[i]
			}
			if sv, ok := c.Generic(primary).(*setValue); ok {
				_ = sv.Set(val) // a repeatable flag (--set)
				continue
			}
		} else if !hasVal {
			val = "true"
		}
		o.after[primary] = val
	}
	return o, nil
}

// Bool is a boolean flag's value, typed before or after the arguments.
func (o *opts) Bool(name string) bool {
	if v, ok := o.after[name]; ok {
		b, _ := strconv.ParseBool(v)
		return b
	}
	return o.c.Bool(name)
}

// String is a string flag's value, typed before or after the arguments.
func (o *opts) String(name string) string {
	if v, ok := o.after[name]; ok {
		return v
	}
	return o.c.String(name)
}

// globals is cliutil.Get with --json honoured after the arguments too.
func (o *opts) globals() *cliutil.Globals {
	g := cliutil.Get(o.c)
	g.JSON = g.JSON || o.Bool("json")
	return g
}

// showHelp prints the command's help (for --help after the arguments).
func (o *opts) showHelp() error {
	lineage := o.c.Lineage()
	if len(lineage) > 1 {
		return cli.ShowCommandHelp(lineage[1], o.c.Command.Name)
	}
	return cli.ShowAppHelp(o.c)
}
