package playbooks

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// acceptAll is a CommandSet that knows every command: the fuzz target
// checks the playbook model, not the CLI tree.
type acceptAll struct{}

func (acceptAll) Check([]string) error { return nil }

// FuzzParse feeds arbitrary bytes to the playbook parser and validator.
// Properties: no panic; every error is an *ErrorList whose entries name the
// file and have a message; and an accepted, valid playbook is argv-only and
// typed: every step has exactly one action (a tbhost or shell argv, or a
// built-in report), checks have exactly one of tbhost/shell/exists, every
// parameter has a known type and a valid unique name, its default converts
// to a value of that type (bool -> bool, list -> []string, else string)
// with no control characters and paths absolute without whitespace, and the
// dry-run plan renders every argv to plain elements with a program name.
func FuzzParse(f *testing.F) {
	for _, name := range EmbeddedNames() {
		pb, err := Embedded(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(pb.Source)
	}
	for _, s := range []string{
		paramsPB,
		"",
		"name: x\n",
		"name: x\nsteps:\n  - name: a\n    shell: [true]\n",
		"name: x\nsteps:\n  - name: a\n    shell: 'sh -c true'\n",
		"name: x\nsteps:\n  - name: a\n    tbhost: [lvm, status]\n    shell: [true]\n",
		"name: x\nparams:\n  - name: p\n    type: path\n    default: \"/a b\"\nsteps:\n  - name: a\n    shell: [echo, '{{.p}}']\n",
		"name: x\nparams:\n  - name: p\n    default: \"a\\nb\"\nsteps:\n  - name: a\n    shell: [echo, '{{.p}}']\n",
		"name: x\nparams:\n  - name: l\n    type: list\n    default: [a, b]\nsteps:\n  - name: a\n    shell: [echo, '{{opt \"--x\" .l}}', '{{args .l}}']\n",
		"name: x\nsteps:\n  - &s {name: a, shell: [true]}\n  - *s\n",
		"a: &a [*a]\n",
		"name: x\nnagios: true\nsteps:\n  - name: a\n    shell: [true]\n    exit_status: {0: OK, 2: CRITICAL}\n    skip_if: {exists: /x}\n    require: [{check: {tbhost: [inventory]}, message: m}]\n",
		"name: x\nsteps:\n  - name: a\n    shell: ['{{define \"a\"}}{{template \"a\"}}{{end}}{{template \"a\"}}']\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 64<<10 {
			return
		}
		pb, err := Parse("fuzz.yaml", src)
		if err != nil {
			checkErrorList(t, err)
			return
		}
		if pb == nil {
			t.Fatal("Parse returned neither a playbook nor an error")
		}
		if !slices.Equal(pb.Source, src) {
			t.Fatal("Source is not the parsed bytes")
		}
		for _, s := range pb.Steps {
			checkStepShape(t, s)
		}
		if _, err := Validate(pb, acceptAll{}); err != nil {
			checkErrorList(t, err)
			return
		}
		checkParamsTyped(t, pb)
		vals, err := Resolve(pb, requiredSamples(pb))
		if err != nil {
			return // a required parameter whose sample value its pattern or choices refuse
		}
		checkValuesTyped(t, pb, vals)
		steps, err := (&Engine{Self: []string{"/usr/local/bin/tbhost"}}).Plan(pb, vals)
		if err != nil {
			return // templates that only fail with these values (e.g. a when: over an empty value)
		}
		for _, ps := range steps {
			if ps.Report != "" {
				continue
			}
			checkArgv(t, ps.Name, ps.Argv)
			for _, c := range append(ps.Require, derefChecks(ps.SkipIf, ps.Load)...) {
				if c.Exists == "" && c.Argv != nil {
					checkArgv(t, ps.Name+" check", c.Argv)
				}
			}
		}
	})
}

func checkErrorList(t *testing.T, err error) {
	t.Helper()
	var list *ErrorList
	if !errors.As(err, &list) || len(*list) == 0 {
		t.Fatalf("error %v (%T) is not a non-empty *ErrorList", err, err)
	}
	for _, e := range *list {
		if e.File != "fuzz.yaml" || e.Msg == "" {
			t.Fatalf("error entry %+v lacks the file or a message", e)
		}
	}
}

