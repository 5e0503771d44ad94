package main

import (
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/playbooks"
)

// `tbhost playbook --help` names the built-in playbooks; it left migrate out.
func TestPlaybookHelpNamesEveryBuiltin(t *testing.T) {
	_, help, _ := runTB(t, nil, "playbook", "--help")
	for _, name := range playbooks.EmbeddedNames() {
		if !strings.Contains(help, name) {
			t.Errorf("tbhost playbook --help does not name the built-in %s:\n%s", name, help)
		}
	}
}

// The embedded playbooks must validate against the real command tree: every
// tbhost step names a command and flags this build has (a missing command
// group fails: every group the playbooks use is part of the build).
func TestEmbeddedPlaybooksValidateAgainstThisBuild(t *testing.T) {
	if missing := missingPlaybookCommands(); len(missing) > 0 {
		t.Errorf("commands the embedded playbooks use are not in this build: %s", strings.Join(missing, ", "))
	}
	code, out, stderr := runTB(t, nil, "playbook", "validate")
	if code == 0 {
		return
	}
	t.Fatalf("embedded playbooks do not validate against this build: exit %d\n%s%s", code, out, stderr)
}

// missingPlaybookCommands lists the commands the embedded playbooks use that
// this build lacks.
func missingPlaybookCommands() []string {
	app := newApp(&cliutil.Env{})
	var missing []string
	for _, path := range []string{"inventory", "lvm plan", "lvm apply", "lvm status", "prefix verify",
		"monitor check", "integrity status", "integrity scrub", "integrity verify-tables"} {
		group, sub, _ := strings.Cut(path, " ")
		g := app.Command(group)
		if g == nil || (sub != "" && g.Command(sub) == nil) {
			missing = append(missing, path)
		}
	}
	return missing
}

func TestPlaybookDryRunsOnThisMachine(t *testing.T) {
	complete := len(missingPlaybookCommands()) == 0
	for _, name := range []string{"provision-host", "pre-cutover", "health-check"} {
		code, out, stderr := runTB(t, nil, "playbook", "run", "--dry-run", name)
		if !strings.Contains(out, "dry run: nothing is executed") {
			t.Errorf("%s: no plan printed (exit %d)\n%s%s", name, code, out, stderr)
		}
		if code != 0 && (complete || !strings.Contains(stderr, "does not validate against this build")) {
			t.Errorf("%s: exit %d\n%s", name, code, stderr)
		}
	}
}
