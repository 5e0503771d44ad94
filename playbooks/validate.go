package playbooks

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// CommandSet knows the tbhost commands of the running binary. The CLI
// builds it from its live command tree, so validation stays true as command
// groups are added; tests use a small fake.
type CommandSet interface {
	// Check reports whether argv (without the program name, e.g.
	// [lvm apply --yes plan.yaml]) is a command this build has, with flags
	// it accepts. It returns an *UnknownCommandError when the command does
	// not exist, another error for a bad flag.
	Check(argv []string) error
}

// ReportGoNoGo is the built-in final report of pre-cutover style playbooks.
const ReportGoNoGo = "go-no-go"

// validPlaybookName: lower-case letters, digits, '-', '.', '_' (it names the state directory).
func validPlaybookName(s string) bool {
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || i > 0 && (r == '.' || r == '_' || r == '-')
		if !ok {
			return false
		}
	}
	return s != ""
}

// validParamName: a Go template field name ({{.name}}).
func validParamName(s string) bool {
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || i > 0 && r >= '0' && r <= '9'
		if !ok {
			return false
		}
	}
	return s != ""
}

// Validate checks a parsed playbook: parameter definitions, step names,
// every template (rendered with the defaults), and every tbhost command
// against cmds. It returns warnings (e.g. an optional command missing from
// this build) and an *ErrorList of errors.
func Validate(pb *Playbook, cmds CommandSet) (warnings ErrorList, err error) {
	return ValidateWith(pb, cmds, nil)
}

// ValidateWith validates with the values a run will use (nil: the
// defaults). A step whose when: is false with these values is not checked
// against cmds: `--set scrub=false` runs health-check on a build without
// integrity scrub.
func ValidateWith(pb *Playbook, cmds CommandSet, vals Values) (warnings ErrorList, err error) {
	v := &validator{pb: pb, cmds: cmds, vals: vals}
	v.run()
	v.errs.sort()
	v.warns.sort()
	if len(v.errs) > 0 {
		return v.warns, &v.errs
	}
	return v.warns, nil
}

type validator struct {
	pb          *Playbook
	cmds        CommandSet
	vals        Values // nil: the defaults
	errs, warns ErrorList
}

func (v *validator) fail(p Pos, format string, a ...any) {
	v.errs = append(v.errs, &Error{File: v.pb.File, Pos: p, Msg: fmt.Sprintf(format, a...)})
}

func (v *validator) warn(p Pos, format string, a ...any) {
	v.warns = append(v.warns, &Error{File: v.pb.File, Pos: p, Msg: fmt.Sprintf(format, a...)})
}

// sampleValues are the values templates are checked with: the defaults,
// or an empty value of the parameter's type.
func (v *validator) sampleValues() Values {
	vals := Values{}
	for _, p := range v.pb.Params {
		raw := ""
		if p.Default != nil {
			raw = *p.Default
		}
		val, err := p.convert(raw)
		if err != nil {
			v.fail(p.Pos, "parameter %s: default: %v", p.Name, err)
			val, _ = Param{Type: p.Type}.convert("")
		}
		vals[p.Name] = val
	}
	return vals
}

func (v *validator) run() {
	if !validPlaybookName(v.pb.Name) {
		v.fail(Pos{1, 1}, "playbook name %q: use lower-case letters, digits, '-', '.' and '_'", v.pb.Name)
	}
	seen := map[string]bool{}
	for _, p := range v.pb.Params {
		if !validParamName(p.Name) {
			v.fail(p.Pos, "parameter name %q: use letters, digits and '_' (templates refer to it as {{.%s}})", p.Name, p.Name)
		}
		if seen[p.Name] {
			v.fail(p.Pos, "parameter %q defined twice", p.Name)
		}
		seen[p.Name] = true
		if p.Type != "" && !contains(ParamTypes(), p.Type) {
			v.fail(p.Pos, "parameter %s: unknown type %q (types: %s)", p.Name, p.Type, strings.Join(ParamTypes(), ", "))
		}
		if p.Pattern != "" {
			if _, err := regexp.Compile(p.Pattern); err != nil {
				v.fail(p.Pos, "parameter %s: bad pattern: %v", p.Name, err)
			}
		}
		if p.Required && p.Default != nil {
			v.warn(p.Pos, "parameter %s is required and has a default; the default is never used", p.Name)
		}
	}
	vals := v.sampleValues()
	if v.vals != nil {
		vals = v.vals
	}
	steps := map[string]bool{}
	for _, s := range v.pb.Steps {
		if steps[s.Name] {
			v.fail(s.Pos, "step name %q used twice; --from and --resume need unique names", s.Name)
		}
		steps[s.Name] = true
		v.step(s, vals)
	}
}

