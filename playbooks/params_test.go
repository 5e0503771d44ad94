package playbooks

import (
	"strings"
	"testing"
	"time"
)

const paramsPB = `name: p
params:
  - name: hdd
    type: list
    default: []
  - name: size
    type: size
    default: ""
  - name: mode
    default: journal
    choices: [journal, bitmap]
  - name: wait
    type: bool
    default: false
  - name: dir
    type: path
    default: /srv
  - name: must
    required: true
  - name: id
    pattern: "[a-z]+[0-9]"
    default: sda1
steps:
  - name: s
    shell: [x, '{{opt "--hdd" .hdd}}', '{{opt "--size" .size}}', '{{opt "--wait" .wait}}', "{{args .hdd}}", '{{if .wait}}w{{end}}', "", "{{.dir}}/t"]
`

func TestResolveTypesAndErrors(t *testing.T) {
	pb := mustParse(t, paramsPB)
	vals, err := Resolve(pb, map[string][]string{"must": {"m"}, "hdd": {"/dev/a,/dev/b", "/dev/c"}, "wait": {"true"}, "size": {"1GiB"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(vals["hdd"].([]string), " "); got != "/dev/a /dev/b /dev/c" {
		t.Errorf("list %q", got)
	}
	argv, err := renderArgv(pb.Steps[0].Action.Shell, vals)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"x", "--hdd", "/dev/a", "--hdd", "/dev/b", "--hdd", "/dev/c", "--size", "1GiB", "--wait", "/dev/a", "/dev/b", "/dev/c", "w", "", "/srv/t"}
	if strings.Join(argv, "|") != strings.Join(want, "|") {
		t.Errorf("argv %q\nwant %q", argv, want)
	}
	vals, _ = Resolve(pb, map[string][]string{"must": {"m"}})
	argv, _ = renderArgv(pb.Steps[0].Action.Shell, vals)
	if strings.Join(argv, "|") != "x||/srv/t" { // opt and empty templates vanish, a literal '' stays
		t.Errorf("empty values: %q", argv)
	}
	for name, set := range map[string]map[string][]string{
		"required missing": {},
		"unknown param":    {"must": {"m"}, "hddd": {"x"}},
		"bad choice":       {"must": {"m"}, "mode": {"fast"}},
		"bad size":         {"must": {"m"}, "size": {"lots"}},
		"bad bool":         {"must": {"m"}, "wait": {"maybe"}},
		"relative path":    {"must": {"m"}, "dir": {"srv"}},
		"pattern":          {"must": {"m"}, "id": {"SDA"}},
		"twice":            {"must": {"m", "n"}},
	} {
		if _, err := Resolve(pb, set); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := Resolve(pb, map[string][]string{"hddd": {"x"}}); err == nil || !strings.Contains(err.Error(), "hdd, size") {
		t.Errorf("unknown parameter error must list the parameters: %v", err)
	}
}

func TestParseSet(t *testing.T) {
	m, err := ParseSet([]string{"a=1", "a=2", "b=x=y", "c="})
	if err != nil || len(m["a"]) != 2 || m["b"][0] != "x=y" || m["c"][0] != "" {
		t.Fatalf("%v %v", m, err)
	}
	if _, err := ParseSet([]string{"novalue"}); err == nil {
		t.Error("want an error without =")
	}
}

func TestValidateTemplatesAndCommands(t *testing.T) {
	src := `name: v
params:
  - name: plan
    default: /p
steps:
  - name: a
    tbhost: [lvm, apply, "{{.plann}}"]
  - name: b
    tbhost: [lvm, destroy]
  - name: b
    shell: ["mkfs.ext4 -F", /dev/x]
  - name: c
    tbhost: [bench, probe]
    optional: true
  - name: d
    when: "maybe"
    shell: [bash, -c, "true"]
`
	pb := mustParse(t, src)
	warns, err := Validate(pb, fakeCommands{"lvm apply": true, "lvm status": true})
	if err == nil {
		t.Fatal("want errors")
	}
	msg := err.Error()
	for _, want := range []string{
		`v.yaml:7:26: step a: tbhost: template "{{.plann}}": no parameter "plann"`,
		`v.yaml:9:14: step b: no command "lvm destroy"`,
		`step name "b" used twice`,
		`program "mkfs.ext4 -F" contains a space`,
		`step d: when: when "maybe" gave "maybe", want true or false`,
	} {
		if !strings.Contains(strings.ReplaceAll(msg, "test.yaml", "v.yaml"), want) {
			t.Errorf("errors lack %q:\n%s", want, msg)
		}
	}
	var w []string
	for _, x := range warns {
		w = append(w, x.Error())
	}
	if ws := strings.Join(w, "\n"); !strings.Contains(ws, `no command "bench probe"`) || !strings.Contains(ws, "optional") || !strings.Contains(ws, "bash is missing") {
		t.Errorf("warnings: %s", ws)
	}
}

func TestValidateWithSkipsCommandsOfStepsThatWillNotRun(t *testing.T) {
	pb := mustParse(t, `name: v
params:
  - name: scrub
    type: bool
    default: true
steps:
  - name: s
    when: "{{.scrub}}"
    tbhost: [integrity, scrub]
`)
	cmds := fakeCommands{"monitor check": true}
	if _, err := ValidateWith(pb, cmds, nil); err == nil {
		t.Fatal("with the defaults the step runs: its missing command is an error")
	}
	off, _ := Resolve(pb, map[string][]string{"scrub": {"false"}})
	if _, err := ValidateWith(pb, cmds, off); err != nil {
		t.Fatalf("scrub=false: %v", err)
	}
	on, _ := Resolve(pb, map[string][]string{"scrub": {"true"}})
	if _, err := ValidateWith(pb, cmds, on); err == nil {
		t.Fatal("scrub=true: want the missing command reported")
	}
}

func TestNames(t *testing.T) {
	for s, want := range map[string]bool{"health-check": true, "my.pb_2": true, "Health": false, "-x": false, "": false, "a b": false} {
		if validPlaybookName(s) != want {
			t.Errorf("playbook name %q: want %v", s, want)
		}
	}
	for s, want := range map[string]bool{"plan": true, "hold_file": true, "_x1": true, "1x": false, "hold-file": false, "": false} {
		if validParamName(s) != want {
			t.Errorf("param name %q: want %v", s, want)
		}
	}
}

// Issue 12 defect 5: every value is single-line text; a path is one fstab
// field (no whitespace, no backslash escape).
func TestConvertRefusesLineBreakingValues(t *testing.T) {
	for _, tc := range []struct {
		typ, raw string
		ok       bool
	}{
		{"path", "/srv/syzygy", true},
		{"path", "/srv/syzy gy", false},
		{"path", "/srv/syzygy\n/x", false},
		{"path", `/srv/a\040b`, false},
		{"path", "/srv/a\u00a0b", false},
		{"string", "vg-hdd/tables", true},
		{"string", "100% sure", true},
		{"string", "a\nb", false},
		{"string", "a\rb", false},
		{"string", "a\x00b", false},
		{"string", "a\u0085b", false},
		{"string", "a\u2028b", false},
		{"string", "\xff", false},
		{"list", "/dev/a,/dev/b", true},
		{"list", "/dev/a,/dev/b\n", false},
		{"duration", "30s\t", false},
		{"size", "1GiB\x1b", false},
		{"int", "1\n", false},
		{"bool", "true\n", false},
	} {
		_, err := Param{Name: "p", Type: tc.typ}.convert(tc.raw)
		if (err == nil) != tc.ok {
			t.Errorf("%s %q: err %v, want ok=%v", tc.typ, tc.raw, err, tc.ok)
		}
	}
}

// A playbook template is an argv element, not a program: recursion
// ({{define}}/{{template}}, a second per render), ranges (nested or over a
// number, unbounded loops) and printf widths (gigabytes) are refused, found
// by FuzzParse (its recursive-template seed took 1 s per render).
func TestRenderRefusesCostlyTemplates(t *testing.T) {
	vals := Values{"l": []string{"a", "b"}, "s": "x", "b": true}
	for _, tpl := range []string{
		`{{define "a"}}{{template "a"}}{{end}}{{template "a"}}`,
		`{{block "a" .}}x{{end}}`,
		`{{range .l}}{{range $.l}}{{end}}{{end}}`,
		`{{range 1000000000}}{{end}}`,
		`{{printf "%999999999d" 1}}`,
		`{{call .s}}`,
		`{{if .b}}{{printf "%s" .s}}{{end}}`,
	} {
		start := time.Now()
		if _, err := render(tpl, vals); err == nil {
			t.Errorf("%s: rendered", tpl)
		}
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Errorf("%s: took %v", tpl, d)
		}
	}
	for tpl, want := range map[string]string{
		`{{if and .b (ne .s "")}}--x{{else}}--y{{end}}`: "--x",
		`{{with .s}}{{.}}{{end}}`:                       "x",
		`{{index .l 1}}{{len .l}}{{dirname "/a/b"}}`:    "b2/a",
		`{{/* note */}}{{.s}}`:                          "x",
	} {
		if got, err := render(tpl, vals); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", tpl, got, err, want)
		}
	}
}
