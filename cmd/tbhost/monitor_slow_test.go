package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// issue 20: a fail-slow member is WARNING (exit 1) naming it; the flags
// tune it; --skip leaves it out; bad values are UNKNOWN (3), never 2.
func TestMonitorCheckSlowMember(t *testing.T) {
	root := derived(t, "slow")
	code, out, stderr := runTB(t, nil, "--root", root, "monitor", "check", "vg-hdd/tables")
	first := strings.SplitN(out, "\n", 2)[0]
	if code != 1 || !strings.HasPrefix(first, "WARNING: vg-hdd/tables: sdc (") || !strings.Contains(first, "tbhost lvm replace vg-hdd/tables --old /dev/sdc") {
		t.Fatalf("exit %d, want 1 naming sdc\n%s%s", code, out, stderr)
	}
	if !strings.Contains(first, "'vg-hdd/tables sdc r_await'=30ms;;;0") || !strings.Contains(first, "'vg-hdd/tables sdc util'=100%;;;0;100") {
		t.Errorf("perfdata lacks sdc's r_await/util: %s", first)
	}
	code, out, _ = runTB(t, nil, "--root", root, "monitor", "check", "--json", "vg-hdd/tables")
	var j struct {
		Arrays []struct {
			Members []struct {
				Disk string  `json:"disk"`
				Flag string  `json:"flag"`
				R    float64 `json:"r_await_ms"`
			} `json:"members"`
		} `json:"arrays"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil || code != 1 {
		t.Fatalf("exit %d %v\n%s", code, err, out)
	}
	var slow []string
	for _, m := range j.Arrays[0].Members {
		if m.Flag == "slow" {
			slow = append(slow, m.Disk)
		}
	}
	if strings.Join(slow, ",") != "sdc" {
		t.Errorf("json slow members %v, want [sdc]", slow)
	}
	// 7.5x: CRITICAL with --slow-critical-factor 5, OK with --slow-factor 8
	if code, out, _ = runTB(t, nil, "--root", root, "monitor", "check", "--slow-critical-factor", "5", "vg-hdd/tables"); code != 2 {
		t.Errorf("--slow-critical-factor 5: exit %d\n%s", code, out)
	}
	if code, out, _ = runTB(t, nil, "--root", root, "monitor", "check", "--slow-factor", "8", "--slow-critical-factor", "20", "vg-hdd/tables"); code != 0 {
		t.Errorf("--slow-factor 8: exit %d\n%s", code, out)
	}
	if code, out, _ = runTB(t, nil, "--root", root, "monitor", "check", "--slow-min-iops", "1000", "vg-hdd/tables"); code != 0 {
		t.Errorf("--slow-min-iops 1000: exit %d\n%s", code, out)
	}
	code, out, _ = runTB(t, nil, "--root", root, "monitor", "check", "--skip", "scsi-0QEMU_QEMU_HARDDISK_HDD3", "vg-hdd/tables")
	if code != 0 || !strings.Contains(out, "sdc left out of skew and latency judgement") || strings.Contains(out, "names no member") {
		t.Errorf("--skip HDD3: exit %d\n%s", code, out)
	}
	// a typo: nothing is left out, sdc is still judged slow, and the
	// output says why the --skip did nothing
	code, out, _ = runTB(t, nil, "--root", root, "monitor", "check", "--skip", "sdz", "vg-hdd/tables")
	if code != 1 || !strings.Contains(out, "--skip sdz names no member of the arrays checked (members: sda, sdb, sdc") || strings.Contains(out, "left out of skew") {
		t.Errorf("--skip sdz: exit %d, want 1 (sdc slow) with a note on the --skip\n%s", code, out)
	}
	for _, bad := range [][]string{{"--slow-factor", "1"}, {"--slow-factor", "4", "--slow-critical-factor", "3"}, {"--slow-min-iops", "-1"}, {"--slow-factor", "NaN"}} {
		args := append([]string{"--root", root, "monitor", "check"}, bad...)
		if code, out, stderr := runTB(t, nil, append(args, "vg-hdd/tables")...); code != 2 || !strings.Contains(stderr, "--slow") {
			t.Errorf("%v: exit %d, want 2 (a bad flag value is a usage error)\n%s%s", bad, code, out, stderr)
		}
	}
}

// watch shows the r_await ratio column and flags the slow member.
func TestMonitorWatchSlowMember(t *testing.T) {
	code, out, stderr := runTB(t, nil, "--root", derived(t, "slow"), "monitor", "watch", "--interval", "5s", "--count", "1", "vg-hdd/tables")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	var sdc string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "disk=sdc ") {
			sdc = l
		}
		if strings.Contains(l, "flag=slow") && !strings.Contains(l, "disk=sdc ") {
			t.Errorf("another disk flagged slow: %s", l)
		}
	}
	if !strings.Contains(sdc, "x_sib=7.5") || !strings.Contains(sdc, "flag=slow") {
		t.Errorf("sdc line %q", sdc)
	}
}

// The member a running integrity scrub reads (its state file's
// reading_disks, fresh) is not flagged slow; a stale or garbage state file
// hides nothing; a scrub reading every image leaves them comparable.
func TestMonitorCheckSkipsTheDiskTheScrubReads(t *testing.T) {
	root := derived(t, "slow")
	state := filepath.Join(root, "var", "lib", "tbhost", "scrub-vg-hdd-tables.json")
	if err := os.MkdirAll(filepath.Dir(state), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(disks string, updated time.Time) {
		t.Helper()
		doc := fmt.Sprintf(`{"lv_uuid":"x","pass":1,"updated":%q,"reading_images":["tables_rimage_2"],"reading_disks":%s,"pid":4242}`, updated.Format(time.RFC3339Nano), disks)
		if err := os.WriteFile(state, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`["/dev/sdc"]`, time.Now())
	code, out, _ := runTB(t, nil, "--root", root, "monitor", "check", "vg-hdd/tables")
	if code != 0 || !strings.Contains(out, "an integrity scrub reads sdc") || !strings.Contains(out, "sdc left out") {
		t.Errorf("scrub reading sdc: exit %d, want 0 with a note\n%s", code, out)
	}
	write(`["/dev/sdc"]`, time.Now().Add(-10*time.Minute)) // killed -9 long ago
	if code, out, _ = runTB(t, nil, "--root", root, "monitor", "check", "vg-hdd/tables"); code != 1 {
		t.Errorf("stale scrub state: exit %d, want 1 (sdc judged)\n%s", code, out)
	}
	write(`["/dev/sda","/dev/sdb","/dev/sdc","/dev/sdd","/dev/sde","/dev/sdf"]`, time.Now())
	if code, out, _ = runTB(t, nil, "--root", root, "monitor", "check", "vg-hdd/tables"); code != 1 {
		t.Errorf("scrub reading every image: exit %d, want 1 (same load on all: still judged)\n%s", code, out)
	}
	write(`["../../etc/passwd"]`, time.Now())
	if code, out, _ = runTB(t, nil, "--root", root, "monitor", "check", "vg-hdd/tables"); code != 1 || !strings.Contains(out, "ignored") {
		t.Errorf("bad reading_disks: exit %d, want 1 with a note\n%s", code, out)
	}
	if err := os.WriteFile(state, []byte("{garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ = runTB(t, nil, "--root", root, "monitor", "check", "vg-hdd/tables"); code != 1 || !strings.Contains(out, "not a scrub state") {
		t.Errorf("garbage state: exit %d, want 1 with a note\n%s", code, out)
	}
	// --scrub-state names a state elsewhere
	os.Remove(state)
	other := filepath.Join(t.TempDir(), "my-scrub.json")
	write(`["/dev/sdc"]`, time.Now())
	if err := os.Rename(state, other); err != nil {
		t.Fatal(err)
	}
	if code, out, _ = runTB(t, nil, "--root", root, "monitor", "check", "--scrub-state", other, "vg-hdd/tables"); code != 0 {
		t.Errorf("--scrub-state: exit %d, want 0\n%s", code, out)
	}
}
