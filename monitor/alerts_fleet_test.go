package monitor

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/tbhost/tbhost/internal/execx"
)

// The fleet rules (alerts/tbhost-fleet.rules.yml) load and pass their
// promtool unit tests: each alert fires where it should and stays silent
// where it should not.
func TestFleetAlertRules(t *testing.T) {
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Skip("promtool not installed (Debian package prometheus; .ci/install-deps installs it): skipping the fleet rule tests")
	}
	promtool(t, "check", "rules", "alerts/tbhost-fleet.rules.yml")
	promtool(t, "test", "rules", "alerts/tbhost-fleet.rules_test.yml")
}

func promtool(t *testing.T, args ...string) string {
	t.Helper()
	res, err := execx.Exec{}.Run(context.Background(), append([]string{"promtool"}, args...)...)
	out := string(res.Stdout) + string(res.Stderr)
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// notExportedByTbhost are the metrics the rules and the dashboard may name
// that tbhost does not export itself.
var notExportedByTbhost = map[string]string{
	"node_textfile_mtime_seconds": "node_exporter's textfile collector: the age of monitor check --textfile output",
}

// onlyWhileSyncing are exported metrics no lab capture holds a sample of
// (none was captured during a resync); they must still be declared by the
// exporter.
var onlyWhileSyncing = map[string]bool{"tbhost_array_sync_progress_ratio": true}

var labCaptures = []string{"raid5-integrity-stripes5", "raid5-no-stripes", "raid5-member-dropped", "raid5-missing-member-boot"}

// exportedNames is every metric name in /metrics of the exporter and in the
// --textfile output of monitor check, on the lab captures.
func exportedNames(t *testing.T) (scraped, declared map[string]bool) {
	t.Helper()
	scraped, declared = map[string]bool{}, map[string]bool{}
	typeLine := regexp.MustCompile(`(?m)^# TYPE (\S+) `)
	for _, c := range labCaptures {
		e := &Exporter{Env: Env{Root: captured(t, c)}, Interval: 5e9, TopologyEvery: 6e10, Thresholds: DefaultThresholds()}
		for i := 0; i < 2; i++ {
			_ = e.Step(context.Background()) // the boot without HDD3 has one sample: its error is exported too
		}
		for _, m := range typeLine.FindAllStringSubmatch(scrape(t, e), -1) {
			scraped[m[1]] = true
		}
		ch := make(chan *prometheus.Desc, 64)
		e.Describe(ch)
		close(ch)
		fq := regexp.MustCompile(`fqName: "([^"]+)"`)
		for d := range ch {
			if m := fq.FindStringSubmatch(d.String()); m != nil {
				declared[m[1]] = true
			}
		}
		r := checkTree(t, captured(t, c))
		mfs, err := r.Registry(0).Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			scraped[mf.GetName()] = true
		}
	}
	if !scraped["tbhost_array_status"] || !scraped["tbhost_monitor_check_status"] {
		t.Fatalf("the captures exported too little: %v", scraped)
	}
	return scraped, declared
}

var metricName = regexp.MustCompile(`\b((?:tbhost|node)_[a-zA-Z0-9_]+)\b`)

