package cliutil

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// The error object joins an object result as one more key, keeping the
// command's keys and order; other results go under "result", text under
// "output"; nothing at all gives the error object alone.
func TestMergeError(t *testing.T) {
	e := ErrorJSON{Message: "m", ExitCode: 1, Command: "tbhost x"}
	for _, tc := range []struct{ in, wantKeys string }{
		{"", "error"},
		{"{\n  \"b\": 1,\n  \"a\": [1]\n}\n", "b a error"},
		{"{}", "error"},
		{"[1, 2]\n", "error result"},
		{"not json\n", "error output"},
		{"{\"a\": 1}\n{\"a\": 2}\n", "error output"},
		{"{\"error\": \"theirs\"}", "error result"},
	} {
		out := mergeError([]byte(tc.in), e)
		keys, err := topKeys(out)
		if err != nil || strings.Join(keys, " ") != tc.wantKeys {
			t.Errorf("%q: keys %v (%v), want %s\n%s", tc.in, keys, err, tc.wantKeys, out)
		}
	}
}

// topKeys decodes b as exactly one JSON object and returns its keys in order.
func topKeys(b []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, k.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(b[dec.InputOffset():])) > 0 {
		return nil, errors.New("more than one document, or text after it")
	}
	return keys, nil
}

// FuzzMergeError: whatever a command printed, a failed --json run writes
// exactly one JSON object whose "error" is the run's, and an object result
// keeps every key it had, in order.
func FuzzMergeError(f *testing.F) {
	for _, s := range []string{"", "{}", "{\"a\":1}", "{\n  \"a\": {\"b\": [1, 2]}\n}\n", "[1]", "null", "3", "\"s\"",
		"{\"error\": 1}", "{\"a\":1}{\"b\":2}", "{\"a\":1} x", "text\n", "{", "}", "{\"a\":1,}", "\xff\xfe", " \t\n"} {
		f.Add([]byte(s), "message", 3)
	}
	f.Fuzz(func(t *testing.T, out []byte, msg string, code int) {
		e := ErrorJSON{Message: msg, ExitCode: code, Command: "tbhost fuzz"}
		merged := mergeError(out, e)
		keys, err := topKeys(merged)
		if err != nil {
			t.Fatalf("%q -> not one JSON object (%v):\n%s", out, err, merged)
		}
		var doc struct {
			Error ErrorJSON `json:"error"`
		}
		if err := json.Unmarshal(merged, &doc); err != nil || doc.Error.ExitCode != code || doc.Error.Command != e.Command {
			t.Fatalf("%q -> error object %+v (%v)", out, doc.Error, err)
		}
		var want string // what JSON makes of msg (invalid UTF-8 bytes become U+FFFD)
		b, _ := json.Marshal(msg)
		json.Unmarshal(b, &want)
		if doc.Error.Message != want {
			t.Fatalf("message %q -> %q", msg, doc.Error.Message)
		}
		if theirs, err := topKeys(out); err == nil && !contains(theirs, "error") {
			if strings.Join(keys, "\x00") != strings.Join(append(theirs, "error"), "\x00") {
				t.Fatalf("%q: keys %q, want %q then error", out, keys, theirs)
			}
		}
		if len(merged) > 6*len(out)+6*len(msg)+256 { // text goes into a JSON string: \u0026 is 6 bytes for 1
			t.Fatalf("%d bytes from %d", len(merged), len(out))
		}
	})
}

// contains reports whether list holds s in any case (JSON decoders match
// keys case-insensitively).
func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// Run under --json: a failure with nothing printed is the error object;
// JSON Lines keep their lines and end with the error line.
func TestRunJSONErrorDocument(t *testing.T) {
	run := func(action cli.ActionFunc, args ...string) (int, string) {
		var out, errb bytes.Buffer
		env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb}
		app := NewApp(env, []*cli.Command{{Name: "x", Action: action}})
		return Run(app, env, append([]string{"tbhost"}, args...)), out.String()
	}
	code, out := run(func(*cli.Context) error { return CannotRun(errors.New("boom")) }, "x", "--json")
	if keys, err := topKeys([]byte(out)); code != 3 || err != nil || strings.Join(keys, " ") != "error" || !strings.Contains(out, `"command": "tbhost x"`) {
		t.Errorf("exit %d: %s", code, out)
	}
	code, out = run(func(c *cli.Context) error {
		g := Get(c)
		g.JSONLines()
		PrintJSON(g.Stdout, map[string]int{"n": 1})
		return Reported(2, "CRITICAL")
	}, "--json", "x")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 2 || lines[len(lines)-1] != `{"error":{"message":"CRITICAL","exit_code":2,"command":"tbhost x"}}` {
		t.Errorf("exit %d: %q", code, out)
	}
	code, out = run(func(c *cli.Context) error { return Get(c).Output(map[string]int{"n": 1}, nil) }, "x", "--json=false", "--json")
	if code != 0 || strings.Contains(out, "error") {
		t.Errorf("success: exit %d %s", code, out)
	}
}
