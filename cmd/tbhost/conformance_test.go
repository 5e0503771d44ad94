package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/cliutil"
)

// The CLI conformance test of issue 18: it walks the whole command tree of
// the real app. Every command and subcommand, under --json and made to fail,
// prints exactly one JSON document on stdout with an error object whose
// exit_code is the process's; an unknown flag is 2 (monitor check
// included); --help exits 0; every JSON key at every depth is snake_case.

// forcedFailure is how each leaf is made to fail without touching the
// machine, and the exit code the README's rule gives for it: a file or
// directory named on the command line that does not exist is 3 (could not
// run) in every command. A new command must be added here.
func forcedFailures(missing string) map[string]struct {
	args []string
	code int
} {
	type ff = struct {
		args []string
		code int
	}
	return map[string]ff{
		"inventory":               {[]string{"--root", missing, "inventory"}, 3},
		"lvm plan":                {[]string{"--root", missing, "lvm", "plan"}, 3},
		"lvm apply":               {[]string{"lvm", "apply", "--dry-run", missing + "/plan.yaml"}, 3},
		"lvm status":              {[]string{"lvm", "status", "--plan", missing + "/plan.yaml"}, 3},
		"lvm replace":             {[]string{"--root", missing, "lvm", "replace", "--dry-run", "vg-hdd/tables", "--old", "missing", "--new", "/dev/sdz"}, 3},
		"tables sync":             {[]string{"tables", "sync", "--from", missing, "--to", missing, "--checksums", missing}, 3},
		"prefix stats":            {[]string{"prefix", "stats", missing}, 3},
		"prefix plan":             {[]string{"prefix", "plan", "--tables", missing, "--capacity", "1GiB"}, 3},
		"prefix extract":          {[]string{"prefix", "extract", "--tables", missing, "--store", missing}, 3},
		"prefix verify":           {[]string{"prefix", "verify", "--tables", missing, "--store", missing}, 3},
		"monitor topology":        {[]string{"--root", missing, "monitor", "topology"}, 3},
		"monitor check":           {[]string{"--root", missing, "monitor", "check", "--for", "1s"}, 3},
		"monitor watch":           {[]string{"--root", missing, "monitor", "watch", "--count", "1"}, 3},
		"monitor serve":           {[]string{"--root", missing, "monitor", "serve", "--listen", "127.0.0.1:0"}, 3},
		"integrity status":        {[]string{"--root", missing, "integrity", "status"}, 3},
		"integrity scrub":         {[]string{"--root", missing, "integrity", "scrub", "vg-hdd/tables"}, 3},
		"integrity verify-tables": {[]string{"integrity", "verify-tables", "--checksums", missing + "/sha256", missing}, 3},
		"playbook list":           {[]string{"playbook", "list", "--no-such-flag"}, 2},
		"playbook show":           {[]string{"playbook", "show", missing + "/pb.yaml"}, 3},
		"playbook validate":       {[]string{"playbook", "validate", missing + "/pb.yaml"}, 3},
		"playbook run":            {[]string{"playbook", "run", "--dry-run", missing + "/pb.yaml"}, 3},
		"playbook schedule":       {[]string{"playbook", "schedule", missing + "/pb.yaml"}, 3},
		"bench probe":             {[]string{"bench", "probe", "--tables", missing}, 3},
		"bench replay":            {[]string{"bench", "replay", "--log", missing, "--target", "http://127.0.0.1:1"}, 3},
		"bench serve":             {[]string{"bench", "serve", "--tables", missing}, 3},
		"bench fens":              {[]string{"bench", "fens", "--tables", missing}, 3},
		"lab run":                 {[]string{"lab", "run", missing + "/test.sh"}, 3},
		"lab rehearse":            {[]string{"lab", "rehearse", missing + "/plan.yaml"}, 3},
	}
}

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// dataKeys are JSON objects whose keys are data (names, paths), not field
// names: their keys are not held to snake_case (their values are).
var dataKeys = map[string]bool{
	"params":      true, // playbook parameters, named by the playbook's author
	"exit_status": true, // a playbook step's exit code -> Nagios status map ("1": "CRITICAL")
}

