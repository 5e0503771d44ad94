// Package playbooks is tbhost's runbook format and engine: a playbook is a
// YAML file with parameters and ordered steps; each step runs a tbhost
// command (as a subprocess of the same binary) or an explicit argv, with
// skip checks for idempotent re-runs, preconditions, typed confirmation
// gates, timeouts and retries. A run is logged as append-only JSON lines and
// leaves a state file, so an interrupted run can be resumed.
//
// The format is documented in docs/playbooks.md; the embedded playbooks
// (provision-host, pre-cutover, health-check) are examples of every feature.
package playbooks

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/lvm"
)

// Pos is a position in a playbook file (1-based line and column).
type Pos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// Arg is one argv element as written in the playbook (it may be a template).
type Arg struct {
	Value string
	Pos   Pos
}

// Command is something to run: a tbhost command, an explicit argv, or (in
// checks only) a file test.
type Command struct {
	Tbhost []Arg // tbhost subcommand and its arguments, run as a subprocess of this binary
	Shell  []Arg // an explicit argv (no shell unless argv is ["sh","-c",...])
	Exists *Arg  // checks only: true when this path exists
	// Optional: when the tbhost command is not part of this build (a command
	// group not installed yet), the step is skipped instead of failing.
	Optional bool
	Pos      Pos
}

// IsZero reports whether no action was given.
func (c Command) IsZero() bool { return c.Tbhost == nil && c.Shell == nil && c.Exists == nil }

// Require is a precondition: a check that must succeed, and the message
// telling the user what to do when it does not.
type Require struct {
	Check   Command
	Message string
	Pos     Pos
}

// Confirm is a typed confirmation gate before a step.
type Confirm struct {
	Prompt string // what the user is agreeing to (template)
	Word   string // what they must type; "yes" by default
	Pos    Pos
}

// Status names of the Nagios convention: the names of lvm.Severity, the
// module's one status type (a test keeps them equal); the engine ranks and
// maps them through it.
const (
	StatusOK       = "OK"
	StatusWarning  = "WARNING"
	StatusCritical = "CRITICAL"
	StatusUnknown  = "UNKNOWN"
)

// What an interrupt does to a running step.
const (
	OnInterruptKill   = "kill"
	OnInterruptFinish = "finish"
)

// Step is one step of a playbook.
type Step struct {
	Name        string
	Description string
	Action      Command
	Report      string // built-in action instead of a command: "go-no-go"
	When        *Arg   // a template that must render "true" for the step to run
	SkipIf      *Command
	Require     []Require
	Confirm     *Confirm
	HoldFile    *Arg     // wait while this file exists before the step starts
	Load        *Command // runs in the background while the action runs, then is stopped
	Timeout     time.Duration
	Retries     int
	RetryDelay  time.Duration
	OKCodes     []int // exit codes that count as success (default [0])
	// OnInterrupt is what Ctrl-C/SIGTERM does to this step: "kill" (the
	// default) or "finish": let it complete (a step that must not be cut in
	// half, like lvcreate), then stop; a second interrupt kills it.
	OnInterrupt string
	ExitStatus  map[int]string // Nagios playbooks: exit code -> OK/WARNING/CRITICAL/UNKNOWN
	Pos         Pos

	// OnFailure runs when the step has failed (after its retries; not when
	// it was skipped, refused or interrupted): a rollback hook. The step
	// stays failed whatever the hook does.
	OnFailure *Command
}

// Param is a playbook parameter.
type Param struct {
	Name        string
	Description string
	Type        string // string (default), bool, int, list, size, duration, path
	Default     *string
	Required    bool
	Choices     []string
	Pattern     string
	Pos         Pos
}

// Playbook is a parsed playbook.
type Playbook struct {
	Name        string
	Description string
	// Nagios: every step is a check; step exit codes are Nagios statuses, all
	// steps run, the run exits with the worst status and prints nothing when
	// all is OK.
	Nagios bool
	// KeepGoing: run the remaining steps after a failure (checks that are
	// independent of each other), and fail at the end.
	KeepGoing bool
	Params    []Param
	Steps     []Step

	File   string // where it came from ("embedded:NAME" for embedded ones)
	Source []byte // the file's bytes (hashed to detect changes between runs)
}