func (v *validator) step(s Step, vals Values) {
	where := fmt.Sprintf("step %s", s.Name)
	if s.Report != "" && s.Report != ReportGoNoGo {
		v.fail(s.Pos, "%s: unknown report %q (built-in reports: %s)", where, s.Report, ReportGoNoGo)
	}
	cmds := v.cmds
	if s.When != nil {
		runs, err := renderBool(*s.When, vals)
		if err != nil {
			v.fail(s.When.Pos, "%s: when: %v", where, err)
		}
		if err == nil && !runs && v.vals != nil {
			v.cmds = nil // not run with these values: templates only
			defer func() { v.cmds = cmds }()
		}
	}
	v.command(s.Action, vals, where)
	if s.SkipIf != nil {
		v.command(*s.SkipIf, vals, where+": skip_if")
	}
	if s.Load != nil {
		if s.Load.Exists != nil {
			v.fail(s.Load.Pos, "%s: load must be a command (tbhost or shell), not exists", where)
		}
		v.command(*s.Load, vals, where+": load")
	}
	if s.OnFailure != nil {
		if s.OnFailure.Exists != nil {
			v.fail(s.OnFailure.Pos, "%s: on_failure must be a command (tbhost or shell), not exists", where)
		}
		v.command(*s.OnFailure, vals, where+": on_failure")
	}
	for _, r := range s.Require {
		v.command(r.Check, vals, where+": require")
	}
	if s.Confirm != nil {
		if _, err := render(s.Confirm.Prompt, vals); err != nil {
			v.fail(s.Confirm.Pos, "%s: confirm: %v", where, err)
		}
	}
	if s.HoldFile != nil {
		if _, err := render(s.HoldFile.Value, vals); err != nil {
			v.fail(s.HoldFile.Pos, "%s: hold_file: %v", where, err)
		}
	}
	if len(s.ExitStatus) > 0 && !v.pb.Nagios {
		v.fail(s.Pos, "%s: exit_status only applies to playbooks with nagios: true", where)
	}
}

func (v *validator) command(c Command, vals Values, where string) {
	switch {
	case c.Exists != nil:
		if _, err := render(c.Exists.Value, vals); err != nil {
			v.fail(c.Exists.Pos, "%s: exists: %v", where, err)
		}
	case c.Shell != nil:
		argv, err := renderArgv(c.Shell, vals)
		if err != nil {
			v.fail(errPos(err, c.Shell[0].Pos), "%s: shell: %v", where, err)
			return
		}
		if len(argv) == 0 || argv[0] == "" {
			v.fail(c.Shell[0].Pos, "%s: shell: empty program name", where)
			return
		}
		if strings.ContainsAny(argv[0], " \t") {
			v.fail(c.Shell[0].Pos, "%s: shell: program %q contains a space; shell: is an argv, write each argument as its own list item (or use [sh, -c, SCRIPT])", where, argv[0])
		}
		if argv[0] == "bash" || strings.HasSuffix(argv[0], "/bash") {
			v.warn(c.Shell[0].Pos, "%s: bash is missing on minimal hosts (busybox); prefer sh", where)
		}
	case c.Tbhost != nil:
		argv, err := renderArgv(c.Tbhost, vals)
		if err != nil {
			v.fail(errPos(err, c.Tbhost[0].Pos), "%s: tbhost: %v", where, err)
			return
		}
		if v.cmds == nil {
			return
		}
		if err := v.cmds.Check(argv); err != nil {
			var unknown *UnknownCommandError
			if errors.As(err, &unknown) && c.Optional {
				v.warn(c.Tbhost[0].Pos, "%s: %v (optional: skipped when run with this build)", where, err)
				return
			}
			v.fail(c.Tbhost[0].Pos, "%s: %v", where, err)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
