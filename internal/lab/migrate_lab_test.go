//go:build lab

package lab

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/realdata"
)

// migrateScript (issue 17): the migrate playbook end to end with --yes on
// the guest's disks. The "old host" lives in the same guest on loopback: an
// rsync daemon serving /old (real tables) and a bench serve over them (old
// target); the new target is a bench serve over the copied tables, started
// once the copy is done. The first run is SIGKILLed (with the tables sync
// and its rsync client, as a power loss would) while tables-sync copies at
// a small --bwlimit; --resume completes the copy and runs on through the
// gate and the cutover hook; a member disk is removed during the
// post-cutover watch, which fails and runs the rollback hook. Last, the gate
// against a new target slowed by --delay fails and no hook runs.
const migrateScript = `. /lab/lib.sh
export PATH=/usr/bin:/usr/sbin:/sbin:/bin
S=/tmp/pb
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
# wait_port HEXPORT: until something listens on 127.0.0.1:PORT, for at
# most 120 s by the guest's uptime (a count of sleeps gave up within seconds
# in two lab boots although the daemon came up: sleep returned early)
wait_port() {
  end=$(( $(cut -d. -f1 /proc/uptime) + 120 ))
  while ! grep -qi ":$1 00000000:0000 0A" /proc/net/tcp; do
    [ "$(cut -d. -f1 /proc/uptime)" -gt "$end" ] && return 1
    sleep 1
  done
}
cur() { sed -n 's/.*"current_step": "\([^"]*\)".*/\1/p' $S/migrate/state.json 2>/dev/null; }

lab_step "old host: rsync daemon and bench serve on loopback"
cat > /tmp/rsyncd.conf <<EOF
use chroot = no
uid = 0
gid = 0
pid file = /tmp/rsyncd.pid
log file = /tmp/rsyncd.log
[syzygy]
path = /old
read only = yes
EOF
rsync --daemon --no-detach --config=/tmp/rsyncd.conf --address=127.0.0.1 --port=8873 > /tmp/rsyncd.err 2>&1 &
FROM=rsync://127.0.0.1:8873/syzygy
if ! wait_port 22A9; then
  # keep going with a local source so the rest of the run is seen; the test fails on this
  echo "rsync daemon not listening on 127.0.0.1:8873" | lab_out daemon-failed
  FROM=/old
fi
tbhost bench serve --tables /old --listen 127.0.0.1:9001 > /tmp/old-serve.log 2>&1 &
# the slowed new host: 3 s per answer, so p99<=5*old fails however slowly
# the emulated old host answers (on a slow machine, 2026-12-02, its p99 was
# 178 ms and a 500 ms delay passed the gate: 552 ms < 5 x 178 ms)
tbhost bench serve --tables /old --listen 127.0.0.1:9003 --delay 3s > /tmp/slow-serve.log 2>&1 &
wait_port 2329 || echo "old bench serve not listening on 127.0.0.1:9001" | lab_out serve-failed
{ ip addr; cat /proc/net/tcp; cat /tmp/rsyncd.err /tmp/rsyncd.log /tmp/old-serve.log; rsync --version; } 2>&1 | lab_out net-diag
tbhost bench fens --tables /old --count 2000 -o /tmp/fens.log
# the slowed gate's log: 120 requests, 24 measured after the 80 % warm-up,
# 10 rounds of 12 clients at 3 s each against the slowed host (240 took 61 s)
head -n 120 /tmp/fens.log > /tmp/fens-short.log

# the new target: a bench serve over the copied tables, started when the copy is verified
( while :; do case "$(cur)" in verify-tables|prefix-extract|prefix-verify|replay-gate) break;; esac; sleep 1; done
  exec tbhost bench serve --tables /srv/syzygy --listen 127.0.0.1:9002 > /tmp/new-serve.log 2>&1 ) &
# a member disk removed 10 s into the post-cutover watch
set -- $(lab_disks hdd); victim=${3#/dev/}; set --
( while [ "$(cur)" != post-cutover-watch ]; do sleep 1; done; sleep 10
  echo 1 > /sys/block/$victim/device/delete; echo "$victim removed at $(date +%s)" > /tmp/removed ) &

run_migrate() {
  tbhost playbook run --yes --state-dir $S "$@" \
    --set from=$FROM --set lists=/lists --set replay_log=/tmp/fens.log \
    --set old_target=http://127.0.0.1:9001 --set new_target=http://127.0.0.1:9002 \
    --set 'gates=p99<=5*old,p99.9<=20*old' --set clients=4 --set bwlimit=64KiB/s \
    --set balance_for=15s --set watch_for=40s \
    --set 'cutover_hook=echo cutover > /tmp/cutover' --set 'rollback_hook=echo rollback > /tmp/rollback' \
    migrate
}

lab_step "migrate, SIGKILL during tables-sync"
run_migrate > /tmp/run1.log 2>&1 &
pid=$!
i=0
while [ "$(cur)" != tables-sync ]; do sleep 1; i=$((i+1)); [ $i -gt 1800 ] && break; done
i=0
while [ $(ls /srv/syzygy/*.rtb? 2>/dev/null | wc -l) -lt 3 ]; do sleep 1; i=$((i+1)); [ $i -gt 120 ] && break; done
# tbhost playbook run, the step (tables sync) and its rsync client die at
# once, as in a power loss ($pid is the subshell; the rsync daemon lives on)
for p in /proc/[0-9]*; do
  c=$(tr '\0' ' ' < $p/cmdline 2>/dev/null)
  case "$c" in *"playbook run"*|*"tables sync"*) kill -9 ${p#/proc/} ;; rsync*--daemon*) ;; rsync*) kill -9 ${p#/proc/} ;; esac
done
wait $pid; echo $? | lab_out interrupted.rc
ls /srv/syzygy/*.rtb? 2>/dev/null | wc -l | lab_out verified-at-kill
lab_out interrupted.log < /tmp/run1.log
lab_out state-interrupted.json < $S/migrate/state.json
lab_out mounts < /proc/mounts

lab_step "migrate --resume"
n=0
while :; do
  run_migrate --resume > /tmp/run2.log 2>&1; rc=$?
  # a step the killed run left behind still holds the lock: wait for it
  if [ $rc = 3 ] && grep -q "in progress" /tmp/run2.log && [ $n -lt 60 ]; then n=$((n+1)); sleep 2; continue; fi
  break
done
echo $rc | lab_out resume.rc; echo $n | lab_out resume-lock-waits
lab_out resume.log < /tmp/run2.log
lab_out state-resumed.json < $S/migrate/state.json
lab_out log.jsonl < $S/migrate/log.jsonl
[ -e /tmp/cutover ] && lab_out cutover.marker < /tmp/cutover
[ -e /tmp/rollback ] && lab_out rollback.marker < /tmp/rollback
[ -e /tmp/removed ] && lab_out removed < /tmp/removed
(cd /srv/syzygy && sha256sum *.rtb?) | lab_out new.sha256
ls -la /srv/syzygy /srv/syzygy/.tbhost-sync 2>&1 | lab_out new.ls
lab_out new-serve.log < /tmp/new-serve.log

lab_step "the gate against a slowed new host"
rm -f /tmp/cutover /tmp/rollback
# bounded: a boot of this scenario once hung here with the guest idle (cause
# not found); what runs and what it waits in is kept
( sleep 150; { ps; for p in /proc/[0-9]*; do echo "${p#/proc/} $(cat $p/wchan 2>/dev/null) $(tr '\0' ' ' < $p/cmdline 2>/dev/null)"; done; } > /tmp/hang.txt 2>&1
  for p in /proc/[0-9]*; do case "$(tr '\0' ' ' < $p/cmdline 2>/dev/null)" in *pb-slow*) kill -9 ${p#/proc/};; esac; done ) &
watchdog=$!
tbhost playbook run --yes --state-dir /tmp/pb-slow --from replay-gate \
  --set from=$FROM --set lists=/lists --set replay_log=/tmp/fens-short.log \
  --set old_target=http://127.0.0.1:9001 --set new_target=http://127.0.0.1:9003 \
  --set 'gates=p99<=5*old,p99.9<=20*old' --set clients=12 --set provision=false \
  --set 'cutover_hook=echo cutover > /tmp/cutover' --set 'rollback_hook=echo rollback > /tmp/rollback' \
  migrate > /tmp/run3.log 2>&1
echo $? | lab_out slow.rc; lab_out slow.log < /tmp/run3.log
kill $watchdog 2>/dev/null; [ -e /tmp/hang.txt ] && lab_out slow-hang.txt < /tmp/hang.txt
lab_out slow-serve.log < /tmp/slow-serve.log; lab_out old-serve.log < /tmp/old-serve.log
[ -e /tmp/cutover ] && lab_out slow-cutover.marker < /tmp/cutover
[ -e /tmp/rollback ] && lab_out slow-rollback.marker < /tmp/rollback
exit 0
`

