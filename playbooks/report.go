package playbooks

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tbhost/tbhost/internal/execx"
)

// WriteSummary prints the human summary of a run: one line per step
// (done / skipped (already done) / failed ..., time) and how to go on.
func (rep *Report) WriteSummary(w io.Writer) error {
	head := fmt.Sprintf("playbook %s: %s in %s (run %s)", rep.Playbook, rep.Status, roundDur(rep.Ended.Sub(rep.Started)), rep.RunID)
	if rep.nagios {
		head = fmt.Sprintf("playbook %s: %s (run %s)", rep.Playbook, rep.Nagios, rep.RunID)
	}
	fmt.Fprintln(w, head)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range rep.Steps {
		status := s.Status
		switch s.Status {
		case StepFailed, StepRefused, StepInterrupted:
			status = strings.ToUpper(status)
		case StepNotRun:
			status = "not run"
		}
		if s.Nagios != "" && s.Status != StepNotRun {
			status += " " + s.Nagios
		}
		dur := ""
		if s.Duration > 0 {
			dur = roundDur(s.Duration).String()
		}
		reason := s.Reason
		if s.ExitCode != nil && *s.ExitCode != 0 && !strings.Contains(reason, "exit") {
			reason = strings.TrimSpace(fmt.Sprintf("exit %d %s", *s.ExitCode, reason))
		}
		if s.Previous {
			reason = "(previous run) " + reason
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", status, s.Name, dur, reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch rep.Status {
	case "interrupted", "failed", "refused":
		if at := rep.stoppedAt(); at != "" {
			arg := strings.TrimPrefix(rep.File, "embedded:")
			resume := append(append([]string{"tbhost", "playbook", "run", "--resume"}, rep.ResumeArgs...), arg)
			fmt.Fprintf(w, "stopped at step %s; after fixing the cause, continue with: %s\n", at, execx.Quote(resume))
		}
	}
	if rep.Log != "" {
		fmt.Fprintf(w, "log: %s\nstate: %s\n", rep.Log, rep.State)
	}
	if rep.StateError != "" {
		fmt.Fprintf(w, "the state file does not hold this run's end: %s\n", rep.StateError)
	}
	return nil
}

func (rep *Report) stoppedAt() string {
	for _, s := range rep.Steps {
		switch s.Status {
		case StepFailed, StepRefused, StepInterrupted:
			return s.Name
		}
	}
	for _, s := range rep.Steps {
		if s.Status == StepNotRun && s.Reason == "" {
			return s.Name
		}
	}
	return ""
}

// WriteNagios prints a Nagios plugin style report: one status line, then
// each step that is not OK with the tail of its output.
func (rep *Report) WriteNagios(w io.Writer) {
	var bad []string
	for _, s := range rep.Steps {
		if s.Nagios != "" && s.Nagios != StatusOK {
			bad = append(bad, s.Name+" "+s.Nagios)
		}
	}
	line := "all checks OK"
	if len(bad) > 0 {
		line = strings.Join(bad, ", ")
	}
	if rep.Status == "interrupted" {
		line += " (interrupted)"
	}
	fmt.Fprintf(w, "%s %s - %s\n", strings.ToUpper(rep.Playbook), rep.Nagios, line)
	for _, s := range rep.Steps {
		if s.Nagios == "" || s.Nagios == StatusOK {
			continue
		}
		fmt.Fprintf(w, "\n[%s] %s: %s\n", s.Nagios, s.Name, s.Reason)
		if out := strings.TrimRight(s.Output, "\n"); out != "" {
			for _, l := range strings.Split(out, "\n") {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
	}
	if rep.Log != "" {
		fmt.Fprintf(w, "\nlog: %s\n", rep.Log)
	}
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d > time.Minute:
		return d.Round(time.Second)
	case d > time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// PlannedCheck is a check as a dry run shows it.
type PlannedCheck struct {
	Argv     []string `json:"argv,omitempty"`
	Exists   string   `json:"exists,omitempty"`
	Message  string   `json:"message,omitempty"`
	Optional bool     `json:"optional,omitempty"`
}

// PlannedStep is a step with its templates resolved, as --dry-run prints it.
type PlannedStep struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Argv        []string       `json:"argv,omitempty"`
	Report      string         `json:"report,omitempty"`
	Optional    bool           `json:"optional,omitempty"`
	When        string         `json:"when,omitempty"`
	Runs        bool           `json:"runs"` // false when its when: is false
	SkipIf      *PlannedCheck  `json:"skip_if,omitempty"`
	Require     []PlannedCheck `json:"require,omitempty"`
	Confirm     string         `json:"confirm,omitempty"`
	ConfirmWord string         `json:"confirm_word,omitempty"`
	HoldFile    string         `json:"hold_file,omitempty"`
	Load        *PlannedCheck  `json:"load,omitempty"`
	OnFailure   *PlannedCheck  `json:"on_failure,omitempty"`
	Timeout     string         `json:"timeout,omitempty"`
	Retries     int            `json:"retries,omitempty"`
	OKCodes     []int          `json:"ok_codes,omitempty"`
	ExitStatus  map[int]string `json:"exit_status,omitempty"`
	OnInterrupt string         `json:"on_interrupt,omitempty"`
}

// Plan resolves every step's commands and checks with the given values,
// running nothing: what --dry-run shows.
func (e *Engine) Plan(pb *Playbook, vals Values) ([]PlannedStep, error) {
	r := &run{out: io.Discard, e: e, pb: pb, opts: Options{Values: vals}}
	var out []PlannedStep
	for _, s := range pb.Steps {
		ps := PlannedStep{Name: s.Name, Description: s.Description, Report: s.Report, Optional: s.Action.Optional,
			Runs: true, Retries: s.Retries, OKCodes: s.OKCodes, ExitStatus: s.ExitStatus, OnInterrupt: s.OnInterrupt}
		if s.Timeout > 0 {
			ps.Timeout = s.Timeout.String()
		}
		if s.Report == "" {
			argv, _, err := r.resolve(s.Action)
			if err != nil {
				return nil, fmt.Errorf("step %s: %w", s.Name, err)
			}
			ps.Argv = argv
		}
		if s.When != nil {
			ok, err := renderBool(*s.When, vals)
			if err != nil {
				return nil, fmt.Errorf("step %s: %w", s.Name, err)
			}
			ps.When, ps.Runs = s.When.Value, ok
		}
		planCheck := func(c Command, msg string) (*PlannedCheck, error) {
			argv, path, err := r.resolve(c)
			if err != nil {
				return nil, fmt.Errorf("step %s: %w", s.Name, err)
			}
			m, err := render(msg, vals)
			return &PlannedCheck{Argv: argv, Exists: path, Message: m, Optional: c.Optional}, err
		}
		var err error
		if s.SkipIf != nil {
			if ps.SkipIf, err = planCheck(*s.SkipIf, ""); err != nil {
				return nil, err
			}
		}
		if s.Load != nil {
			if ps.Load, err = planCheck(*s.Load, ""); err != nil {
				return nil, err
			}
		}
		if s.OnFailure != nil {
			if ps.OnFailure, err = planCheck(*s.OnFailure, ""); err != nil {
				return nil, err
			}
		}
		for _, q := range s.Require {
			c, err := planCheck(q.Check, q.Message)
			if err != nil {
				return nil, err
			}
			ps.Require = append(ps.Require, *c)
		}
		if s.Confirm != nil {
			if ps.Confirm, err = render(s.Confirm.Prompt, vals); err != nil {
				return nil, err
			}
			ps.ConfirmWord = s.Confirm.Word
		}
		if s.HoldFile != nil {
			if ps.HoldFile, err = render(s.HoldFile.Value, vals); err != nil {
				return nil, err
			}
		}
		out = append(out, ps)
	}
	return out, nil
}

// WritePlan prints a dry run: every step with its resolved command and checks.
func WritePlan(w io.Writer, pb *Playbook, vals Values, self []string, steps []PlannedStep) {
	fmt.Fprintf(w, "playbook %s (%s), dry run: nothing is executed\n", pb.Name, pb.File)
	if len(self) > 0 {
		fmt.Fprintf(w, "tbhost = %s\n", strings.Join(self, " "))
	}
	if len(pb.Params) > 0 {
		fmt.Fprintf(w, "parameters: %s\n", strings.Join(vals.Canonical(pb), "  "))
	}
	checkLine := func(c *PlannedCheck) string {
		if c.Exists != "" || c.Argv == nil {
			return "file exists " + execx.Quote([]string{c.Exists}) // '' when empty, not a trailing blank
		}
		s := DisplayArgv(self, c.Argv)
		if c.Optional {
			s += "  (optional: left out when this build lacks the command)"
		}
		return s
	}
	for i, s := range steps {
		fmt.Fprintf(w, "\n%2d. %s\n", i+1, s.Name)
		if s.Description != "" {
			fmt.Fprintf(w, "      %s\n", strings.ReplaceAll(strings.TrimSpace(s.Description), "\n", "\n      "))
		}
		if s.When != "" {
			verdict := "runs"
			if !s.Runs {
				verdict = "SKIPPED with these parameters"
			}
			fmt.Fprintf(w, "      when:     %s -> %s\n", s.When, verdict)
		}
		if !s.Runs {
			// its commands would show the empty values that skip it (issue 18:
			// "require: file exists " and "--log --target --clients 12")
			fmt.Fprintf(w, "      (not run: its checks and commands are shown when the parameters in when: make it run)\n")
			continue
		}
		if s.SkipIf != nil {
			fmt.Fprintf(w, "      skip if:  %s succeeds (already done)\n", checkLine(s.SkipIf))
		}
		for _, q := range s.Require {
			fmt.Fprintf(w, "      require:  %s\n                else: %s\n", checkLine(&q), q.Message)
		}
		if s.HoldFile != "" {
			fmt.Fprintf(w, "      hold:     waits while %s exists\n", s.HoldFile)
		}
		if s.Confirm != "" {
			fmt.Fprintf(w, "      confirm:  %s (type %q, or --yes)\n", s.Confirm, s.ConfirmWord)
		}
		if s.Report != "" {
			fmt.Fprintf(w, "      report:   %s (GO when every earlier step passed or was already done)\n", s.Report)
		} else {
			line := DisplayArgv(self, s.Argv)
			if s.Optional {
				line += "  (optional: skipped when this build lacks the command)"
			}
			fmt.Fprintf(w, "      run:      %s\n", line)
		}
		if s.Load != nil {
			fmt.Fprintf(w, "      load:     %s (in the background while it runs)\n", checkLine(s.Load))
		}
		if s.OnFailure != nil {
			fmt.Fprintf(w, "      on fail:  %s (the step stays failed)\n", checkLine(s.OnFailure))
		}
		var extra []string
		if s.Timeout != "" {
			extra = append(extra, "timeout "+s.Timeout)
		}
		if s.Retries > 0 {
			extra = append(extra, fmt.Sprintf("retries %d", s.Retries))
		}
		if len(s.OKCodes) > 0 {
			extra = append(extra, fmt.Sprintf("ok exit codes %v", s.OKCodes))
		}
		if len(s.ExitStatus) > 0 {
			codes := make([]int, 0, len(s.ExitStatus))
			for c := range s.ExitStatus {
				codes = append(codes, c)
			}
			sort.Ints(codes)
			m := make([]string, len(codes))
			for i, c := range codes {
				m[i] = fmt.Sprintf("exit %d = %s", c, s.ExitStatus[c])
			}
			extra = append(extra, strings.Join(m, ", ")) // not "exit status map[1:CRITICAL 2:UNKNOWN]"
		}
		if s.OnInterrupt == OnInterruptFinish {
			extra = append(extra, "Ctrl-C lets it finish (twice kills it)")
		}
		if len(extra) > 0 {
			fmt.Fprintf(w, "      %s\n", strings.Join(extra, ", "))
		}
	}
}