func checkStepShape(t *testing.T, s Step) {
	t.Helper()
	n := 0
	for _, set := range []bool{s.Action.Tbhost != nil, s.Action.Shell != nil, s.Report != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("step %q accepted with %d actions (tbhost %v, shell %v, report %q)", s.Name, n, s.Action.Tbhost, s.Action.Shell, s.Report)
	}
	if s.Action.Exists != nil {
		t.Fatalf("step %q: exists: is a check, not an action", s.Name)
	}
	checks := []*Command{s.SkipIf, s.Load}
	for i := range s.Require {
		checks = append(checks, &s.Require[i].Check)
	}
	for _, c := range checks {
		if c == nil {
			continue
		}
		k := 0
		for _, set := range []bool{c.Tbhost != nil, c.Shell != nil, c.Exists != nil} {
			if set {
				k++
			}
		}
		if k != 1 {
			t.Fatalf("step %q: a check with %d of tbhost/shell/exists", s.Name, k)
		}
	}
}

func checkParamsTyped(t *testing.T, pb *Playbook) {
	t.Helper()
	seen := map[string]bool{}
	for _, p := range pb.Params {
		if p.Type != "" && !slices.Contains(ParamTypes(), p.Type) {
			t.Fatalf("parameter %s: untyped %q accepted", p.Name, p.Type)
		}
		if !validParamName(p.Name) || seen[p.Name] {
			t.Fatalf("parameter name %q accepted (invalid or twice)", p.Name)
		}
		seen[p.Name] = true
		if p.Default != nil {
			v, err := p.convert(*p.Default)
			if err != nil {
				t.Fatalf("parameter %s: default %q accepted but does not convert: %v", p.Name, *p.Default, err)
			}
			checkValue(t, p, v)
		}
	}
}

// requiredSamples gives each required parameter without a default a value
// of its type (its first choice when it has choices).
func requiredSamples(pb *Playbook) map[string][]string {
	set := map[string][]string{}
	for _, p := range pb.Params {
		if !p.Required || p.Default != nil {
			continue
		}
		v := map[string]string{"bool": "true", "int": "1", "size": "1GiB", "duration": "1s", "path": "/x", "list": "a"}[p.Type]
		if v == "" {
			v = "a"
		}
		if len(p.Choices) > 0 {
			v = p.Choices[0]
		}
		set[p.Name] = []string{v}
	}
	return set
}

func checkValuesTyped(t *testing.T, pb *Playbook, vals Values) {
	t.Helper()
	for _, p := range pb.Params {
		v, ok := vals[p.Name]
		if !ok {
			t.Fatalf("parameter %s has no resolved value", p.Name)
		}
		checkValue(t, p, v)
	}
}

func checkValue(t *testing.T, p Param, v any) {
	t.Helper()
	var items []string
	switch p.Type {
	case "bool":
		if _, ok := v.(bool); !ok {
			t.Fatalf("parameter %s (bool) resolved to %T", p.Name, v)
		}
		return
	case "list":
		l, ok := v.([]string)
		if !ok {
			t.Fatalf("parameter %s (list) resolved to %T", p.Name, v)
		}
		items = l
	default:
		s, ok := v.(string)
		if !ok {
			t.Fatalf("parameter %s (%s) resolved to %T", p.Name, p.Type, v)
		}
		items = []string{s}
	}
	for _, s := range items {
		if err := plainText(s); err != nil {
			t.Fatalf("parameter %s: value accepted with %v", p.Name, err)
		}
		if p.Type == "path" && s != "" {
			if err := checkPath(s); err != nil {
				t.Fatalf("parameter %s: path %q accepted: %v", p.Name, s, err)
			}
		}
	}
}

func derefChecks(cs ...*PlannedCheck) []PlannedCheck {
	var out []PlannedCheck
	for _, c := range cs {
		if c != nil {
			out = append(out, *c)
		}
	}
	return out
}

// checkArgv: a planned command is a real argv: a program name and plain
// elements (no opt/args marker leaking into an element).
func checkArgv(t *testing.T, where string, argv []string) {
	t.Helper()
	if len(argv) == 0 || argv[0] == "" {
		t.Fatalf("%s: accepted with an empty argv %q", where, argv)
	}
	for _, a := range argv {
		if strings.Contains(a, optMarker) {
			t.Fatalf("%s: argv element %q holds the internal opt marker", where, a)
		}
	}
}