// Step returns the step named name.
func (p *Playbook) Step(name string) (int, bool) {
	for i, s := range p.Steps {
		if s.Name == name {
			return i, true
		}
	}
	return -1, false
}

// StepNames lists the step names in order.
func (p *Playbook) StepNames() []string {
	names := make([]string, len(p.Steps))
	for i, s := range p.Steps {
		names[i] = s.Name
	}
	return names
}

// Parse reads a playbook. file names it in error messages. Every error
// carries file:line:column; unknown keys are errors (with a suggestion).
func Parse(file string, src []byte) (*Playbook, error) {
	if at, b, bad := firstInvalidUTF8(src); bad {
		return nil, &ErrorList{{File: file, Pos: at, Msg: fmt.Sprintf(
			"byte 0x%02x is not UTF-8 (a playbook is UTF-8 text); convert the file, e.g. for Latin-1: %s > %s", b,
			execx.Quote([]string{"iconv", "-f", "latin1", "-t", "utf-8", file}), execx.Quote([]string{file + ".utf8"}))}}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return nil, syntaxError(file, src, err)
	}
	d := &decoder{file: file}
	pb := &Playbook{File: file, Source: src}
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
		return nil, &ErrorList{{File: file, Pos: Pos{1, 1}, Msg: "empty playbook: expected a mapping with name, params and steps"}}
	}
	d.playbook(root.Content[0], pb)
	if len(d.errs) > 0 {
		d.errs.sort()
		return nil, &d.errs
	}
	return pb, nil
}

// firstInvalidUTF8 finds the first byte of src that is not UTF-8, with
// its line and column (in characters), which yaml.v3's own error ("invalid
// trailing UTF-8 octet") does not give. UTF-16 with a byte-order mark is
// left to yaml.v3, which decodes it.
func firstInvalidUTF8(src []byte) (at Pos, b byte, bad bool) {
	if bytes.HasPrefix(src, []byte{0xfe, 0xff}) || bytes.HasPrefix(src, []byte{0xff, 0xfe}) {
		return Pos{}, 0, false
	}
	at = Pos{Line: 1, Column: 1}
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size <= 1 {
			return at, src[i], true
		}
		if r == '\n' {
			at.Line, at.Column = at.Line+1, 1
		} else {
			at.Column++
		}
		i += size
	}
	return Pos{}, 0, false
}

// syntaxError turns a yaml.v3 syntax error ("yaml: line 4: ...") into
// file:line: message. yaml.v3 reports no column for syntax errors. A tab
// in an indentation, the commonest of them in a hand-edited file, is
// reported by yaml.v3 on the line before the tab's (the block it was
// reading); it is named at its own line and column instead.
func syntaxError(file string, src []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	at := Pos{}
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.Index(rest, ":"); i > 0 {
			if n, convErr := strconv.Atoi(rest[:i]); convErr == nil {
				at.Line, msg = n, strings.TrimSpace(rest[i+1:])
			}
		}
	}
	if strings.Contains(msg, "tab character") {
		if tab, ok := firstIndentTab(src, at.Line); ok {
			at = tab
			msg += " (indent with spaces, never tabs)"
		}
	}
	return &ErrorList{{File: file, Pos: at, Msg: "YAML syntax: " + msg}}
}

// firstIndentTab finds the first tab in the indentation (the leading
// blanks) of a line of src at or after line from, with its line and column.
func firstIndentTab(src []byte, from int) (Pos, bool) {
	for i, l := range strings.Split(string(src), "\n") {
		if i+1 < from {
			continue
		}
		for col, c := range l {
			if c == '\t' {
				return Pos{Line: i + 1, Column: col + 1}, true
			}
			if c != ' ' {
				break
			}
		}
	}
	return Pos{}, false
}

type decoder struct {
	file string
	errs ErrorList
}

func pos(n *yaml.Node) Pos { return Pos{Line: n.Line, Column: n.Column} }