func TestMigratePlaybook(t *testing.T) {
	hdd, _ := Disks(HDD, 6, 256, "512n")
	nvme, _ := Disks(NVMe, 2, 128, "512n")
	files, sums, err := migrateOldHost()
	if err != nil {
		t.Skipf("SKIP: no real tables for the old host: %v", err)
	}
	res := boot(t, Config{Name: "migrate", Disks: append(hdd, nvme...), Script: []byte(migrateScript), Files: files, Timeout: 40 * time.Minute})
	out := func(n string) string { return strings.TrimSpace(string(res.Outputs[n])) }
	if res.ExitCode != 0 {
		t.Fatalf("scenario exit %d (log %s)", res.ExitCode, res.LogPath)
	}
	if f := out("daemon-failed") + out("serve-failed"); f != "" {
		t.Errorf("the old host on loopback did not come up: %s\n%s", f, out("net-diag"))
	}

	// interrupted in the middle of the copy
	if rc := out("interrupted.rc"); rc == "0" {
		t.Errorf("the SIGKILLed run exited 0:\n%s", out("interrupted.log"))
	}
	if st := stateOf(t, out("state-interrupted.json")); st.Current != "tables-sync" {
		t.Errorf("killed run's state: current_step %q, want tables-sync:\n%s", st.Current, out("state-interrupted.json"))
	}
	if n := out("verified-at-kill"); n == fmt.Sprint(len(sums)) {
		t.Errorf("all %s tables were in place when the run was killed: the kill did not interrupt the copy", n)
	}
	t.Logf("killed with %s of %d tables verified in /srv/syzygy; --resume waited %s times for the lock", out("verified-at-kill"), len(sums), out("resume-lock-waits"))

	// resumed: every step through the cutover done, the watch failed when
	// the member disk went, the rollback hook ran, the run exits 1
	resume := out("resume.log")
	t.Logf("resumed run (exit %s):\n%s", out("resume.rc"), resume)
	if rc := out("resume.rc"); rc != "1" {
		t.Errorf("--resume exit %s, want 1 (the post-cutover watch fails)", rc)
	}
	st := stateOf(t, out("state-resumed.json"))
	want := map[string]string{"provision": "done", "balance-empty-array": "done", "tables-sync": "done", "verify-tables": "done",
		"prefix-extract": "done", "prefix-verify": "done", "replay-gate": "done", "cutover": "done", "post-cutover-watch": "failed"}
	for _, s := range st.Steps {
		if w, ok := want[s.Name]; ok && s.Status != w {
			t.Errorf("step %s: %s (%s), want %s", s.Name, s.Status, s.Reason, w)
		}
		delete(want, s.Name)
	}
	for name := range want {
		t.Errorf("step %s not in the state", name)
	}
	if out("removed") == "" {
		t.Error("the scenario never removed the member disk")
	}
	if out("cutover.marker") != "cutover" {
		t.Errorf("cutover hook marker %q, want cutover", out("cutover.marker"))
	}
	if out("rollback.marker") != "rollback" {
		t.Errorf("rollback hook marker %q, want rollback", out("rollback.marker"))
	}
	watch := stepOutput(t, out("log.jsonl"), "post-cutover-watch")
	// lab boot 3 (2026-12-01): monitor check said UNKNOWN "a member's diskstats
	// counters went backwards (device reset)" with sdc still listed "ok",
	// not CRITICAL for the missing member: the rollback ran, for the wrong reason
	if !strings.Contains(watch, "CRITICAL") {
		t.Errorf("the failed watch's output does not say CRITICAL (a member removed during monitor check --for must be CRITICAL, not UNKNOWN):\n%s", watch)
	}
	gate := stepOutput(t, out("log.jsonl"), "replay-gate")
	for _, g := range []string{"p99<=5*old passes", "p99.9<=20*old passes"} {
		if !strings.Contains(gate, g) {
			t.Errorf("replay-gate output lacks %q:\n%s", g, gate)
		}
	}

	// every table byte-identical to the old host's
	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out("new.sha256")))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 {
			got[f[1]] = f[0]
		}
	}
	for name, sum := range sums {
		if got[name] != sum {
			t.Errorf("/srv/syzygy/%s: sha256 %q, want %s (the old host's)", name, got[name], sum)
		}
	}
	if len(got) != len(sums) {
		t.Errorf("/srv/syzygy holds %d tables, want %d:\n%s", len(got), len(sums), out("new.ls"))
	}

	// the gate against a slowed new host: exit 1, named, no hook ran
	if h := out("slow-hang.txt"); h != "" {
		t.Errorf("the slowed-gate run hung and was killed after 150 s; processes:\n%s\nslow serve: %s\nold serve: %s", h, out("slow-serve.log"), out("old-serve.log"))
	}
	slow := out("slow.log")
	t.Logf("gate against the slowed host (exit %s):\n%s", out("slow.rc"), slow)
	if rc := out("slow.rc"); rc != "1" || !strings.Contains(slow, "p99<=5*old FAILS") {
		t.Errorf("gate against a new host 3 s slower: exit %s, want 1 naming p99<=5*old FAILS", rc)
	}
	if out("slow-cutover.marker") != "" || out("slow-rollback.marker") != "" {
		t.Errorf("a hook ran after the gate failed: cutover %q rollback %q", out("slow-cutover.marker"), out("slow-rollback.marker"))
	}
}

