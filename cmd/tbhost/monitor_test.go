package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/fixturetree"
	"github.com/tbhost/tbhost/internal/smallfs"
	"github.com/tbhost/tbhost/monitor/monitortest"
)

// derived writes one of monitor's derived trees (monitortest) into a fresh
// temporary directory and returns its root.
func derived(t *testing.T, name string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), name)
	if err := monitortest.Write(root, name); err != nil {
		t.Fatal(err)
	}
	return root
}

// captured unpacks one of the lab's committed captures and returns its root.
func captured(t *testing.T, name string) string {
	t.Helper()
	return fixturetree.Dir(t, "../../internal/lab/testdata/captures/"+name+".tar.gz")
}

func TestMonitorCheckMisbuiltIsCriticalAndNamesIdleDisks(t *testing.T) {
	code, out, stderr := runTB(t, nil, "--root", derived(t, "misbuilt"), "monitor", "check")
	if code != 2 {
		t.Fatalf("exit %d, want 2 (CRITICAL)\n%s%s", code, out, stderr)
	}
	first := strings.SplitN(out, "\n", 2)[0]
	if !strings.HasPrefix(first, "CRITICAL: ") || !strings.Contains(first, "sdd, sde, sdf idle") {
		t.Errorf("summary line %q must be CRITICAL and name the idle disks", first)
	}
	for _, id := range []string{"scsi-0QEMU_QEMU_HARDDISK_HDD4", "probe_rimage_0"} {
		if !strings.Contains(out, id) {
			t.Errorf("details lack %s:\n%s", id, out)
		}
	}
}

