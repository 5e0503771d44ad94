package cliutil

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// bashCompletionFlag is the flag urfave/cli's shell completion appends as
// the last argument; it must stay last.
const bashCompletionFlag = "--generate-bash-completion"

// FlagsFirst returns args (args[0] is the program name) with the flags of
// the leaf command moved before its positional arguments, so users can type
// them where they think of them:
//
//	tbhost monitor check vg-hdd/tables --for 10s
//	tbhost monitor check --for 10s -- vg-hdd/tables     (what urfave/cli parses)
//
// urfave/cli v2 stops reading flags at the first argument. FlagsFirst walks
// app's command tree as urfave/cli will: flags of the app and of each
// command group stay where they are; at the leaf command every argument
// that starts with "-" (but is not "-") is a flag, and the next argument is
// its value when the leaf's flag of that name takes one (--for 10s; --for=10s
// needs no lookup). "--" ends the flags: what follows is positional, as
// typed. The positional arguments follow a "--", so one that starts with "-"
// after the user's own "--" stays positional. An unknown flag is moved like a
// boolean one and then refused by the parser (exit 2). A value flag without
// its value is left last, so the parser says "flag needs an argument".
// -h/--help anywhere shows the leaf's help and nothing else is passed on.
// args it cannot place (an unknown command, the help command) are returned
// unchanged.
func FlagsFirst(app *cli.App, args []string) []string {
	if len(args) == 0 {
		return args
	}
	rest := append([]string(nil), args[1:]...)
	complete := len(rest) > 0 && rest[len(rest)-1] == bashCompletionFlag
	if complete {
		rest = rest[:len(rest)-1]
	}
	out := []string{args[0]}
	flags, cmds := app.Flags, app.Commands
	for {
		i := skipFlags(flags, rest)
		out = append(out, rest[:i]...)
		rest = rest[i:]
		if len(rest) == 0 || rest[0] == "--" {
			break
		}
		cmd := findCommand(cmds, rest[0])
		if cmd == nil {
			break // a positional argument of a group, or a command urfave/cli adds (help)
		}
		out = append(out, rest[0])
		rest = rest[1:]
		if len(cmd.Subcommands) > 0 {
			flags, cmds = cmd.Flags, cmd.Subcommands
			continue
		}
		out = append(out, leafFlagsFirst(cmd.Flags, rest)...)
		rest = nil
		break
	}
	out = append(out, rest...)
	if complete {
		out = append(out, bashCompletionFlag)
	}
	return out
}

// skipFlags returns how many leading arguments of args are flags (with
// their values) of a command group or the app.
func skipFlags(flags []cli.Flag, args []string) int {
	i := 0
	for i < len(args) && isFlag(args[i]) {
		if takesValue(flags, args[i]) {
			i++
		}
		i++
	}
	if i > len(args) {
		i = len(args)
	}
	return i
}

// leafFlagsFirst reorders a leaf command's arguments: flags, then "--" and
// the positional arguments.
func leafFlagsFirst(flags []cli.Flag, args []string) []string {
	var fl, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !isFlag(a) {
			pos = append(pos, a)
			continue
		}
		if isHelp(flags, a) {
			// urfave/cli would take the arguments as help topics
			// ("No help topic for 'health-check'"): help is the command's.
			return []string{a}
		}
		fl = append(fl, a)
		if takesValue(flags, a) {
			if i+1 == len(args) {
				return fl // the parser refuses the flag without its value
			}
			i++
			fl = append(fl, args[i])
		}
	}
	if len(pos) == 0 {
		return fl
	}
	return append(append(fl, "--"), pos...)
}

// isHelp reports whether a is urfave/cli's help flag (-h, --help), unless
// the command defines a flag of that name itself.
func isHelp(flags []cli.Flag, a string) bool {
	name := strings.TrimLeft(a, "-")
	if name != "h" && name != "help" {
		return false
	}
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return false
			}
		}
	}
	return true
}

func isFlag(a string) bool { return len(a) > 1 && a[0] == '-' && a != "--" }

// takesValue reports whether a (a flag as typed: -o, --for, --for=10s)
// needs the next argument as its value.
func takesValue(flags []cli.Flag, a string) bool {
	name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
	if hasValue {
		return false
	}
	for _, f := range flags {
		for _, n := range f.Names() {
			if n != name {
				continue
			}
			if tv, ok := f.(cli.DocGenerationFlag); ok {
				return tv.TakesValue()
			}
			return false
		}
	}
	return false
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// walkCommands calls fn for every command and subcommand of cmds, at every
// depth.
func walkCommands(cmds []*cli.Command, fn func(*cli.Command)) {
	for _, c := range cmds {
		fn(c)
		walkCommands(c.Subcommands, fn)
	}
}

func hasFlag(flags []cli.Flag, name string) bool {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return false
}
