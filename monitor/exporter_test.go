package monitor

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/execx"
)

func scrape(t *testing.T, e *Exporter) string {
	t.Helper()
	srv := httptest.NewServer(Handler(e))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	return string(b)
}

func stepAll(t *testing.T, e *Exporter, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if err := e.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestExporterMisbuilt(t *testing.T) {
	e := &Exporter{Env: Env{Root: derived(t, "misbuilt")}, Interval: 5 * time.Second, TopologyEvery: time.Minute, Thresholds: DefaultThresholds()}
	stepAll(t, e, 2)
	out := scrape(t, e)
	for _, want := range []string{
		`tbhost_array_member_skew_ratio{array="vg-hdd/probe",disk="sdd",id="scsi-0QEMU_QEMU_HARDDISK_HDD4",image="probe_rimage_0"} 0`,
		`tbhost_array_member_skew_ratio{array="vg-hdd/probe",disk="sda",id="wwn-0x5000c500a0000001",image="probe_rimage_0"} 2`,
		`tbhost_array_status{array="vg-hdd/probe"} 2`,
		`tbhost_array_degraded{array="vg-hdd/probe"} 0`,
		`# TYPE tbhost_array_member_reads_total counter`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	promtoolCheckMetrics(t, out)
}

func TestExporterMissingAndBalanced(t *testing.T) {
	e := &Exporter{Env: Env{Root: derived(t, "missing")}, Interval: 5 * time.Second, TopologyEvery: time.Minute, Thresholds: DefaultThresholds()}
	stepAll(t, e, 2)
	out := scrape(t, e)
	for _, want := range []string{
		`tbhost_array_degraded{array="vg-hdd/tables"} 1`,
		`tbhost_array_member_missing{array="vg-hdd/tables",image="tables_rimage_5"} 1`,
		`tbhost_array_integrity_mismatches{array="vg-hdd/tables"} 0`,
		`tbhost_array_degraded{array="vg-nvme/prefix"} 0`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(out, `tbhost_array_member_skew_ratio{array="vg-nvme/prefix"`) {
		t.Error("skew ratio exported for an array too idle to judge")
	}
	promtoolCheckMetrics(t, out)
}

func TestExporterBeforeSecondSample(t *testing.T) {
	e := &Exporter{Env: Env{Root: derived(t, "balanced")}, Interval: 5 * time.Second, TopologyEvery: time.Minute, Thresholds: DefaultThresholds()}
	stepAll(t, e, 1)
	out := scrape(t, e)
	if strings.Contains(out, "tbhost_array_member_skew_ratio{") || !strings.Contains(out, "tbhost_array_member_reads_total{") {
		t.Errorf("after one sample: counters yes, skew no:\n%s", out)
	}
	promtoolCheckMetrics(t, out)
}

func TestServeLoopback(t *testing.T) {
	e := &Exporter{Env: Env{Root: derived(t, "balanced")}, Interval: time.Millisecond, TopologyEvery: time.Minute, Thresholds: DefaultThresholds()}
	srv, err := NewServer("127.0.0.1:0", e)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	var body string
	for i := 0; i < 100; i++ {
		resp, err := http.Get("http://" + srv.Addr() + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			if strings.Contains(body, "tbhost_array_member_skew_ratio{") {
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, `tbhost_array_member_skew_ratio{array="vg-hdd/tables"`) {
		t.Fatalf("served metrics:\n%s", body)
	}
}

// needPromtool skips a test whose point is promtool's verdict when promtool
// is not installed, naming it.
func needPromtool(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Skip("promtool not installed (Debian package prometheus; .ci/install-deps installs it): cannot check the exposition format")
	}
}

// promtoolCheckMetrics pipes the exposition through `promtool check metrics`,
// as a subtest that skips, naming promtool, when it is not installed.
func promtoolCheckMetrics(t *testing.T, text string) {
	t.Helper()
	t.Run("promtool check metrics", func(t *testing.T) {
		needPromtool(t)
		res, err := execx.Exec{Stdin: []byte(text)}.Run(context.Background(), "promtool", "check", "metrics")
		if err != nil {
			t.Errorf("promtool check metrics: %v\n%s%s", err, res.Stdout, res.Stderr)
		}
	})
}

func TestTextfilePassesPromtool(t *testing.T) {
	needPromtool(t)
	topo := discover(t, derived(t, "misbuilt"))
	src, _ := NewReplaySource(derived(t, "misbuilt"), time.Unix(0, 0), 5*time.Second)
	samples, _ := Collect(context.Background(), src, noSleep{}, 5*time.Second, 10)
	r := Evaluate(topo.Arrays, samples, DefaultThresholds())
	f := t.TempDir() + "/x.prom"
	if err := r.WriteTextfile(context.Background(), f, 1e9); err != nil {
		t.Fatal(err)
	}
	b, _ := readFile(f)
	promtoolCheckMetrics(t, b)
}

func readFile(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}

func TestWatchTerminalRedraws(t *testing.T) {
	var out strings.Builder
	err := Watch(context.Background(), Env{Root: derived(t, "misbuilt")}, &out, WatchOptions{
		Interval: 5 * time.Second, Count: 1, Terminal: true, Thresholds: DefaultThresholds(),
	})
	if err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if strings.Count(s, "\x1b[H\x1b[2J") != 1 || !strings.Contains(s, "####################") || !strings.Contains(s, "idle") {
		t.Errorf("terminal output:\n%s", s)
	}
}

func TestWatchStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out strings.Builder
	err := Watch(ctx, Env{Root: derived(t, "balanced")}, &out, WatchOptions{Interval: time.Second, Thresholds: DefaultThresholds()})
	if err == nil || !strings.Contains(err.Error(), "canceled") || out.Len() != 0 {
		t.Errorf("cancelled before the first sample: err %v, out %q", err, out.String())
	}
}

// A snapshot with a single diskstats sample: watch has no rate to show,
// and says so instead of printing nothing and succeeding (cron, --json).
func TestWatchOneSampleIsAnError(t *testing.T) {
	root := derived(t, "misbuilt")
	files, _ := filepath.Glob(filepath.Join(root, "proc", "diskstats*"))
	if len(files) < 2 {
		t.Fatalf("fixture has %d diskstats samples, want several", len(files))
	}
	for _, f := range files[1:] {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	err := Watch(context.Background(), Env{Root: root}, &out, WatchOptions{Interval: time.Second, Count: 3, JSON: true, Thresholds: DefaultThresholds()})
	if err == nil || !strings.Contains(err.Error(), "one saved sample") || out.Len() != 0 {
		t.Errorf("one sample: err %v, out %q; want an error naming the single sample", err, out.String())
	}
}

// --textfile at a path whose directory is missing, or at a directory: the
// error names the user's path and the fix, not the library's temporary
// file (x.prom2243892192) or "rename ...: file exists"; nothing is left
// behind in the directory.
func TestTextfileErrorsNameThePathAndTheFix(t *testing.T) {
	var r Report
	dir := t.TempDir()
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "missing", "x.prom"), "the directory " + filepath.Join(dir, "missing") + " does not exist"},
		{dir, "it is a directory: give a file in it, e.g. " + filepath.Join(dir, "tbhost.prom")},
	} {
		err := r.WriteTextfile(context.Background(), c.path, 1)
		if err == nil || !strings.HasPrefix(err.Error(), "write textfile "+c.path+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("WriteTextfile(%s): %v, want %q", c.path, err, c.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the refused writes left %v in %s", ents[0].Name(), dir)
	}
	ok := filepath.Join(dir, "tbhost.prom")
	if err := r.WriteTextfile(context.Background(), ok, 1); err != nil {
		t.Fatalf("a file in an existing directory: %v", err)
	}
}