// deref follows YAML aliases (*name) to the anchored node (&name).
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func (d *decoder) fail(n *yaml.Node, format string, a ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Pos: pos(n), Msg: fmt.Sprintf(format, a...)})
}

// fields walks a mapping node, calling the handler of each known key and
// reporting unknown or duplicate keys at their position.
func (d *decoder) fields(n *yaml.Node, what string, handlers map[string]func(v *yaml.Node)) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		d.fail(n, "%s must be a mapping (key: value lines), not %s", what, kindName(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		h, ok := handlers[k.Value]
		if !ok {
			known := make([]string, 0, len(handlers))
			for name := range handlers {
				known = append(known, name)
			}
			sort.Strings(known)
			hint := ""
			if s := closest(k.Value, known); s != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", s)
			}
			d.fail(k, "unknown key %q in %s%s; known keys: %s", k.Value, what, hint, strings.Join(known, ", "))
			continue
		}
		if seen[k.Value] {
			d.fail(k, "key %q given twice in %s", k.Value, what)
			continue
		}
		seen[k.Value] = true
		h(v)
	}
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("the value %q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

func (d *decoder) str(n *yaml.Node, what string, dst *string) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode {
		d.fail(n, "%s must be a string, not %s", what, kindName(n))
		return
	}
	*dst = n.Value
}

func (d *decoder) boolean(n *yaml.Node, what string, dst *bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.Decode(dst) != nil {
		d.fail(n, "%s must be true or false, not %s", what, kindName(n))
	}
}

func (d *decoder) integer(n *yaml.Node, what string, dst *int) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.Decode(dst) != nil || *dst < 0 {
		d.fail(n, "%s must be a whole number >= 0, not %s", what, kindName(n))
	}
}

func (d *decoder) duration(n *yaml.Node, what string, dst *time.Duration) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode {
		d.fail(n, "%s must be a duration such as 90s, 10m or 2h, not %s", what, kindName(n))
		return
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		d.fail(n, "%s must be a duration such as 90s, 10m or 2h, not %q", what, n.Value)
		return
	}
	*dst = v
}

func (d *decoder) arg(n *yaml.Node, what string) *Arg {
	n = deref(n)
	if n.Kind != yaml.ScalarNode {
		d.fail(n, "%s must be a string, not %s", what, kindName(n))
		return nil
	}
	return &Arg{Value: n.Value, Pos: pos(n)}
}

func (d *decoder) argv(n *yaml.Node, what string) []Arg {
	n = deref(n)
	if n.Kind != yaml.SequenceNode {
		d.fail(n, "%s must be a list of arguments, e.g. [lvm, status] (argv, never a shell string), not %s", what, kindName(n))
		return nil
	}
	if len(n.Content) == 0 {
		d.fail(n, "%s is empty", what)
		return nil
	}
	out := make([]Arg, 0, len(n.Content))
	for _, e := range n.Content {
		if a := d.arg(e, what+" argument"); a != nil {
			out = append(out, *a)
		}
	}
	return out
}

func (d *decoder) strings(n *yaml.Node, what string) []string {
	n = deref(n)
	if n.Kind != yaml.SequenceNode {
		d.fail(n, "%s must be a list, not %s", what, kindName(n))
		return nil
	}
	var out []string
	for _, e := range n.Content {
		var s string
		d.str(e, what+" entry", &s)
		out = append(out, s)
	}
	return out
}

