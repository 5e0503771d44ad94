package pkgbuild

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/tbhostapp"
)

// One page for tbhost and one per command group, each naming the group's
// subcommands and the global flags.
func TestManPagesPerGroup(t *testing.T) {
	app := tbhostapp.New(&cliutil.Env{}, tbhostapp.Build{})
	pages, err := ManPages(app)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{}
	for _, p := range pages {
		byName[p.Name] = string(p.Troff)
	}
	if !strings.Contains(byName["tbhost"], ".TH tbhost 8") {
		t.Errorf("tbhost(8) missing or not section 8:\n%.300s", byName["tbhost"])
	}
	for _, c := range app.Commands {
		if c.Hidden || c.Name == "help" {
			continue
		}
		page, ok := byName["tbhost-"+c.Name]
		if !ok {
			t.Errorf("no man page tbhost-%s(8)", c.Name)
			continue
		}
		if !strings.Contains(page, ".TH tbhost-"+c.Name+" 8") || !strings.Contains(page, "--root") {
			t.Errorf("tbhost-%s(8): no section-8 title or no global flags", c.Name)
		}
		for _, s := range c.Subcommands {
			if !s.Hidden && !strings.Contains(page, s.Name) {
				t.Errorf("tbhost-%s(8) does not name subcommand %s", c.Name, s.Name)
			}
		}
	}
}

// The guide of every command group the binary has (docs/tables.md for
// tables sync, docs/playbooks.md for playbook) is in /usr/share/doc/tbhost:
// the installed README and man pages point at them.
func TestEveryCommandGroupsGuideShips(t *testing.T) {
	app := tbhostapp.New(&cliutil.Env{}, tbhostapp.Build{})
	found := 0
	for _, c := range app.Commands {
		if c.Hidden || c.Name == "help" {
			continue
		}
		for _, name := range []string{"docs/" + c.Name + ".md", "docs/" + c.Name + "s.md"} {
			if _, err := os.Stat(filepath.Join("..", "..", name)); err != nil {
				continue
			}
			found++
			if !slices.Contains(docs, name) {
				t.Errorf("%s (the guide of tbhost %s) is not among the package's docs", name, c.Name)
			}
		}
	}
	if found < 5 {
		t.Fatalf("found only %d command-group guides under docs/: wrong directory?", found)
	}
}

// A dynamically linked binary would install and then not start (the
// package depends on no libc): Build refuses it.
func TestBuildRefusesDynamicBinary(t *testing.T) {
	dyn := "/bin/ls" // Debian's ls links libc
	if _, err := os.Stat(dyn); err != nil {
		t.Skip("no /bin/ls to stand in for a dynamic binary")
	}
	var buf bytes.Buffer
	err := Build(Spec{Version: "1.0", Binary: dyn, Source: "../..", Staging: t.TempDir(),
		App: tbhostapp.New(&cliutil.Env{}, tbhostapp.Build{})}, &buf)
	if err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") || buf.Len() != 0 {
		t.Fatalf("Build with %s: err %v, %d bytes written; want a refusal naming CGO_ENABLED=0", dyn, err, buf.Len())
	}
}

func TestBuildRefusesBadVersion(t *testing.T) {
	for _, v := range []string{"", "v1.0", "1.0-1-gabc", "1.0 rc"} {
		var buf bytes.Buffer
		if err := Build(Spec{Version: v, Binary: "/nonexistent"}, &buf); err == nil || !strings.Contains(err.Error(), "Debian") {
			t.Errorf("Build(version %q) = %v, want a refusal", v, err)
		}
	}
}

// The shipped timer is what `tbhost playbook schedule health-check` prints
// for /usr/bin/tbhost, so the two never drift apart.
func TestHealthCheckSchedule(t *testing.T) {
	s := HealthCheckSchedule()
	if s.UnitName() != "tbhost-health-check" || !strings.Contains(s.Service(), "ExecStart=/usr/bin/tbhost playbook run --yes health-check") || !strings.Contains(s.Timer(), "OnCalendar=*-*-* 03:30:00") {
		t.Errorf("health-check units:\n%s\n%s", s.Service(), s.Timer())
	}
}
