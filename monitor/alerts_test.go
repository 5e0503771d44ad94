package monitor

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/execx"
)

// The shipped alerting rules must load and pass their unit tests (which
// include alerts that fire and alerts that must stay silent).
func TestAlertRules(t *testing.T) {
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Skip("promtool not installed (Debian package prometheus; .ci/install-deps installs it): skipping the alerting-rule tests")
	}
	run := func(args ...string) string {
		res, err := execx.Exec{}.Run(context.Background(), append([]string{"promtool"}, args...)...)
		out := string(res.Stdout) + string(res.Stderr)
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	if out := run("check", "rules", "alerts/tbhost.rules.yml"); !strings.Contains(out, "SUCCESS: 15 rules found") {
		t.Errorf("check rules: %s", out)
	}
	run("test", "rules", "alerts/tbhost.rules_test.yml")
}

// The rules must use the names the exporter really exports.
func TestAlertRulesUseExportedMetrics(t *testing.T) {
	b, err := readFile("alerts/tbhost.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	e := &Exporter{Env: Env{Root: derived(t, "balanced")}, Interval: 1, TopologyEvery: 1, Thresholds: DefaultThresholds()}
	stepAll(t, e, 2)
	exported := scrape(t, e)
	for _, name := range []string{"tbhost_array_member_skew_ratio", "tbhost_array_member_read_time_seconds_total", "tbhost_array_member_io_time_seconds_total", "tbhost_array_degraded", "tbhost_array_integrity_mismatches", "tbhost_monitor_last_sample_timestamp_seconds"} {
		if !strings.Contains(b, name) {
			t.Errorf("rules do not use %s", name)
		}
		if !strings.Contains(exported, "# TYPE "+name+" ") {
			t.Errorf("exporter does not export %s", name)
		}
	}
}