func (d *decoder) playbook(n *yaml.Node, pb *Playbook) {
	d.fields(n, "the playbook", map[string]func(*yaml.Node){
		"name":        func(v *yaml.Node) { d.str(v, "name", &pb.Name) },
		"description": func(v *yaml.Node) { d.str(v, "description", &pb.Description) },
		"nagios":      func(v *yaml.Node) { d.boolean(v, "nagios", &pb.Nagios) },
		"keep_going":  func(v *yaml.Node) { d.boolean(v, "keep_going", &pb.KeepGoing) },
		"params": func(v *yaml.Node) {
			if v.Kind != yaml.SequenceNode {
				d.fail(v, "params must be a list of parameters (- name: ...), not %s", kindName(v))
				return
			}
			for _, e := range v.Content {
				pb.Params = append(pb.Params, d.param(e))
			}
		},
		"steps": func(v *yaml.Node) {
			if v.Kind != yaml.SequenceNode {
				d.fail(v, "steps must be a list of steps (- name: ...), not %s", kindName(v))
				return
			}
			for _, e := range v.Content {
				pb.Steps = append(pb.Steps, d.step(e))
			}
		},
	})
	if pb.Name == "" {
		d.fail(n, "the playbook has no name: add `name: my-playbook`")
	}
	if len(pb.Steps) == 0 {
		d.fail(n, "the playbook has no steps")
	}
}

func (d *decoder) param(n *yaml.Node) Param {
	p := Param{Pos: pos(n)}
	d.fields(n, "a parameter", map[string]func(*yaml.Node){
		"name":        func(v *yaml.Node) { d.str(v, "parameter name", &p.Name) },
		"description": func(v *yaml.Node) { d.str(v, "parameter description", &p.Description) },
		"type":        func(v *yaml.Node) { d.str(v, "parameter type", &p.Type) },
		"default": func(v *yaml.Node) {
			var s string
			if v.Kind == yaml.SequenceNode { // list default
				s = strings.Join(d.strings(v, "default"), ",")
			} else {
				d.str(v, "default", &s)
			}
			p.Default = &s
		},
		"required": func(v *yaml.Node) { d.boolean(v, "required", &p.Required) },
		"choices":  func(v *yaml.Node) { p.Choices = d.strings(v, "choices") },
		"pattern":  func(v *yaml.Node) { d.str(v, "pattern", &p.Pattern) },
	})
	return p
}

// command decodes the action keys of a mapping (tbhost, shell, exists, optional)
// into c; it is shared by steps and checks.
func (d *decoder) commandKeys(c *Command, allowExists bool) map[string]func(*yaml.Node) {
	h := map[string]func(*yaml.Node){
		"tbhost":   func(v *yaml.Node) { c.Tbhost = d.argv(v, "tbhost") },
		"shell":    func(v *yaml.Node) { c.Shell = d.argv(v, "shell") },
		"optional": func(v *yaml.Node) { d.boolean(v, "optional", &c.Optional) },
	}
	if allowExists {
		h["exists"] = func(v *yaml.Node) { c.Exists = d.arg(v, "exists") }
	}
	return h
}

func (d *decoder) check(n *yaml.Node, what string) *Command {
	c := &Command{Pos: pos(n)}
	d.fields(n, what, d.commandKeys(c, true))
	d.oneAction(n, c, what)
	return c
}

func (d *decoder) oneAction(n *yaml.Node, c *Command, what string) {
	count := 0
	for _, set := range []bool{c.Tbhost != nil, c.Shell != nil, c.Exists != nil} {
		if set {
			count++
		}
	}
	if count != 1 && len(d.errs) == 0 {
		d.fail(n, "%s needs exactly one of tbhost: [...], shell: [...] or exists: PATH", what)
	}
}

