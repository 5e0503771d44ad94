package playbookcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 18: after a failed run the hint said "tbhost playbook run --resume
// NAME", which finds no state in another --state-dir and is refused with
// other --set values. It repeats both now, and following it resumes.
func TestResumeHintRepeatsStateDirAndSets(t *testing.T) {
	dir := t.TempDir()
	flag := filepath.Join(dir, "go-on")
	pb := filepath.Join(dir, "two.yaml")
	os.WriteFile(pb, []byte(`name: two
params:
  - name: flag
    type: path
    default: /nonexistent
steps:
  - name: first
    shell: ["true"]
  - name: second
    shell: [test, -e, "{{.flag}}"]
`), 0o644)
	state := filepath.Join(dir, "state dir")
	code, out, stderr := runApp(t, false, "playbook", "run", "--state-dir", state, "--set", "flag="+flag, pb)
	if code == 0 {
		t.Fatalf("the run passed without %s:\n%s%s", flag, out, stderr)
	}
	want := "continue with: tbhost playbook run --resume --state-dir '" + state + "' --set flag=" + flag + " " + pb
	if !strings.Contains(out, want) {
		t.Fatalf("hint lacks %q:\n%s", want, out)
	}
	os.WriteFile(flag, nil, 0o644)
	code, out, stderr = runApp(t, false, "playbook", "run", "--resume", "--state-dir", state, "--set", "flag="+flag, pb)
	if code != 0 || !strings.Contains(out, "second") {
		t.Fatalf("the hint's command: exit %d\n%s%s", code, out, stderr)
	}
}