// checkExprNames fails for a name in expr that tbhost does not export.
func checkExprNames(t *testing.T, where, expr string, scraped, declared map[string]bool) {
	t.Helper()
	names := metricName.FindAllString(expr, -1)
	if len(names) == 0 {
		t.Errorf("%s: %q names no tbhost metric", where, expr)
	}
	for _, n := range names {
		switch {
		case scraped[n]:
		case notExportedByTbhost[n] != "":
		case onlyWhileSyncing[n] && declared[n]:
		default:
			t.Errorf("%s names %s, which monitor serve and monitor check --textfile do not export on the lab captures", where, n)
		}
	}
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert  string `yaml:"alert"`
			Record string `yaml:"record"`
			Expr   string `yaml:"expr"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func TestShippedRulesUseExportedMetrics(t *testing.T) {
	scraped, declared := exportedNames(t)
	alerts := map[string]bool{}
	for _, f := range []string{"alerts/tbhost.rules.yml", "alerts/tbhost-fleet.rules.yml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rf ruleFile
		if err := yaml.Unmarshal(b, &rf); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		recorded := map[string]bool{}
		for _, g := range rf.Groups {
			for _, r := range g.Rules {
				alerts[r.Alert] = true
				if r.Record != "" {
					recorded[r.Record] = true
				}
				// an expression over recorded series only is checked
				// where those are recorded
				if !metricName.MatchString(r.Expr) && usesRecorded(r.Expr, recorded) {
					continue
				}
				checkExprNames(t, f+" "+r.Alert+r.Record, r.Expr, scraped, declared)
			}
		}
	}
	// every array state the exporter exports has an alert
	for _, a := range []string{"TbhostArrayCritical", "TbhostArrayWarning", "TbhostArrayUnknown", "TbhostArrayProblems",
		"TbhostArrayMemberMissing", "TbhostArrayDegraded", "TbhostArrayRebuildStalled", "TbhostArrayIntegrityMismatches",
		"TbhostExporterErrors", "TbhostMonitorStale", "TbhostCheckTextfileStale", "TbhostArrayDisappeared", "TbhostTablesArrayAbsent"} {
		if !alerts[a] {
			t.Errorf("no alert %s in the shipped rules", a)
		}
	}
}

type dashboard struct {
	Title      string `json:"title"`
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID      int    `json:"id"`
		Title   string `json:"title"`
		Type    string `json:"type"`
		GridPos struct{ X, Y, W, H int }
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// The fleet dashboard parses, every query names metrics tbhost exports,
// and it shows per host, per array and per disk share of reads. Its queries
// are valid PromQL: promtool checks them as recording rules.
func TestFleetDashboard(t *testing.T) {
	b, err := os.ReadFile("alerts/grafana-fleet.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana-fleet.json: %v", err)
	}
	if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard has no uid, title or panels")
	}
	scraped, declared := exportedNames(t)
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: %v", v.Name, err)
		}
		checkExprNames(t, "variable "+v.Name, q.Query, scraped, declared)
	}
	for _, v := range []string{"datasource", "instance", "array"} {
		if !vars[v] {
			t.Errorf("no template variable $%s", v)
		}
	}
	ids := map[int]bool{}
	var exprs []string
	share := false
	for _, p := range d.Panels {
		if ids[p.ID] || p.ID == 0 {
			t.Errorf("panel %q: id %d missing or not unique", p.Title, p.ID)
		}
		ids[p.ID] = true
		if len(p.Targets) == 0 || p.GridPos.W == 0 || p.GridPos.H == 0 {
			t.Errorf("panel %q has no queries or no size", p.Title)
		}
		for _, tg := range p.Targets {
			checkExprNames(t, "panel "+p.Title, tg.Expr, scraped, declared)
			exprs = append(exprs, tg.Expr)
			if strings.Contains(tg.Expr, "by (instance, array, disk)") && strings.Contains(tg.Expr, "/ on (instance, array)") {
				share = true
			}
		}
	}
	if !share {
		t.Error("no panel shows each disk's share of its array's reads per host")
	}
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Skip("promtool not installed: the dashboard's PromQL is not syntax-checked")
	}
	sort.Strings(exprs)
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	repl := strings.NewReplacer("$__rate_interval", "5m", "$instance", ".*", "$array", ".*")
	for i, e := range exprs {
		q, _ := json.Marshal(repl.Replace(e))
		rules.WriteString("      - record: dashboard:query" + string(rune('a'+i%26)) + "\n        expr: " + string(q) + "\n")
	}
	f := filepath.Join(t.TempDir(), "dashboard.rules.yml")
	if err := os.WriteFile(f, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	promtool(t, "check", "rules", f)
}

// usesRecorded reports whether expr names a series recorded earlier in the file.
func usesRecorded(expr string, recorded map[string]bool) bool {
	for name := range recorded {
		if strings.Contains(expr, name) {
			return true
		}
	}
	return false
}