func (d *decoder) step(n *yaml.Node) Step {
	s := Step{Pos: pos(n)}
	h := d.commandKeys(&s.Action, false)
	for k, f := range map[string]func(*yaml.Node){
		"name":        func(v *yaml.Node) { d.str(v, "step name", &s.Name) },
		"description": func(v *yaml.Node) { d.str(v, "step description", &s.Description) },
		"report":      func(v *yaml.Node) { d.str(v, "report", &s.Report) },
		"when":        func(v *yaml.Node) { s.When = d.arg(v, "when") },
		"skip_if":     func(v *yaml.Node) { s.SkipIf = d.check(v, "skip_if") },
		"require": func(v *yaml.Node) {
			if v.Kind != yaml.SequenceNode {
				d.fail(v, "require must be a list of checks (- exists: PATH\\n  message: ...), not %s", kindName(v))
				return
			}
			for _, e := range v.Content {
				r := Require{Pos: pos(e)}
				keys := d.commandKeys(&r.Check, true)
				keys["message"] = func(v *yaml.Node) { d.str(v, "message", &r.Message) }
				d.fields(e, "a require check", keys)
				r.Check.Pos = r.Pos
				d.oneAction(e, &r.Check, "a require check")
				if r.Message == "" {
					d.fail(e, "a require check needs a message telling the user what to do when it fails")
				}
				s.Require = append(s.Require, r)
			}
		},
		"confirm": func(v *yaml.Node) {
			c := &Confirm{Word: "yes", Pos: pos(v)}
			if v.Kind == yaml.ScalarNode {
				c.Prompt = v.Value
			} else {
				d.fields(v, "confirm", map[string]func(*yaml.Node){
					"prompt": func(v *yaml.Node) { d.str(v, "confirm prompt", &c.Prompt) },
					"word":   func(v *yaml.Node) { d.str(v, "confirm word", &c.Word) },
				})
			}
			if c.Prompt == "" || c.Word == "" {
				d.fail(v, "confirm needs a prompt (and a non-empty word to type)")
			}
			s.Confirm = c
		},
		"hold_file":   func(v *yaml.Node) { s.HoldFile = d.arg(v, "hold_file") },
		"load":        func(v *yaml.Node) { s.Load = d.check(v, "load") },
		"on_failure":  func(v *yaml.Node) { s.OnFailure = d.check(v, "on_failure") },
		"timeout":     func(v *yaml.Node) { d.duration(v, "timeout", &s.Timeout) },
		"retries":     func(v *yaml.Node) { d.integer(v, "retries", &s.Retries) },
		"retry_delay": func(v *yaml.Node) { d.duration(v, "retry_delay", &s.RetryDelay) },
		"on_interrupt": func(v *yaml.Node) {
			d.str(v, "on_interrupt", &s.OnInterrupt)
			if s.OnInterrupt != OnInterruptKill && s.OnInterrupt != OnInterruptFinish {
				d.fail(v, "on_interrupt must be %s or %s, not %q", OnInterruptKill, OnInterruptFinish, s.OnInterrupt)
			}
		},
		"ok_codes": func(v *yaml.Node) {
			for _, e := range v.Content {
				var c int
				d.integer(e, "ok_codes entry", &c)
				s.OKCodes = append(s.OKCodes, c)
			}
			if v.Kind != yaml.SequenceNode {
				d.fail(v, "ok_codes must be a list of exit codes, e.g. [0, 3]")
			}
		},
		"exit_status": func(v *yaml.Node) {
			if v.Kind != yaml.MappingNode {
				d.fail(v, "exit_status must map exit codes to OK, WARNING, CRITICAL or UNKNOWN")
				return
			}
			s.ExitStatus = map[int]string{}
			for i := 0; i+1 < len(v.Content); i += 2 {
				var code int
				d.integer(v.Content[i], "exit_status code", &code)
				if sev, ok := lvm.ParseSeverity(v.Content[i+1].Value); ok {
					s.ExitStatus[code] = sev.String()
				} else {
					d.fail(v.Content[i+1], "exit_status value must be OK, WARNING, CRITICAL or UNKNOWN, not %q", v.Content[i+1].Value)
				}
			}
		},
	} {
		h[k] = f
	}
	d.fields(n, "a step", h)
	s.Action.Pos = s.Pos
	if s.Name == "" {
		d.fail(n, "a step has no name: add `name: ...` (names are what --from and --resume refer to)")
	}
	switch {
	case s.Report != "" && !s.Action.IsZero():
		d.fail(n, "step %q has both report: and a command; give one", s.Name)
	case s.Report == "":
		if s.Action.Tbhost != nil && s.Action.Shell != nil {
			d.fail(n, "step %q has both tbhost: and shell:; give one", s.Name)
		} else if s.Action.IsZero() && len(d.errs) == 0 {
			d.fail(n, "step %q has nothing to do: give tbhost: [...], shell: [...] or report: go-no-go", s.Name)
		}
	}
	return s
}

// closest returns the known name nearest to s (edit distance <= 2), or "".
func closest(s string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(s, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
