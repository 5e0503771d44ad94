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
	"text/template/parse"
	"time"
	"unicode"
	"unicode/utf8"

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
	if err := plainText(raw); err != nil {
		return nil, err
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
		err = checkPath(raw)
	case "string":
	default:
		return nil, fmt.Errorf("unknown type %q (types: %s)", p.Type, strings.Join(ParamTypes(), ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("%q is not a valid %s: %w", raw, typ, err)
	}
	return raw, p.check(raw)
}

// plainText refuses what must never reach a generated line (a systemd unit,
// a cron line, an fstab entry, a log line): control characters (newline,
// carriage return, tab, NUL, DEL, C1) and invalid UTF-8. A parameter value
// is one argv element, and one field of whatever a step writes.
func plainText(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%q is not valid UTF-8", s)
	}
	for i, r := range s {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return fmt.Errorf("%q has a control character (%U at byte %d); values are single-line text", s, r, i)
		}
	}
	return nil
}

// checkPath is the path type: absolute, and one field of an fstab or cron
// line as written. Whitespace would split the field (fstab wants \040, which
// mkdir and mount do not read), and a backslash is fstab's escape, so the
// mount point fstab names would differ from the directory the steps make.
func checkPath(s string) error {
	if !filepath.IsAbs(s) {
		return errors.New("want an absolute path")
	}
	for _, r := range s {
		if unicode.IsSpace(r) {
			return errors.New("a path with a space is refused: it would split an fstab or cron field (choose a path without spaces)")
		}
		if r == '\\' {
			return errors.New("a path with a backslash is refused: fstab reads it as an escape (\\040), so it would name another path")
		}
	}
	return nil
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
			if p.Description != "" {
				return fmt.Errorf("%q does not match %s (%s)", s, p.Pattern, p.Description)
			}
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
	if err := checkTemplate(t); err != nil {
		return "", fmt.Errorf("template %q: %w", s, err)
	}
	b := &limitedBuilder{max: maxRendered}
	if err := t.Execute(b, map[string]any(vals)); err != nil {
		return "", fmt.Errorf("template %q: %w", s, cleanTemplateErr(err))
	}
	return b.String(), nil
}

// maxRendered bounds what one template may render (an argv element).
const maxRendered = 64 << 10

// limitedBuilder is a strings.Builder that refuses to grow past max.
type limitedBuilder struct {
	strings.Builder
	max int
}

func (b *limitedBuilder) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		return 0, fmt.Errorf("renders more than %d bytes", b.max)
	}
	return b.Builder.Write(p)
}

// templateIdents are the functions a playbook template may call: the
// playbook functions and Go's comparisons and logic. printf (a width can
// allocate gigabytes), call, and the rest are not needed in an argv.
var templateIdents = map[string]bool{
	"opt": true, "args": true, "dirname": true, "mkfsopts": true,
	"and": true, "or": true, "not": true, "len": true, "index": true,
	"eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true,
}

// checkTemplate keeps playbook templates to what an argv needs: text,
// parameter fields, if/else/with and the functions above. {{define}},
// {{template}}, {{block}} (recursion costs seconds per render) and {{range}}
// (nested ranges, or a range over a number, loop for ever) are refused,
// so rendering is linear in the template and the values.
func checkTemplate(t *template.Template) error {
	if len(t.Templates()) > 1 {
		return errors.New("{{define}} and {{block}} are not allowed in playbook templates")
	}
	var walk func(n parse.Node) error
	walk = func(n parse.Node) error {
		switch x := n.(type) {
		case nil:
			return nil
		case *parse.ListNode:
			if x == nil {
				return nil
			}
			for _, c := range x.Nodes {
				if err := walk(c); err != nil {
					return err
				}
			}
		case *parse.TextNode, *parse.CommentNode, *parse.FieldNode, *parse.VariableNode,
			*parse.StringNode, *parse.BoolNode, *parse.NumberNode, *parse.DotNode, *parse.NilNode:
		case *parse.ActionNode:
			return walk(x.Pipe)
		case *parse.PipeNode:
			if x == nil {
				return nil
			}
			for _, c := range x.Cmds {
				if err := walk(c); err != nil {
					return err
				}
			}
		case *parse.CommandNode:
			for _, a := range x.Args {
				if err := walk(a); err != nil {
					return err
				}
			}
		case *parse.ChainNode:
			return walk(x.Node)
		case *parse.IdentifierNode:
			if !templateIdents[x.Ident] {
				return fmt.Errorf("function %s is not allowed in playbook templates (allowed: opt, args, dirname, mkfsopts, and, or, not, len, index, eq, ne, lt, le, gt, ge)", x.Ident)
			}
		case *parse.IfNode:
			return walkBranch(walk, &x.BranchNode)
		case *parse.WithNode:
			return walkBranch(walk, &x.BranchNode)
		case *parse.RangeNode:
			return errors.New("{{range}} is not allowed in playbook templates (use args or opt for lists)")
		case *parse.TemplateNode:
			return errors.New("{{template}} is not allowed in playbook templates")
		default:
			return fmt.Errorf("%s is not allowed in playbook templates", n)
		}
		return nil
	}
	if t.Tree == nil {
		return nil
	}
	return walk(t.Tree.Root)
}

func walkBranch(walk func(parse.Node) error, b *parse.BranchNode) error {
	for _, n := range []parse.Node{b.Pipe, b.List, b.ElseList} {
		if err := walk(n); err != nil {
			return err
		}
	}
	return nil
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
