package playbooks

import (
	"errors"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/lvm"
)

func mustParse(t *testing.T, src string) *Playbook {
	t.Helper()
	pb, err := Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return pb
}

// A user's playbook with a typo'd key gets file:line:column and a suggestion.
func TestParseTypoGivesLineColumnAndSuggestion(t *testing.T) {
	src := `name: mine
steps:
  - name: first
    shell: [true]
  - name: second
    shell: [sleep, "1"]
    timout: 5m
`
	_, err := Parse("mine.yaml", []byte(src))
	if err == nil {
		t.Fatal("a typo'd key must be an error")
	}
	var list *ErrorList
	if !errors.As(err, &list) || len(*list) != 1 {
		t.Fatalf("want one positioned error, got %v", err)
	}
	e := (*list)[0]
	if e.Pos.Line != 7 || e.Pos.Column != 5 {
		t.Errorf("position %d:%d, want 7:5", e.Pos.Line, e.Pos.Column)
	}
	msg := err.Error()
	for _, want := range []string{"mine.yaml:7:5:", `unknown key "timout"`, `did you mean "timeout"?`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
}

func TestParseCollectsEveryErrorInFileOrder(t *testing.T) {
	src := `name: mine
params:
  - name: x
    defualt: 1
steps:
  - name: a
    shell: [true]
    retries: many
  - name: b
    tbhost: "lvm status"
`
	_, err := Parse("f.yaml", []byte(src))
	if err == nil {
		t.Fatal("want errors")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 errors, got %d:\n%v", len(lines), err)
	}
	for i, want := range []string{"f.yaml:4:5: unknown key \"defualt\"", "f.yaml:8:14: retries must be a whole number", "f.yaml:10:13: tbhost must be a list of arguments"} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("error %d = %q, want prefix %q", i, lines[i], want)
		}
	}
}

