package playbooks

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testSchedule(t *testing.T) Schedule {
	exe, err := os.Executable() // an executable that exists, as systemd-analyze checks
	if err != nil {
		t.Fatal(err)
	}
	return Schedule{Name: "health-check", Playbook: "health-check", Binary: exe,
		Args: []string{"--set", "scrub_rate=50MiB/s", "--set", "note=100% sure"}, Hour: 3, Minute: 30}
}

// The produced units pass systemd-analyze verify (Debian package systemd).
func TestSystemdUnitsPassSystemdAnalyzeVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed (Debian package systemd; .ci/install-deps installs it)")
	}
	s := testSchedule(t)
	dir := t.TempDir()
	svc := filepath.Join(dir, s.UnitName()+".service")
	tmr := filepath.Join(dir, s.UnitName()+".timer")
	os.WriteFile(svc, []byte(s.Service()), 0o644)
	os.WriteFile(tmr, []byte(s.Timer()), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, analyze, "verify", svc, tmr).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s\n--- service:\n%s--- timer:\n%s", err, out, s.Service(), s.Timer())
	}
	// The check is real: a broken unit fails it.
	os.WriteFile(svc, []byte(strings.Replace(s.Service(), "ExecStart="+s.Binary, "ExecStart=relative/tbhost", 1)), 0o644)
	if out, err := exec.CommandContext(ctx, analyze, "verify", svc, tmr).CombinedOutput(); err == nil {
		t.Errorf("a relative ExecStart passed verify:\n%s", out)
	}
}

func TestServiceQuotingAndContent(t *testing.T) {
	s := testSchedule(t)
	svc := s.Service()
	for _, want := range []string{
		"Type=oneshot",
		"ExecStart=" + s.Binary + " playbook run --yes --set scrub_rate=50MiB/s --set \"note=100%% sure\" health-check",
	} {
		if !strings.Contains(svc, want) {
			t.Errorf("service lacks %q:\n%s", want, svc)
		}
	}
	if tm := s.Timer(); !strings.Contains(tm, "OnCalendar=*-*-* 03:30:00") || !strings.Contains(tm, "Persistent=true") || !strings.Contains(tm, "WantedBy=timers.target") {
		t.Errorf("timer:\n%s", tm)
	}
}

func TestCronLineUsesFlockAndEscapesPercent(t *testing.T) {
	s := testSchedule(t)
	s.Name = "health.check" // cron.d ignores file names with dots
	cron := s.Cron()
	var line string
	for _, l := range strings.Split(cron, "\n") {
		if strings.HasPrefix(l, "30 3 * * * root ") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no daily 03:30 root line:\n%s", cron)
	}
	if !strings.Contains(line, "flock -n /run/lock/tbhost-health-check.lock "+s.Binary+" playbook run --yes") {
		t.Errorf("line %q", line)
	}
	if !strings.Contains(line, `'note=100\% sure'`) {
		t.Errorf("%% must be escaped for cron: %q", line)
	}
	if s.UnitName() != "tbhost-health-check" {
		t.Errorf("unit name %q", s.UnitName())
	}
	// The line runs under sh: the quoting survives a real shell.
	sh := strings.SplitN(line, " root ", 2)[1]
	sh = strings.ReplaceAll(sh, `\%`, "%")
	out, err := exec.Command("sh", "-c", "set -- "+strings.TrimPrefix(sh, "flock -n /run/lock/tbhost-health-check.lock ")+`; for a; do echo "[$a]"; done`).Output()
	if err != nil || !strings.Contains(string(out), "[note=100% sure]") {
		t.Errorf("sh split: %v %q", err, out)
	}
}

func TestParseAt(t *testing.T) {
	if h, m, err := ParseAt("04:05"); err != nil || h != 4 || m != 5 {
		t.Errorf("04:05 -> %d %d %v", h, m, err)
	}
	for _, bad := range []string{"24:00", "3", "03:60", "nightly", "03:30:00"} {
		if _, _, err := ParseAt(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestScheduleCheckRefusesWhatBreaksALine(t *testing.T) {
	good := testSchedule(t)
	good.User = "root"
	if err := good.Check(); err != nil {
		t.Fatalf("a good schedule: %v", err)
	}
	for name, mod := range map[string]func(*Schedule){
		"user with newline": func(s *Schedule) { s.User = "root\n* * * * * root touch /tmp/x" },
		"user with space":   func(s *Schedule) { s.User = "root x" },
		"user too long":     func(s *Schedule) { s.User = strings.Repeat("a", 33) },
		"user digit first":  func(s *Schedule) { s.User = "1root" },
		"arg with newline":  func(s *Schedule) { s.Args = []string{"--set", "a=b\nExecStartPre=/bin/true"} },
		"binary with CR":    func(s *Schedule) { s.Binary = "/usr/bin/tbhost\r" },
		"playbook with NL":  func(s *Schedule) { s.Playbook = "/srv/p\n.yaml" },
		"name with NL":      func(s *Schedule) { s.Name = "x\n[Service]" },
		"hour 24":           func(s *Schedule) { s.Hour = 24 },
	} {
		s := testSchedule(t)
		mod(&s)
		if err := s.Check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for _, u := range []string{"root", "_tb", "tb-host", "tb_1", "machine$", strings.Repeat("a", 32)} {
		s := testSchedule(t)
		s.User = u
		if err := s.Check(); err != nil {
			t.Errorf("user %q refused: %v", u, err)
		}
	}
}