func TestMonitorCheckBalancedIsOK(t *testing.T) {
	code, out, stderr := runTB(t, nil, "--root", derived(t, "balanced"), "monitor", "check", "--for", "10s", "vg-hdd/tables")
	if code != 0 || !strings.HasPrefix(out, "OK: vg-hdd/tables balanced (6 disks") {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	if strings.Contains(out, "vg-nvme/prefix") {
		t.Errorf("only the named array may be checked:\n%s", out)
	}
}

func TestMonitorCheckMissingMemberIsCritical(t *testing.T) {
	code, out, _ := runTB(t, nil, "--root", derived(t, "missing"), "monitor", "check", "--quiet")
	if code != 2 || !strings.Contains(out, "tables_rimage_5 has no disk") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

func TestMonitorCheckQuietPrintsNothingWhenOK(t *testing.T) {
	code, out, stderr := runTB(t, nil, "--root", derived(t, "balanced"), "monitor", "check", "--quiet", "vg-hdd/tables")
	if code != 0 || out != "" || stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

func TestMonitorCheckLowTraffic(t *testing.T) {
	// the prefix array reads nothing in the fixture: skew is not judged
	code, out, _ := runTB(t, nil, "--root", derived(t, "balanced"), "monitor", "check", "vg-nvme/prefix")
	if code != 0 || !strings.Contains(strings.SplitN(out, "\n", 2)[0], "too little traffic") {
		t.Fatalf("default: exit %d\n%s", code, out)
	}
	code, out, _ = runTB(t, nil, "--root", derived(t, "balanced"), "monitor", "check", "--no-traffic", "unknown", "vg-nvme/prefix")
	if code != 3 || !strings.HasPrefix(out, "UNKNOWN: ") {
		t.Fatalf("--no-traffic unknown: exit %d\n%s", code, out)
	}
}

// Nagios perfdata: after " | " on the summary line, per member reads/s and
// share; only in the human output.
func TestMonitorCheckPerfdata(t *testing.T) {
	code, out, _ := runTB(t, nil, "--root", derived(t, "misbuilt"), "monitor", "check")
	first := strings.SplitN(out, "\n", 2)[0]
	status, perf, ok := strings.Cut(first, " | ")
	if code != 2 || !ok || !strings.HasPrefix(status, "CRITICAL: vg-hdd/probe: sdd, sde, sdf idle") || strings.Contains(status, "|") {
		t.Fatalf("exit %d, first line %q", code, first)
	}
	for _, want := range []string{"'vg-hdd/probe sda reads'=941.1;;;0", "'vg-hdd/probe sda share'=33.33%;;;0;100",
		"'vg-hdd/probe sdd reads'=0;;;0", "'vg-hdd/probe sdd share'=0%;;;0;100"} {
		if !strings.Contains(perf, want) {
			t.Errorf("perfdata lacks %s: %q", want, perf)
		}
	}
	// per member: reads, share, r_await, util (issue 20 added the last two)
	if n := strings.Count(perf, "'="); n != 24 {
		t.Errorf("%d perfdata items for 6 members: %q", n, perf)
	}
	if strings.Contains(strings.SplitN(out, "\n", 2)[1], "'=") {
		t.Errorf("perfdata beyond the first line:\n%s", out)
	}
}

func TestMonitorCheckJSONShape(t *testing.T) {
	code, out, _ := runTB(t, nil, "--root", derived(t, "misbuilt"), "monitor", "check", "--json")
	if code != 2 {
		t.Fatalf("exit %d", code)
	}
	if strings.Contains(out, "'=") || strings.Contains(out, " | ") {
		t.Errorf("--json must not carry perfdata:\n%s", out)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// exit 2: the error object (issue 18) joins status and arrays
	if doc["status"] != "CRITICAL" || len(doc) != 3 || doc["error"].(map[string]any)["exit_code"] != 2.0 {
		t.Errorf("top level: %v", keys(doc))
	}
	arr := doc["arrays"].([]any)[0].(map[string]any)
	if arr["name"] != "vg-hdd/probe" || len(arr) != 3 || len(arr["problems"].([]any)) == 0 {
		t.Errorf("array keys %v", keys(arr))
	}
	m := arr["members"].([]any)[1].(map[string]any)
	// issue 20 added r_await_ms, util_percent, queue_size and await_ratio
	want := []string{"await_ratio", "disk", "flag", "id", "queue_size", "r_await_ms", "read_bytes_per_s", "reads_per_s", "share", "util_percent"}
	if got := keys(m); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("member keys %v, want %v", got, want)
	}
	if m["disk"] != "sdd" || m["flag"] != "idle" || m["id"] != "scsi-0QEMU_QEMU_HARDDISK_HDD4" || m["reads_per_s"].(float64) != 0 {
		t.Errorf("member %v", m)
	}
}

func keys(m map[string]any) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	for i := range k { // tiny sort, no import
		for j := i + 1; j < len(k); j++ {
			if k[j] < k[i] {
				k[i], k[j] = k[j], k[i]
			}
		}
	}
	return k
}

func TestMonitorCheckTextfile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "tbhost.prom")
	code, _, _ := runTB(t, nil, "--root", derived(t, "misbuilt"), "monitor", "check", "--quiet", "--textfile", f)
	if code != 2 {
		t.Fatalf("exit %d", code)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"tbhost_monitor_check_status 2",
		`tbhost_monitor_check_member_flag{array="vg-hdd/probe",disk="sdd",flag="idle",id="scsi-0QEMU_QEMU_HARDDISK_HDD4",image="probe_rimage_0"} 1`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("textfile lacks %q:\n%s", want, b)
		}
	}
	// beside the textfile only its lock (empty; node_exporter reads *.prom)
	entries, _ := os.ReadDir(filepath.Dir(f))
	if len(entries) != 2 || entries[0].Name() != "tbhost.prom" || entries[1].Name() != "tbhost.prom.lock" {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

// A textfile whose file system is full (/var filled up) fails to be
// written: that must not turn a CRITICAL array into an UNKNOWN (which
// Nagios ranks below it) and drop its report. The check's status line,
// report and exit code stand; the textfile's error is named beside them
// (stderr, and the --json error's message); the old textfile is left.
func TestMonitorCheckTextfileOnAFullDiskKeepsTheStatus(t *testing.T) {
	dir := smallfs.Mount(t, "8k", "a full node_exporter textfile directory")
	f := filepath.Join(dir, "tbhost.prom")
	if err := os.WriteFile(f, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "filler"), make([]byte, 64<<10), 0o644) // fills it (ENOSPC past 8k)
	root := derived(t, "misbuilt")
	code, out, stderr := runTB(t, nil, "--root", root, "monitor", "check", "--textfile", f)
	if code != 2 || !strings.HasPrefix(out, "CRITICAL: ") || !strings.Contains(stderr, "write textfile "+f) || !strings.Contains(stderr, "no space left on device") {
		t.Fatalf("exit %d, want 2 (CRITICAL) with the textfile's error on stderr\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	code, out, _ = runTB(t, nil, "--root", root, "--json", "monitor", "check", "--textfile", f)
	var doc struct {
		Status string            `json:"status"`
		Arrays []json.RawMessage `json:"arrays"`
		Error  cliutil.ErrorJSON `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if code != 2 || doc.Status != "CRITICAL" || len(doc.Arrays) == 0 || doc.Error.ExitCode != 2 || !strings.Contains(doc.Error.Message, "write textfile "+f) {
		t.Fatalf("--json: exit %d, status %s, %d arrays, error %+v; want the CRITICAL report with the textfile's error", code, doc.Status, len(doc.Arrays), doc.Error)
	}
	if b, _ := os.ReadFile(f); string(b) != "old\n" {
		t.Errorf("the textfile was changed: %q", b)
	}
}

// A wrong command line is a usage error (2) in monitor check too: Nagios
// shows a check line broken by a typo as CRITICAL, not as UNKNOWN.
func TestMonitorCheckUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"monitor", "check", "--warn", "lots"},
		{"monitor", "check", "--warn", "70%", "--crit", "60%"},
		{"monitor", "check", "--no-such-flag"},
		{"monitor", "check", "--no-traffic", "maybe"},
	} {
		code, out, stderr := runTB(t, nil, append([]string{"--root", derived(t, "balanced")}, args...)...)
		if code != cliutil.ExitUsage {
			t.Errorf("%v: exit %d, want 2 (usage error)\n%s%s", args, code, out, stderr)
		}
	}
}

func TestMonitorCheckUnknownArrayListsArrays(t *testing.T) {
	code, out, _ := runTB(t, nil, "--root", derived(t, "balanced"), "monitor", "check", "vg-hdd/nope")
	if code != 3 || !strings.Contains(out, "vg-hdd/tables, vg-nvme/prefix") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

func TestMonitorCheckUnreadableRoot(t *testing.T) {
	code, out, _ := runTB(t, nil, "--root", t.TempDir(), "monitor", "check")
	if code != 3 || !strings.Contains(out, "sys/block") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

func TestMonitorTopologyJSON(t *testing.T) {
	code, out, _ := runTB(t, nil, "--root", derived(t, "balanced"), "--json", "monitor", "topology", "vg-hdd/tables")
	if code != 0 || !strings.Contains(out, `"id": "scsi-0QEMU_QEMU_HARDDISK_HDD6"`) {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

func TestMonitorWatchPlainLines(t *testing.T) {
	code, out, stderr := runTB(t, nil, "--root", derived(t, "misbuilt"), "monitor", "watch", "--count", "5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// the replay has 3 samples: 2 refreshes x 6 members, then it ends
	if len(lines) != 12 || !strings.Contains(lines[1], "vg-hdd/probe disk=sdd id=scsi-0QEMU_QEMU_HARDDISK_HDD4 image=probe_rimage_0 r/s=0.0") {
		t.Fatalf("%d lines:\n%s", len(lines), out)
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("escape codes when piped")
	}
}

func TestMonitorServeBadListenCannotRun(t *testing.T) {
	code, _, stderr := runTB(t, nil, "--root", derived(t, "balanced"), "monitor", "serve", "--listen", "256.0.0.1:1")
	if code != 3 || !strings.Contains(stderr, "256.0.0.1:1") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

func TestMonitorWithoutSubcommandIsUsage(t *testing.T) {
	code, _, _ := runTB(t, nil, "monitor", "nope")
	if code != 2 {
		t.Fatalf("exit %d", code)
	}
}

// The acceptance items on REAL lab captures (internal/lab/testdata/captures).
func TestMonitorCheckRealCaptures(t *testing.T) {
	code, out, _ := runTB(t, nil, "--root", captured(t, "raid5-no-stripes"), "monitor", "check", "vg-hdd/tables")
	if first := strings.SplitN(out, "\n", 2)[0]; code != 2 || !strings.Contains(first, "sdc, sde, sdf idle") {
		t.Errorf("misbuilt: exit %d, summary %q", code, first)
	}
	code, out, _ = runTB(t, nil, "--root", captured(t, "raid5-integrity-stripes5"), "monitor", "check", "vg-hdd/tables")
	if code != 0 || !strings.HasPrefix(out, "OK: vg-hdd/tables balanced (6 disks") {
		t.Errorf("balanced: exit %d\n%s", code, out)
	}
	for _, c := range []string{"raid5-missing-member-boot", "raid5-member-dropped"} {
		code, out, _ = runTB(t, nil, "--root", captured(t, c), "monitor", "check", "--json", "vg-hdd/tables")
		if code != 2 || !strings.Contains(out, `"disk": "missing:tables_rimage_2"`) || !strings.Contains(out, `"flag": "missing"`) {
			t.Errorf("%s: exit %d\n%s", c, code, out)
		}
	}
}