func TestParseSyntaxErrorHasLine(t *testing.T) {
	_, err := Parse("bad.yaml", []byte("name: x\nsteps:\n  - name: a: b\n    shell: [true]\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "bad.yaml:3: YAML syntax:") {
		t.Fatalf("got %v, want bad.yaml:3: YAML syntax: ...", err)
	}
}

// A tab in an indentation: yaml.v3 says the line before (the block it
// was reading) with no column; Parse names the tab's own line and column.
func TestParseTabIndentHasItsLineAndColumn(t *testing.T) {
	_, err := Parse("tab.yaml", []byte("name: x\ndescription: y\nsteps:\n  - name: a\n  \tshell: \"true\"\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "tab.yaml:5:3: YAML syntax:") || !strings.Contains(err.Error(), "never tabs") {
		t.Fatalf("got %v, want tab.yaml:5:3: YAML syntax: ... never tabs", err)
	}
	// a tab inside a value is no indentation: yaml.v3's own report stands
	_, err = Parse("ok.yaml", []byte("name: x\ndescription: \"a\tb\"\nsteps:\n  - name: a\n    shell: [\"true\"]\n"))
	if err != nil {
		t.Fatalf("a tab inside a quoted value: %v", err)
	}
}

// yaml.v3 says "invalid trailing UTF-8 octet" with no line; Parse names
// the line, the column and the byte, and how to convert the file.
func TestParseNonUTF8NamesLineAndColumn(t *testing.T) {
	_, err := Parse("latin1.yaml", []byte("name: x\nsteps:\n  - name: caf\xe9\n    shell: [true]\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "latin1.yaml:3:14: byte 0xe9 is not UTF-8") || !strings.Contains(err.Error(), "iconv -f latin1 -t utf-8 latin1.yaml") {
		t.Fatalf("got %v, want latin1.yaml:3:14: byte 0xe9 is not UTF-8 ... iconv ...", err)
	}
	// UTF-8 (with or without a byte-order mark, with multi-byte
	// characters before the error) is not refused
	for _, src := range []string{"\xef\xbb\xbfname: x\nsteps:\n  - name: caf\u00e9\n    shell: [true]\n", "name: x\nsteps:\n  - name: \u00e9t\u00e9 \u2713\n    shell: [true]\n"} {
		if _, err := Parse("ok.yaml", []byte(src)); err != nil {
			t.Errorf("UTF-8 playbook %q refused: %v", src, err)
		}
	}
	// the suggested command survives a file name with a space when pasted
	_, err = Parse("my book.yaml", []byte("name: caf\xe9\n"))
	if err == nil || !strings.Contains(err.Error(), "iconv -f latin1 -t utf-8 'my book.yaml' > 'my book.yaml.utf8'") {
		t.Fatalf("got %v, want the file name quoted in the iconv command", err)
	}
	_, err = Parse("late.yaml", []byte("name: \u00e9t\u00e9\nsteps:\n  - name: a\xff\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "late.yaml:3:12: byte 0xff") {
		t.Fatalf("got %v, want late.yaml:3:12: byte 0xff ...", err)
	}
}

func TestParseRejectsAmbiguousOrEmptySteps(t *testing.T) {
	for name, src := range map[string]string{
		"both":     "name: x\nsteps:\n  - name: a\n    shell: [true]\n    tbhost: [lvm, status]\n",
		"nothing":  "name: x\nsteps:\n  - name: a\n",
		"no name":  "name: x\nsteps:\n  - shell: [true]\n",
		"no steps": "name: x\n",
		"check":    "name: x\nsteps:\n  - name: a\n    shell: [true]\n    skip_if: {}\n",
		"require":  "name: x\nsteps:\n  - name: a\n    shell: [true]\n    require:\n      - exists: /x\n",
		"status":   "name: x\nnagios: true\nsteps:\n  - name: a\n    shell: [true]\n    exit_status: {1: BAD}\n",
	} {
		if _, err := Parse("x.yaml", []byte(src)); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

func TestParseFullStep(t *testing.T) {
	pb := mustParse(t, `name: full
nagios: true
params:
  - name: dev
    type: list
    default: [/dev/a, /dev/b]
steps:
  - name: s
    description: d
    when: "true"
    skip_if: {exists: /done}
    require:
      - shell: [test, -e, /x]
        message: make /x
    confirm: {prompt: "go?", word: apply}
    hold_file: /hold
    load: {tbhost: [bench, probe], optional: true}
    timeout: 90s
    retries: 2
    retry_delay: 1s
    ok_codes: [0, 3]
    exit_status: {1: critical}
    tbhost: [lvm, status]
`)
	s := pb.Steps[0]
	if *pb.Params[0].Default != "/dev/a,/dev/b" {
		t.Errorf("list default %q", *pb.Params[0].Default)
	}
	if s.Timeout.Seconds() != 90 || s.Retries != 2 || s.Confirm.Word != "apply" || s.HoldFile.Value != "/hold" ||
		!s.Load.Optional || s.SkipIf.Exists.Value != "/done" || s.Require[0].Message != "make /x" ||
		s.ExitStatus[1] != StatusCritical || len(s.OKCodes) != 2 || s.Action.Tbhost[1].Value != "status" {
		t.Errorf("step decoded wrong: %+v", s)
	}
}

func TestEmbeddedPlaybooksParse(t *testing.T) {
	names := EmbeddedNames()
	if strings.Join(names, ",") != "health-check,migrate,pre-cutover,provision-host,replace-disk" {
		t.Fatalf("embedded: %v", names)
	}
	for _, n := range names {
		pb, err := Embedded(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if pb.Name != n || pb.Description == "" {
			t.Errorf("%s: name %q, description %q", n, pb.Name, pb.Description)
		}
		for _, s := range pb.Steps {
			if s.Description == "" {
				t.Errorf("%s: step %s is undocumented (show prints descriptions)", n, s.Name)
			}
		}
		for _, p := range pb.Params {
			if p.Description == "" {
				t.Errorf("%s: parameter %s is undocumented", n, p.Name)
			}
		}
	}
	if _, err := Embedded("nope"); err == nil || !strings.Contains(err.Error(), "provision-host") {
		t.Errorf("unknown embedded playbook: %v (must list the built-in ones)", err)
	}
}

// The playbooks' status names are lvm.Severity's, the module's one Nagios type.
func TestStatusNamesAreLVMSeverities(t *testing.T) {
	for name, sev := range map[string]lvm.Severity{StatusOK: lvm.OK, StatusWarning: lvm.Warning, StatusCritical: lvm.Critical, StatusUnknown: lvm.Unknown} {
		if sev.String() != name || nagiosCode(name) != int(sev) {
			t.Errorf("%s: lvm says %s, exit code %d", name, sev, nagiosCode(name))
		}
	}
}