// nonSnakeKeys returns every object key of v, at any depth, that is not
// snake_case, as a JSON path.
func nonSnakeKeys(v any, path string) []string {
	var bad []string
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if !dataKeys[lastKey(path)] && !snakeCase.MatchString(k) {
				bad = append(bad, path+"."+k)
			}
			bad = append(bad, nonSnakeKeys(val, path+"."+k)...)
		}
	case []any:
		for i, val := range x {
			bad = append(bad, nonSnakeKeys(val, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return bad
}

func lastKey(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// oneJSONDocument decodes stdout, which must hold exactly one JSON value.
func oneJSONDocument(out string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(out))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	var extra any
	if err := dec.Decode(&extra); err != io.EOF {
		return nil, fmt.Errorf("more than one JSON document (%v)", err)
	}
	return v, nil
}

// checkErrorDocument checks stdout of a failed --json run.
func checkErrorDocument(t *testing.T, what, out string, code int, command string) map[string]any {
	t.Helper()
	v, err := oneJSONDocument(out)
	if err != nil {
		t.Errorf("%s: stdout: %v\n%s", what, err, out)
		return nil
	}
	obj, _ := v.(map[string]any)
	e, _ := obj["error"].(map[string]any)
	if e == nil {
		t.Errorf("%s: no error object in\n%s", what, out)
		return nil
	}
	if m, _ := e["message"].(string); m == "" {
		t.Errorf("%s: error without a message: %v", what, e)
	}
	if ec, _ := e["exit_code"].(float64); int(ec) != code {
		t.Errorf("%s: error.exit_code %v, process exit %d", what, e["exit_code"], code)
	}
	if c, _ := e["command"].(string); c != command {
		t.Errorf("%s: error.command %q, want %q", what, c, command)
	}
	if bad := nonSnakeKeys(v, ""); len(bad) > 0 {
		t.Errorf("%s: keys not snake_case: %v", what, bad)
	}
	return obj
}

func TestConformanceForcedFailureIsOneJSONErrorDocument(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "does-not-exist")
	ff := forcedFailures(missing)
	seen := 0
	for _, c := range tree(newApp(&cliutil.Env{})) {
		name := strings.Join(c.path, " ")
		if len(c.cmd.Subcommands) > 0 {
			continue
		}
		f, ok := ff[name]
		if !ok {
			t.Errorf("tbhost %s: no forced failure in forcedFailures; add one", name)
			continue
		}
		seen++
		for _, args := range [][]string{append([]string{"--json"}, f.args...), append(f.args, "--json")} {
			code, out, stderr := runTB(t, nil, args...)
			what := "tbhost " + strings.Join(args, " ")
			if code != f.code {
				t.Errorf("%s: exit %d, want %d\n%s", what, code, f.code, stderr)
			}
			checkErrorDocument(t, what, out, code, "tbhost "+name)
		}
	}
	if seen != len(ff) {
		t.Errorf("forcedFailures has %d entries for %d leaves: remove the stale ones", len(ff), seen)
	}
}

func TestConformanceEveryCommandUnderJSON(t *testing.T) {
	for _, c := range tree(newApp(&cliutil.Env{})) {
		name := strings.Join(c.path, " ")
		// an unknown flag: a usage error, as JSON
		args := append(append([]string{"--json"}, c.path...), "--no-such-flag")
		code, out, _ := runTB(t, nil, args...)
		if code != usageCode(c.path) {
			t.Errorf("tbhost %s: exit %d, want %d", strings.Join(args, " "), code, usageCode(c.path))
		}
		if obj := checkErrorDocument(t, "tbhost "+strings.Join(args, " "), out, code, "tbhost "+name); obj != nil {
			if m, _ := obj["error"].(map[string]any)["message"].(string); !strings.Contains(m, "no-such-flag") {
				t.Errorf("tbhost %s: message %q does not name the flag", strings.Join(args, " "), m)
			}
		}
		// --help exits 0 and shows help, with or without --json
		for _, args := range [][]string{append(append([]string(nil), c.path...), "--help"), append(append([]string{"--json"}, c.path...), "--help")} {
			code, out, stderr := runTB(t, nil, args...)
			if code != 0 || !strings.Contains(out, "USAGE") {
				t.Errorf("tbhost %s: exit %d, want 0 and help\n%.200s%s", strings.Join(args, " "), code, out, stderr)
			}
		}
		// a group given an unknown subcommand: usage error, as JSON
		if len(c.cmd.Subcommands) > 0 {
			args := append(append([]string{"--json"}, c.path...), "no-such-command")
			code, out, _ := runTB(t, nil, args...)
			if code != 2 {
				t.Errorf("tbhost %s: exit %d, want 2", strings.Join(args, " "), code)
			}
			checkErrorDocument(t, "tbhost "+strings.Join(args, " "), out, code, "tbhost "+name)
		}
	}
	code, out, _ := runTB(t, nil, "--json", "no-such-command")
	if code != 2 {
		t.Errorf("tbhost --json no-such-command: exit %d", code)
	}
	checkErrorDocument(t, "tbhost --json no-such-command", out, code, "tbhost")
}

// A command whose usage names no arguments refuses them (exit 2) before it
// runs: "prefix verify --tables A B" verified A only and exited 0, so a
// cron job checked half the tables. Each such leaf is given an argument
// that would make it fail if it were read as a path.
func TestConformanceNoArgumentsWhereTheUsageNamesNone(t *testing.T) {
	leaves := 0
	for _, c := range tree(newApp(&cliutil.Env{})) {
		if len(c.cmd.Subcommands) > 0 || strings.TrimSpace(c.cmd.ArgsUsage) != "" {
			continue
		}
		leaves++
		name := strings.Join(c.path, " ")
		extra := filepath.Join(t.TempDir(), "not-an-input")
		code, out, stderr := runTB(t, nil, append(append([]string(nil), c.path...), extra)...)
		if code != 2 || !strings.Contains(stderr, "takes no arguments") || !strings.Contains(stderr, extra) {
			t.Errorf("tbhost %s %s: exit %d, want 2 saying it takes no arguments and naming %s\n%s%s", name, extra, code, extra, out, stderr)
		}
		code, out, _ = runTB(t, nil, append(append([]string{"--json"}, c.path...), extra)...)
		if code != 2 {
			t.Errorf("tbhost --json %s %s: exit %d, want 2", name, extra, code)
		}
		checkErrorDocument(t, "tbhost --json "+name+" "+extra, out, code, "tbhost "+name)
	}
	if leaves < 10 {
		t.Errorf("%d commands take no arguments; the tree has inventory, lvm plan, prefix plan/extract/verify, tables sync, playbook list and four bench commands", leaves)
	}
}

// Without --json nothing changes: no JSON on stdout for a failure.
func TestConformanceNoJSONWithoutTheFlag(t *testing.T) {
	code, out, stderr := runTB(t, nil, "prefix", "verify", "--tables", "/nonexistent", "--store", "/nonexistent")
	if code == 0 || strings.Contains(out, "{") || !strings.Contains(stderr, "tbhost: ") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, stderr)
	}
}

// A command's own partial result is kept next to the error: monitor check's
// UNKNOWN status document gains the error key, in one document.
func TestConformanceErrorMergesIntoTheResult(t *testing.T) {
	code, out, _ := runTB(t, nil, "--json", "--root", t.TempDir(), "monitor", "check", "--for", "1s")
	obj := checkErrorDocument(t, "monitor check", out, code, "tbhost monitor check")
	if code != 3 || obj == nil || obj["status"] != "UNKNOWN" {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if bytes.Count([]byte(out), []byte(`"status"`)) != 1 {
		t.Errorf("status twice:\n%s", out)
	}
}
