package cliutil

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"
)

// Under --json, stdout holds exactly one JSON document, whatever happens
// (issue 18). Run collects what the command writes to stdout and, when the
// exit code is not 0, adds an "error" object to it:
//
//	{"error": {"message": "...", "exit_code": 3, "command": "tbhost prefix verify"}}
//
// The rule, for every command:
//   - exit 0: the command's result, unchanged; it has no "error" key.
//   - exit != 0: a JSON object with "error". When the command had a result
//     (a report with findings, monitor check's UNKNOWN status, a partial
//     extract), it is kept: an object result gets "error" as one more key
//     (so `jq .findings` reads the same in both cases), any other result
//     (an array, a number) goes under "result", and text that is not JSON
//     under "output" (a string).
//   - streaming commands (monitor watch --json, JSON Lines: one object per
//     refresh) write through as they go; on failure the last line is the
//     error object.

// ErrorJSON is the "error" object of a failed command's JSON document.
type ErrorJSON struct {
	Message  string `json:"message"`
	ExitCode int    `json:"exit_code"`
	Command  string `json:"command"`
}

// JSONLines tells Run that this command writes JSON Lines under --json (one
// document per line as it goes, e.g. monitor watch): its stdout is written
// through from now on instead of held back, and on failure the error object
// is the last line. Call it before the first line.
func (g *Globals) JSONLines() {
	if c, ok := g.Stdout.(*capture); ok {
		c.startStream()
	}
}

// invocation is what args (as FlagsFirst returns them) ask for: the
// command path, the leaf (or deepest group) reached, and whether --json was
// given anywhere before "--".
type invocation struct {
	path    []string
	cmd     *cli.Command
	json    bool
	version bool // --version (-v) given before any command
}

func (iv invocation) name() string { return strings.Join(iv.path, " ") }

func parseInvocation(app *cli.App, args []string) invocation {
	iv := invocation{path: []string{app.Name}}
	if len(args) == 0 {
		return iv
	}
	rest := args[1:]
	flags, cmds := app.Flags, app.Commands
	for len(rest) > 0 && rest[0] != "--" {
		if isFlag(rest[0]) {
			iv.json = iv.json || boolFlagSet(rest[0], "json")
			iv.version = iv.version || (iv.cmd == nil && boolFlagSet(rest[0], cli.VersionFlag.Names()...))
			if takesValue(flags, rest[0]) && len(rest) > 1 {
				rest = rest[1:]
			}
			rest = rest[1:]
			continue
		}
		cmd := findCommand(cmds, rest[0])
		if cmd == nil {
			break
		}
		iv.path = append(iv.path, cmd.Name)
		iv.cmd = cmd
		flags, cmds = cmd.Flags, cmd.Subcommands
		rest = rest[1:]
	}
	return iv
}

// VersionJSON is what tbhost --json --version prints (SetVersion).
type VersionJSON struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
}

// String is what tbhost --version prints after "tbhost version ".
func (v VersionJSON) String() string { return v.Version + " (commit " + v.Commit + ")" }

// boolFlagSet: a is one of the boolean flags names (--json, -v,
// --version=true), set to true.
func boolFlagSet(a string, names ...string) bool {
	name, v, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
	for _, n := range names {
		if name == n {
			b, err := strconv.ParseBool(v)
			return !hasValue || (err == nil && b)
		}
	}
	return false
}

// capture holds a command's stdout back (or passes it through for JSON
// Lines) until Run knows the exit code.
type capture struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	under  io.Writer // the real stdout
	stream bool      // write through to under (JSON Lines)
}

func (c *capture) startStream() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stream {
		_, _ = c.under.Write(c.buf.Bytes())
		c.buf.Reset()
		c.stream = true
	}
}

func (c *capture) streaming() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stream
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stream {
		return c.under.Write(p)
	}
	return c.buf.Write(p)
}

// errorMessage is the text of the error object: the error's own text, the
// summary a command gave with Reported, or what the exit code means.
func errorMessage(err error, code int) string {
	if err != nil && err.Error() != "" {
		return err.Error()
	}
	var ee *exitError
	if errors.As(err, &ee) && ee.summary != "" {
		return ee.summary
	}
	switch code {
	case ExitProblem:
		return "a check found a problem or tbhost refused (the report is in this document)"
	case ExitUsage:
		return "usage error"
	default:
		return "could not run"
	}
}

// finishJSON writes the one JSON document of a --json run to w.
func finishJSON(w io.Writer, c *capture, streamed bool, e ErrorJSON) error {
	if e.ExitCode == ExitOK {
		if streamed {
			return nil
		}
		_, err := w.Write(c.buf.Bytes())
		return err
	}
	if streamed {
		b, err := json.Marshal(map[string]ErrorJSON{"error": e})
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	_, err := w.Write(mergeError(c.buf.Bytes(), e))
	return err
}

// mergeError returns out (what the command printed) as one JSON object with
// the error object added (see the rule above).
func mergeError(out []byte, e ErrorJSON) []byte {
	errBytes, _ := json.MarshalIndent(e, "  ", "  ")
	trimmed := bytes.TrimSpace(out)
	if len(trimmed) == 0 {
		return mustIndent(map[string]any{"error": e})
	}
	var v json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if dec.Decode(&v) != nil || dec.More() || dec.InputOffset() != int64(len(trimmed)) {
		return mustIndent(map[string]any{"error": e, "output": string(out)})
	}
	var obj map[string]json.RawMessage
	if trimmed[0] != '{' || json.Unmarshal(trimmed, &obj) != nil { // null unmarshals into a map too
		return mustIndent(map[string]any{"error": e, "result": v})
	}
	// a key "error" in any case is taken: Go's decoder (and others) match
	// keys case-insensitively, so "Error" beside "error" would shadow ours
	// (found by FuzzMergeError)
	for k := range obj {
		if strings.EqualFold(k, "error") {
			return mustIndent(map[string]any{"error": e, "result": v})
		}
	}
	// Keep the command's own key order and indentation: "error" goes last.
	body := bytes.TrimSpace(trimmed[1 : len(trimmed)-1])
	var b bytes.Buffer
	if len(body) > 0 {
		b.Write(bytes.TrimRight(trimmed[:len(trimmed)-1], " \t\r\n"))
		b.WriteString(",\n")
	} else {
		b.WriteString("{\n")
	}
	b.WriteString(`  "error": `)
	b.Write(errBytes)
	b.WriteString("\n}\n")
	return b.Bytes()
}

func mustIndent(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return []byte(fmt.Sprintf("{\"error\": {\"message\": %q, \"exit_code\": 3}}\n", err.Error()))
	}
	return append(b, '\n')
}