type migrateState struct {
	Current string `json:"current_step"`
	Steps   []struct {
		Name, Status, Reason string
	} `json:"steps"`
}

func stateOf(t *testing.T, s string) migrateState {
	t.Helper()
	var st migrateState
	if err := json.Unmarshal([]byte(s), &st); err != nil {
		t.Errorf("state.json: %v:\n%s", err, s)
	}
	return st
}

// stepOutput is the output tail of the last "step" event of step in a
// playbook log.
func stepOutput(t *testing.T, log, step string) string {
	t.Helper()
	var tail string
	for _, line := range strings.Split(log, "\n") {
		var ev struct{ Event, Step string }
		var raw map[string]any
		if json.Unmarshal([]byte(line), &raw) != nil {
			continue
		}
		json.Unmarshal([]byte(line), &ev)
		if ev.Event == "step" && ev.Step == step {
			tail, _ = raw["output_tail"].(string)
		}
	}
	return tail
}

// migrateOldHost returns the guest files of the old host: the real tables
// that match the published lists under /old, the published lists filtered
// to exactly those files under /lists (so "missing" means missing from the
// old host), and a passwd for the rsync daemon; and each table's sha256.
func migrateOldHost() (map[string][]byte, map[string]string, error) {
	data, err := realdata.Find()
	if err != nil {
		return nil, nil, err
	}
	tables, err := filepath.Glob(filepath.Join(data, "tables", "*.rtb[wz]"))
	if err != nil {
		return nil, nil, err
	}
	files := map[string][]byte{
		"/etc/passwd": []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"),
		"/etc/group":  []byte("root:x:0:\nnogroup:x:65534:\n"),
	}
	sums := map[string]string{}
	for _, p := range tables {
		name := filepath.Base(p)
		if slices.Contains(realdata.OldGenerator, name) {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, err
		}
		files["/old/"+name] = b
		h := sha256.Sum256(b)
		sums[name] = hex.EncodeToString(h[:])
	}
	if len(sums) == 0 {
		return nil, nil, fmt.Errorf("no tables matching the published lists under %s", filepath.Join(data, "tables"))
	}
	for _, l := range []string{"bytes.tsv", "tbcheck.txt", "sha256"} {
		b, err := os.ReadFile(filepath.Join(data, "checksums", "syzygy-tables.info", l))
		if err != nil {
			return nil, nil, err
		}
		var kept bytes.Buffer
		for _, line := range strings.SplitAfter(string(b), "\n") {
			for _, field := range strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == ':' || r == '\n' || r == '*' }) {
				if _, ok := sums[field]; ok {
					kept.WriteString(strings.TrimRight(line, "\n") + "\n")
					break
				}
			}
		}
		files["/lists/"+l] = kept.Bytes()
	}
	return files, sums, nil
}
