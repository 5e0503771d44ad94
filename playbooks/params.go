package playbooks

import (
	"errors"
	"fmt"
	"github.com/tbhost/tbhost/internal/capacity"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/tbhost/tbhost/internal/sizes"
)

// ParamTypes are the types a parameter may declare.
func ParamTypes() []string {
	return []string{"string", "bool", "int", "list", "size", "duration", "path"}
}

// Values are resolved parameters: string, bool or []string by type.
type Values map[string]any

// Canonical renders the values as name=value strings (lists comma-joined),
// in parameter order: what the state file records and the hash covers.
func (v Values) Canonical(pb *Playbook) []string {
	out := make([]string, 0, len(pb.Params))
	for _, p := range pb.Params {
		out = append(out, p.Name+"="+valueString(v[p.Name]))
	}
	return out
}

func valueString(v any) string {
	switch x := v.(type) {
	case []string:
		return strings.Join(x, ",")
	case bool:
		return strconv.FormatBool(x)
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// ParseSet splits --set arguments (name=value) into a map. A list parameter
// may be given several times (--set hdd=/dev/sda --set hdd=/dev/sdb) or
// comma-separated.
func ParseSet(set []string) (map[string][]string, error) {
	m := map[string][]string{}
	for _, kv := range set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--set %q: want NAME=VALUE", kv)
		}
		m[k] = append(m[k], v)
	}
	return m, nil
}

// Resolve combines the playbook's defaults with the --set values and checks
// every value against its parameter's type, choices and pattern.
func Resolve(pb *Playbook, set map[string][]string) (Values, error) {
	vals := Values{}
	var names []string
	for _, p := range pb.Params {
		names = append(names, p.Name)
	}
	for k := range set {
		if !slices.Contains(names, k) {
			return nil, fmt.Errorf("--set %s: playbook %s has no parameter %q; its parameters: %s", k, pb.Name, k, strings.Join(names, ", "))
		}
	}
	for _, p := range pb.Params {
		given, ok := set[p.Name]
		var raw string
		switch {
		case ok && p.Type == "list":
			raw = strings.Join(given, ",")
		case ok:
			if len(given) > 1 {
				return nil, fmt.Errorf("--set %s given %d times; it takes one value", p.Name, len(given))
			}
			raw = given[0]
		case p.Default != nil:
			raw = *p.Default
		case p.Required:
			return nil, fmt.Errorf("parameter %q is required (%s): add --set %s=VALUE", p.Name, p.Description, p.Name)
		}
		v, err := p.convert(raw)
		if err != nil {
			return nil, fmt.Errorf("parameter %s: %w", p.Name, err)
		}
		vals[p.Name] = v
	}
	return vals, nil
}

