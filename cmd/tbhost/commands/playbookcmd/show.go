package playbookcmd

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/tbhost/tbhost/playbooks"
)

type paramDoc struct {
	Name        string   `json:"name"`
	Type        string   `json:"type"`
	Default     *string  `json:"default,omitempty"`
	Required    bool     `json:"required,omitempty"`
	Choices     []string `json:"choices,omitempty"`
	Description string   `json:"description,omitempty"`
}

type stepDoc struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Action      string   `json:"action"`
	Checks      []string `json:"checks,omitempty"`
}

type playbookDoc struct {
	Name        string     `json:"name"`
	File        string     `json:"file"`
	Description string     `json:"description"`
	Nagios      bool       `json:"nagios,omitempty"`
	KeepGoing   bool       `json:"keep_going,omitempty"`
	Params      []paramDoc `json:"params"`
	Steps       []stepDoc  `json:"steps"`
}

func argvText(args []playbooks.Arg) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = a.Value
		if strings.ContainsAny(a.Value, " \t") {
			parts[i] = "'" + a.Value + "'"
		}
	}
	return strings.Join(parts, " ")
}

// commandText is an action or check as the YAML says it, under its own
// key (tbhost:, shell:, exists:), so show reads like the file (issue 18:
// it printed "run: tbhost ..." for the key tbhost:).
func commandText(c playbooks.Command) string {
	switch {
	case c.Exists != nil:
		return "exists: " + c.Exists.Value
	case c.Tbhost != nil:
		s := "tbhost: " + argvText(c.Tbhost)
		if c.Optional {
			s += "  (optional: true)"
		}
		return s
	case c.Shell != nil:
		return "shell: " + argvText(c.Shell)
	}
	return ""
}

func describe(pb *playbooks.Playbook) playbookDoc {
	d := playbookDoc{Name: pb.Name, File: pb.File, Description: pb.Description, Nagios: pb.Nagios, KeepGoing: pb.KeepGoing}
	for _, p := range pb.Params {
		typ := p.Type
		if typ == "" {
			typ = "string"
		}
		d.Params = append(d.Params, paramDoc{p.Name, typ, p.Default, p.Required, p.Choices, p.Description})
	}
	for _, s := range pb.Steps {
		sd := stepDoc{Name: s.Name, Description: strings.TrimSpace(s.Description), Action: commandText(s.Action)}
		if s.Report != "" {
			sd.Action = "report: " + s.Report
		}
		if s.When != nil {
			sd.Checks = append(sd.Checks, "when: "+s.When.Value)
		}
		if s.SkipIf != nil {
			sd.Checks = append(sd.Checks, "skip_if: "+commandText(*s.SkipIf))
		}
		for _, r := range s.Require {
			sd.Checks = append(sd.Checks, "require: "+commandText(r.Check))
		}
		if s.HoldFile != nil {
			sd.Checks = append(sd.Checks, "hold_file: "+s.HoldFile.Value+"  (waits while it exists)")
		}
		if s.Confirm != nil {
			sd.Checks = append(sd.Checks, fmt.Sprintf("confirm: %s  (type %q)", s.Confirm.Prompt, s.Confirm.Word))
		}
		if s.Load != nil {
			sd.Checks = append(sd.Checks, "load: "+commandText(*s.Load))
		}
		if s.Timeout > 0 {
			sd.Checks = append(sd.Checks, "timeout: "+s.Timeout.String())
		}
		if s.Retries > 0 {
			sd.Checks = append(sd.Checks, fmt.Sprintf("retries: %d  (retry_delay: %s)", s.Retries, s.RetryDelay))
		}
		if s.OnInterrupt == playbooks.OnInterruptFinish {
			sd.Checks = append(sd.Checks, "on_interrupt: finish  (a second interrupt kills it)")
		}
		if len(s.OKCodes) > 0 {
			sd.Checks = append(sd.Checks, fmt.Sprintf("ok_codes: %v", s.OKCodes))
		}
		if len(s.ExitStatus) > 0 {
			var codes []int
			for k := range s.ExitStatus {
				codes = append(codes, k)
			}
			sort.Ints(codes)
			var m []string
			for _, k := range codes {
				m = append(m, fmt.Sprintf("%d = %s", k, s.ExitStatus[k]))
			}
			sd.Checks = append(sd.Checks, "exit_status: "+strings.Join(m, ", "))
		}
		d.Steps = append(d.Steps, sd)
	}
	return d
}

func writeShow(w io.Writer, pb *playbooks.Playbook) error {
	d := describe(pb)
	fmt.Fprintf(w, "%s (%s)\n\n", d.Name, d.File)
	for _, l := range strings.Split(strings.TrimSpace(d.Description), "\n") {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if d.Nagios {
		fmt.Fprintln(w, "\n  Nagios check: exit code of the worst step (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN); silent when OK.")
	}
	if d.KeepGoing {
		fmt.Fprintln(w, "\n  Every step runs even when an earlier one fails.")
	}
	if len(d.Params) > 0 {
		fmt.Fprintln(w, "\nPARAMETERS (--set NAME=VALUE):")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, p := range d.Params {
			def := "(required)"
			if p.Default != nil {
				def = fmt.Sprintf("%q", *p.Default)
			}
			desc := p.Description
			if len(p.Choices) > 0 {
				desc += " (" + strings.Join(p.Choices, "|") + ")"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", p.Name, p.Type, def, desc)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "\nSTEPS:")
	for i, s := range d.Steps {
		fmt.Fprintf(w, "  %2d. %s\n", i+1, s.Name)
		if s.Description != "" {
			fmt.Fprintf(w, "      %s\n", strings.ReplaceAll(s.Description, "\n", "\n      "))
		}
		fmt.Fprintf(w, "      %s\n", s.Action)
		for _, c := range s.Checks {
			fmt.Fprintf(w, "      %s\n", c)
		}
	}
	fmt.Fprintf(w, "\nResolved commands: tbhost playbook run --dry-run [--set NAME=VALUE ...] %s\n", d.Name)
	return nil
}
