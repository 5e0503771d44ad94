package lab

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBatchScriptRunsStepsInOrder runs the generated batch with the host's
// sh against a fake /lab layout: exit codes are recorded even when a step
// calls exit, and StopOnFailure ends the batch.
func TestBatchScriptRunsStepsInOrder(t *testing.T) {
	root := t.TempDir()
	steps := []Step{
		{Name: "make", Script: "echo made > $LAB_OUT/shape.txt\necho hello", StopOnFailure: true},
		{Name: "fails", Script: "echo partial > $LAB_OUT/p.txt\nexit 4"},
		{Name: "gate", Script: "exit 2", StopOnFailure: true},
		{Name: "never", Script: "echo ran > $LAB_OUT/x"},
	}
	lib := "lab_step() { echo \"=== $*\"; }\n"
	os.MkdirAll(filepath.Join(root, "steps"), 0o755)
	os.WriteFile(filepath.Join(root, "lib.sh"), []byte(lib), 0o644)
	for i, s := range steps {
		os.WriteFile(filepath.Join(root, strings.TrimPrefix(stepPath(i, s), "/lab/")), stepFile(s), 0o644)
	}
	script := strings.ReplaceAll(batchScript(steps), "/lab/", root+"/")
	out := filepath.Join(root, "out")
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "LAB_OUT="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	outputs := map[string][]byte{}
	filepath.Walk(out, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			rel, _ := filepath.Rel(out, p)
			outputs[rel], _ = os.ReadFile(p)
		}
		return nil
	})
	res := splitSteps(steps, outputs)
	if r := res["make"]; r.ExitCode != 0 || string(r.Outputs["shape.txt"]) != "made\n" || !strings.Contains(r.Log, "hello") {
		t.Errorf("make: %+v", r)
	}
	if r := res["fails"]; r.ExitCode != 4 || string(r.Outputs["p.txt"]) != "partial\n" {
		t.Errorf("fails: %+v (a failing step without StopOnFailure must not stop the batch)", r)
	}
	if res["gate"].ExitCode != 2 {
		t.Errorf("gate: %+v", res["gate"])
	}
	if r := res["never"]; r.ExitCode != -1 || len(r.Outputs) != 0 {
		t.Errorf("never: %+v (must not run after a failed StopOnFailure step)", r)
	}
}
