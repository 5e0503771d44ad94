package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/realdata"
)

// Issue 18: a JSON schema per command in docs/schemas/, checked here
// against real outputs (successes and failures). The schemas are inferred
// from these samples with
//
//	go test ./cmd/tbhost -run TestJSONSchemas -update-schemas
//
// and then reviewed; a change of a command's JSON shape fails this test
// until its schema is regenerated (and the change documented).
var updateSchemas = flag.Bool("update-schemas", false, "rewrite docs/schemas/*.json from the sample outputs")

const schemaDir = "../../docs/schemas"

// schemaFile is the schema of a command: "prefix verify" -> prefix-verify.json.
func schemaFile(command string) string {
	return filepath.Join(schemaDir, strings.ReplaceAll(command, " ", "-")+".json")
}

// sample is one run whose --json output a command's schema must accept.
type sample struct {
	command string
	args    []string
	lines   bool // JSON Lines (monitor watch): each line is one document
}

// schemaSamples are real runs of every command that has a fixture to run on.
func schemaSamples(t *testing.T) []sample {
	t.Helper()
	tables := realdata.CopyTables(t)
	store := t.TempDir()
	if code, _, stderr := runTB(t, nil, "prefix", "extract", "--tables", tables, "--store", store); code != 0 {
		t.Fatalf("extract: %d %s", code, stderr)
	}
	stale := t.TempDir()
	syzygy := realdata.Dir(t)
	plan := filepath.Join(t.TempDir(), "plan.yaml")
	if code, _, stderr := runTB(t, nil, "lvm", "plan", "--example", "-o", plan); code != 0 {
		t.Fatalf("plan: %d %s", code, stderr)
	}
	clean, dropped := captured(t, "raid5-integrity-stripes5"), captured(t, "raid5-member-dropped")
	// a playbook run for real (not --dry-run): its report, where the
	// dry run prints the plan
	pb := filepath.Join(t.TempDir(), "sample.yaml")
	if err := os.WriteFile(pb, []byte("name: schema-sample\nsteps:\n  - name: one\n    shell: [\"true\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return []sample{
		{command: "inventory", args: []string{"--root", clean, "inventory"}},
		{command: "lvm plan", args: []string{"lvm", "plan", "--example"}},
		{command: "lvm apply", args: []string{"--root", clean, "lvm", "apply", "--dry-run", plan}},
		{command: "lvm status", args: []string{"--root", clean, "lvm", "status"}},
		{command: "lvm status", args: []string{"--root", dropped, "lvm", "status"}},
		{command: "prefix stats", args: []string{"prefix", "stats", "--files", tables}},
		{command: "prefix plan", args: []string{"prefix", "plan", "--list", "--tables", tables, "--capacity", "1GiB"}},
		{command: "prefix plan", args: []string{"prefix", "plan", "--tables", tables, "--capacity", "150KiB"}},
		{command: "prefix extract", args: []string{"prefix", "extract", "--tables", tables, "--store", store}},
		{command: "prefix extract", args: []string{"prefix", "extract", "--tables", tables, "--store", stale, "--upto", "sparse-index"}},
		{command: "prefix verify", args: []string{"prefix", "verify", "--tables", tables, "--store", store}},
		{command: "prefix verify", args: []string{"prefix", "verify", "--tables", tables, "--store", stale}},
		{command: "monitor topology", args: []string{"--root", clean, "monitor", "topology"}},
		{command: "monitor topology", args: []string{"--root", dropped, "monitor", "topology"}},
		{command: "monitor check", args: []string{"--root", derived(t, "balanced"), "monitor", "check"}},
		{command: "monitor check", args: []string{"--root", derived(t, "misbuilt"), "monitor", "check"}},
		{command: "monitor watch", args: []string{"--root", derived(t, "misbuilt"), "monitor", "watch", "--count", "2"}, lines: true},
		{command: "integrity status", args: []string{"--root", clean, "integrity", "status"}},
		{command: "integrity status", args: []string{"--root", dropped, "integrity", "status"}},
		{command: "integrity verify-tables", args: []string{"integrity", "verify-tables", "--all", "-c", filepath.Join(syzygy, "checksums/syzygy-tables.info/sha256"), tables}},
		{command: "lvm replace", args: []string{"--root", dropped, "lvm", "replace", "--dry-run", "vg-hdd/tables", "--old", "missing", "--new", "/dev/sdz"}},
		{command: "tables sync", args: []string{"tables", "sync", "--from", filepath.Join(syzygy, "tables"), "--to", t.TempDir(), "--set", "3-4",
			"--checksums", filepath.Join(syzygy, "checksums/syzygy-tables.info")}},
		{command: "playbook list", args: []string{"playbook", "list"}},
		{command: "playbook show", args: []string{"playbook", "show", "health-check"}},
		{command: "playbook validate", args: []string{"playbook", "validate"}},
		{command: "playbook run", args: []string{"playbook", "run", "--dry-run", "health-check"}},
		{command: "playbook run", args: []string{"playbook", "run", "--state-dir", t.TempDir(), pb}},
		{command: "playbook schedule", args: []string{"playbook", "schedule", "--binary", "/usr/local/bin/tbhost", "health-check"}},
	}
}

// documents runs a sample and returns its JSON document(s).
func (s sample) documents(t *testing.T) []any {
	t.Helper()
	_, out, stderr := runTB(t, nil, append([]string{"--json"}, s.args...)...)
	var texts []string
	if s.lines {
		texts = strings.Split(strings.TrimSpace(out), "\n")
	} else {
		texts = []string{out}
	}
	var docs []any
	for _, txt := range texts {
		v, err := oneJSONDocument(txt)
		if err != nil {
			t.Fatalf("tbhost --json %s: %v\n%s%s", strings.Join(s.args, " "), err, out, stderr)
		}
		docs = append(docs, v)
	}
	return docs
}

func TestJSONSchemas(t *testing.T) {
	samples := schemaSamples(t)
	byCommand := map[string][]any{}
	for _, s := range samples {
		docs := s.documents(t)
		for _, d := range docs {
			if bad := nonSnakeKeys(d, ""); len(bad) > 0 {
				t.Errorf("tbhost --json %s: keys not snake_case: %v", strings.Join(s.args, " "), bad)
			}
		}
		byCommand[s.command] = append(byCommand[s.command], docs...)
	}
	missing := filepath.Join(t.TempDir(), "does-not-exist")
	failures := forcedFailures(missing)
	if *updateSchemas {
		for _, c := range tree(newApp(&cliutil.Env{})) {
			if len(c.cmd.Subcommands) > 0 {
				continue
			}
			name := strings.Join(c.path, " ")
			writeSchema(t, name, c.cmd.Usage, byCommand[name])
		}
	}
	compiler := jsonschema.NewCompiler()
	for _, c := range tree(newApp(&cliutil.Env{})) {
		if len(c.cmd.Subcommands) > 0 {
			continue
		}
		name := strings.Join(c.path, " ")
		path, _ := filepath.Abs(schemaFile(name))
		sch, err := compiler.Compile(path)
		if err != nil {
			t.Errorf("%s: no usable schema %s: %v (go test ./cmd/tbhost -run TestJSONSchemas -update-schemas)", name, path, err)
			continue
		}
		docs := byCommand[name]
		_, out, _ := runTB(t, nil, append([]string{"--json"}, failures[name].args...)...)
		if v, err := oneJSONDocument(out); err == nil {
			docs = append(docs, v)
		}
		for i, d := range docs {
			if err := sch.Validate(d); err != nil {
				b, _ := json.MarshalIndent(d, "", "  ")
				t.Errorf("%s: document %d does not match %s:\n%v\n%.1500s", name, i, filepath.Base(path), err, b)
			}
		}
	}
}

// The schemas are strict enough to catch a regression: a document with a
// Go field name or without its error object is refused.
func TestJSONSchemasRefuseWrongDocuments(t *testing.T) {
	compiler := jsonschema.NewCompiler()
	path, _ := filepath.Abs(schemaFile("monitor topology"))
	sch, err := compiler.Compile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{
		`{"Arrays": [], "notes": []}`,
		`{"arrays": [{"Name": "vg/lv"}], "notes": []}`,
		`{"arrays": "vg/lv", "notes": []}`,
		`{"notes": []}`,
		`{"error": {"message": "x"}}`,
		`[]`,
	} {
		v, _ := jsonschema.UnmarshalJSON(strings.NewReader(doc))
		if sch.Validate(v) == nil {
			t.Errorf("schema accepts %s", doc)
		}
	}
}

// ---- inference (for -update-schemas) ----

func writeSchema(t *testing.T, command, usage string, docs []any) {
	t.Helper()
	s := map[string]any{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"title":       "tbhost " + command + " --json",
		"description": usage + ". Exit 0: the result; any other exit code: the same object with \"error\" (README, JSON).",
	}
	var objs []map[string]any
	for _, d := range docs {
		if m, ok := d.(map[string]any); ok {
			objs = append(objs, m)
		}
	}
	body := inferObject(objs, true)
	for k, v := range body {
		s[k] = v
	}
	props := s["properties"].(map[string]any)
	props["error"] = map[string]any{"$ref": "common.json#/$defs/error"}
	// keys every success has; a failure may carry the error object alone
	var req []string
	for _, k := range commonKeys(objs) {
		if k != "error" {
			req = append(req, k)
		}
	}
	if len(req) > 0 {
		s["anyOf"] = []any{
			map[string]any{"required": []string{"error"}},
			map[string]any{"required": req},
		}
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(schemaFile(command), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// commonKeys are the keys of every success document (no error key).
func commonKeys(objs []map[string]any) []string {
	count := map[string]int{}
	n := 0
	for _, o := range objs {
		if _, failed := o["error"]; failed {
			continue
		}
		n++
		for k := range o {
			count[k]++
		}
	}
	var out []string
	for k, c := range count {
		if c == n && n > 0 {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func inferObject(objs []map[string]any, top bool) map[string]any {
	s := map[string]any{"type": "object", "propertyNames": map[string]any{"$ref": "common.json#/$defs/snake_case"}}
	values := map[string][]any{}
	for _, o := range objs {
		for k, v := range o {
			values[k] = append(values[k], v)
		}
	}
	props := map[string]any{}
	for k, vs := range values {
		if dataKeys[k] {
			props[k] = map[string]any{"description": "a map keyed by data (names, exit codes), or a list: keys are not field names"}
			continue
		}
		props[k] = infer(vs)
	}
	s["properties"] = props
	_ = top
	return s
}

func infer(vs []any) map[string]any {
	types := map[string]bool{}
	var objs []map[string]any
	var items []any
	for _, v := range vs {
		switch x := v.(type) {
		case nil:
			types["null"] = true
		case bool:
			types["boolean"] = true
		case float64:
			types["number"] = true
		case string:
			types["string"] = true
		case []any:
			types["array"] = true
			items = append(items, x...)
		case map[string]any:
			types["object"] = true
			objs = append(objs, x)
		default:
			panic(fmt.Sprintf("JSON value %T", v))
		}
	}
	var ts []string
	for t := range types {
		ts = append(ts, t)
	}
	sort.Strings(ts)
	s := map[string]any{}
	switch {
	case len(ts) == 1 && ts[0] == "null":
		s["description"] = "only null in the samples: not constrained"
	case len(ts) == 1:
		s["type"] = ts[0]
	case len(ts) > 1:
		s["type"] = ts
	}
	if types["object"] {
		o := inferObject(objs, false)
		s["properties"], s["propertyNames"] = o["properties"], o["propertyNames"]
	}
	if types["array"] && len(items) > 0 {
		s["items"] = infer(items)
	}
	return s
}