// convert checks raw against the parameter's definition and returns its typed value.
func (p Param) convert(raw string) (any, error) {
	typ := p.Type
	if typ == "" {
		typ = "string"
	}
	if typ == "list" {
		var items []string
		for _, s := range strings.Split(raw, ",") {
			if s = strings.TrimSpace(s); s != "" {
				if err := p.check(s); err != nil {
					return nil, err
				}
				items = append(items, s)
			}
		}
		return items, nil
	}
	if typ == "bool" {
		if raw == "" {
			return false, nil
		}
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", raw)
		}
		return b, nil
	}
	if raw == "" { // an empty optional value is allowed for every other type
		return "", nil
	}
	var err error
	switch typ {
	case "int":
		_, err = strconv.Atoi(raw)
	case "size":
		_, err = sizes.Parse(raw)
	case "duration":
		_, err = time.ParseDuration(raw)
	case "path":
		if !filepath.IsAbs(raw) {
			err = fmt.Errorf("want an absolute path")
		}
	case "string":
	default:
		return nil, fmt.Errorf("unknown type %q (types: %s)", p.Type, strings.Join(ParamTypes(), ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("%q is not a valid %s: %w", raw, typ, err)
	}
	return raw, p.check(raw)
}

func (p Param) check(s string) error {
	if len(p.Choices) > 0 && !slices.Contains(p.Choices, s) {
		return fmt.Errorf("%q is not one of %s", s, strings.Join(p.Choices, ", "))
	}
	if p.Pattern != "" {
		re, err := regexp.Compile("^(?:" + p.Pattern + ")$")
		if err != nil {
			return fmt.Errorf("bad pattern %q: %w", p.Pattern, err)
		}
		if !re.MatchString(s) {
			return fmt.Errorf("%q does not match %s", s, p.Pattern)
		}
	}
	return nil
}

// optMarker starts an argv element produced by opt: it expands to zero or
// more elements instead of one.
const optMarker = "\x00"

// templateFuncs are the functions playbook templates may call.
//
//	{{opt "--prefix-size" .prefix_size}}  nothing when empty, else two arguments
//	{{opt "--hdd" .hdd}}                  for a list: --hdd A --hdd B ...
//	{{opt "--wait-sync" .wait_sync}}      for a bool: the flag alone when true
//	{{args .tables}}                      a list as separate arguments (none when empty)
//	{{dirname .plan}}                     the directory of a path
//
// An argument written as a template that renders to the empty string is
// left out (so {{if ...}} can add an argument or not); a literal ” stays.
func templateFuncs() template.FuncMap {
	return template.FuncMap{
		"dirname": filepath.Dir,
		"args": func(v any) string {
			switch x := v.(type) {
			case []string:
				return optMarker + strings.Join(x, optMarker)
			case string:
				return optMarker + x
			}
			return optMarker + fmt.Sprint(v)
		},
		// mkfsopts ROLE FS: the mkfs options of internal/capacity, the ones
		// lvm plan's CAPACITY counted (tables or prefix; ext4 or xfs).
		"mkfsopts": func(role, fs string) (string, error) {
			a, err := capacity.MkfsArgs(capacity.Role(role), fs)
			if err != nil {
				return "", err
			}
			return optMarker + strings.Join(a, optMarker), nil
		},
		"opt": func(flag string, v any) string {
			var items []string
			switch x := v.(type) {
			case bool:
				if x {
					items = []string{flag}
				}
			case []string:
				for _, s := range x {
					items = append(items, flag, s)
				}
			case string:
				if x != "" {
					items = []string{flag, x}
				}
			default:
				items = []string{flag, fmt.Sprint(x)}
			}
			return optMarker + strings.Join(items, optMarker)
		},
	}
}

// render executes one template string against the values.
func render(s string, vals Values) (string, error) {
	if !strings.Contains(s, "{{") {
		return s, nil
	}
	t, err := template.New("").Funcs(templateFuncs()).Option("missingkey=error").Parse(s)
	if err != nil {
		return "", fmt.Errorf("template %q: %w", s, err)
	}
	var b strings.Builder
	if err := t.Execute(&b, map[string]any(vals)); err != nil {
		return "", fmt.Errorf("template %q: %w", s, cleanTemplateErr(err))
	}
	return b.String(), nil
}

func cleanTemplateErr(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, "map has no entry for key "); i >= 0 {
		return fmt.Errorf("no parameter %s", strings.TrimPrefix(msg[i:], "map has no entry for key "))
	}
	return err
}

// renderArgv expands argv templates; opt elements become zero or more arguments.
func renderArgv(args []Arg, vals Values) ([]string, error) {
	var out []string
	for _, a := range args {
		s, err := render(a.Value, vals)
		if err != nil {
			return nil, &argError{Pos: a.Pos, Err: err}
		}
		if rest, ok := strings.CutPrefix(s, optMarker); ok {
			for _, p := range strings.Split(rest, optMarker) {
				if p != "" {
					out = append(out, p)
				}
			}
			continue
		}
		if strings.Contains(s, optMarker) {
			return nil, &argError{Pos: a.Pos, Err: fmt.Errorf("template %q: opt and args must be the whole argument", a.Value)}
		}
		if s == "" && strings.Contains(a.Value, "{{") {
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

// renderBool evaluates a when: condition.
func renderBool(a Arg, vals Values) (bool, error) {
	s, err := render(a.Value, vals)
	if err != nil {
		return false, err
	}
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return false, fmt.Errorf("when %q gave %q, want true or false", a.Value, s)
	}
	return b, nil
}

// argError is a template error in one argv element, with its position.
type argError struct {
	Pos Pos
	Err error
}

func (e *argError) Error() string { return e.Err.Error() }
func (e *argError) Unwrap() error { return e.Err }

// errPos returns the position of an argError in err, or def.
func errPos(err error, def Pos) Pos {
	var ae *argError
	if errors.As(err, &ae) {
		return ae.Pos
	}
	return def
}
