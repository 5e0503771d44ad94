package playbookcmd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tbhost/tbhost/playbooks"
	"github.com/urfave/cli/v2"
)

// liveCommands checks playbook steps against the running binary's own
// command tree, so validation follows the command groups this build has.
type liveCommands struct{ app *cli.App }

func commandNames(cmds []*cli.Command) string {
	var names []string
	for _, c := range cmds {
		if !c.Hidden && c.Name != "help" {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// isGroup: a command with subcommands of its own (urfave/cli gives a leaf
// that has run once a hidden "help" subcommand: not a group).
func isGroup(c *cli.Command) bool { return commandNames(c.Subcommands) != "none" }

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.Name == name || slices.Contains(c.Aliases, name) {
			return c
		}
	}
	return nil
}

func findFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

// Check implements playbooks.CommandSet.
func (l liveCommands) Check(argv []string) error {
	cmds := l.app.Commands
	var cur *cli.Command
	var path []string
	i := 0
	for ; i < len(argv); i++ {
		a := argv[i]
		if strings.HasPrefix(a, "-") || (cur != nil && !isGroup(cur)) {
			break
		}
		next := findCommand(cmds, a)
		if next == nil {
			where := "tbhost"
			if cur != nil {
				where = "tbhost " + strings.Join(path, " ")
			}
			return &playbooks.UnknownCommandError{Argv: argv, Msg: fmt.Sprintf("this tbhost has no command %q in %q (it has: %s)", a, where, commandNames(cmds))}
		}
		cur, cmds = next, next.Subcommands
		path = append(path, next.Name)
	}
	if cur == nil {
		return &playbooks.UnknownCommandError{Argv: argv, Msg: fmt.Sprintf("tbhost: %v does not start with a command (commands: %s)", argv, commandNames(l.app.Commands))}
	}
	name := "tbhost " + strings.Join(path, " ")
	if isGroup(cur) {
		return &playbooks.UnknownCommandError{Argv: argv, Msg: fmt.Sprintf("%s is a command group; name one of its commands: %s", name, commandNames(cur.Subcommands))}
	}
	// Flags may come after the arguments: the step runs through
	// cliutil.Run, which moves them first (cliutil.FlagsFirst).
	for ; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue
		}
		flagName, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := findFlag(cur.Flags, flagName)
		if f == nil {
			if flagName == "help" || flagName == "h" {
				continue
			}
			var known []string
			for _, f := range cur.Flags {
				known = append(known, "--"+f.Names()[0])
			}
			return fmt.Errorf("%s has no flag %s (its flags: %s)", name, a, strings.Join(known, ", "))
		}
		if tv, ok := f.(interface{ TakesValue() bool }); ok && tv.TakesValue() && !hasValue {
			i++
			if i >= len(argv) {
				return fmt.Errorf("%s: flag %s needs a value", name, a)
			}
		}
	}
	return nil
}
