package lab

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// Step is one scenario of a batched boot: a busybox sh script (lib.sh is
// already sourced) that runs with $LAB_OUT set to its own directory.
// Steps of a batch run in order on the same disks, so a step may build on
// what the previous ones left (arrays, data).
type Step struct {
	Name   string
	Script string
	// StopOnFailure ends the batch when this step exits non-zero (later
	// steps depend on it).
	StopOnFailure bool
}

// StepResult is what one step produced.
type StepResult struct {
	// ExitCode is the step's exit status; -1 when it never ran (an
	// earlier step with StopOnFailure failed, or the VM died).
	ExitCode int
	// Outputs are the files the step wrote under its $LAB_OUT.
	Outputs map[string][]byte
	// Log is the step's stdout+stderr.
	Log string
}

// LogTail is the last n lines of the step's log, trimmed.
func (r StepResult) LogTail(n int) string {
	lines := strings.Split(strings.TrimRight(r.Log, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// batchScript is the scenario that runs steps /lab/steps/NN-name.sh in
// order, each with its own $LAB_OUT/steps/<name>, recording its exit code.
func batchScript(steps []Step) string {
	var b strings.Builder
	b.WriteString(". /lab/lib.sh\nbatch_out=$LAB_OUT/steps\n")
	for i, s := range steps {
		fmt.Fprintf(&b, "\nlab_step 'step %d/%d: %s'\n", i+1, len(steps), s.Name)
		fmt.Fprintf(&b, "mkdir -p $batch_out/%s\n", s.Name)
		fmt.Fprintf(&b, "LAB_OUT=$batch_out/%[1]s sh -c '. /lab/lib.sh; . %[2]s' 2>&1 | tee $batch_out/%[1]s/log.txt\n", s.Name, stepPath(i, s))
		fmt.Fprintf(&b, "rc=$(cat $batch_out/%[1]s/exit 2>/dev/null || echo 127)\n", s.Name)
		fmt.Fprintf(&b, "echo \"lab: step %s exit $rc\"\n", s.Name)
		if s.StopOnFailure {
			fmt.Fprintf(&b, "[ \"$rc\" = 0 ] || { echo 'lab: step %s failed: stopping the batch'; exit 0; }\n", s.Name)
		}
	}
	return b.String()
}

func stepPath(i int, s Step) string { return fmt.Sprintf("/lab/steps/%02d-%s.sh", i, s.Name) }

// stepFile wraps a step so its exit status is recorded even when the step
// calls exit.
func stepFile(s Step) []byte {
	return []byte("(\n" + s.Script + "\n)\necho $? > \"$LAB_OUT/exit\"\n")
}

// RunBatch runs steps in one boot of cfg (cfg.Script is replaced) and
// returns each step's result by name, plus the boot's result.
func (l *Lab) RunBatch(ctx context.Context, cfg Config, steps []Step) (map[string]StepResult, *Result, error) {
	seen := map[string]bool{}
	files := map[string][]byte{}
	for p, d := range cfg.Files {
		files[p] = d
	}
	for i, s := range steps {
		if !validName(s.Name) || seen[s.Name] {
			return nil, nil, fmt.Errorf("lab step %q: need a unique name of letters, digits, - and _", s.Name)
		}
		seen[s.Name] = true
		files[stepPath(i, s)] = stepFile(s)
	}
	cfg.Files = files
	cfg.Script = []byte(batchScript(steps))
	res, err := l.Run(ctx, cfg)
	if res == nil {
		return nil, nil, err
	}
	return splitSteps(steps, res.Outputs), res, err
}

// splitSteps sorts a batch's outputs into its steps.
func splitSteps(steps []Step, outputs map[string][]byte) map[string]StepResult {
	out := map[string]StepResult{}
	for _, s := range steps {
		out[s.Name] = StepResult{ExitCode: -1, Outputs: map[string][]byte{}}
	}
	for name, data := range outputs {
		rest, ok := strings.CutPrefix(name, "steps/")
		if !ok {
			continue
		}
		step, file, ok := strings.Cut(rest, "/")
		r, known := out[step]
		if !ok || !known {
			continue
		}
		switch path.Clean(file) {
		case "exit":
			if n, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
				r.ExitCode = n
			}
		case "log.txt":
			r.Log = string(data)
		default:
			r.Outputs[file] = data
		}
		out[step] = r
	}
	return out
}
