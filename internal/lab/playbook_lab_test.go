//go:build lab

package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// playbookScript (issue 7): provision-host end to end on the guest's disks,
// interrupted (SIGTERM) in the middle of lvm-apply and resumed; health-check
// on the result exits 0 and prints nothing; after a member disk is removed
// it exits 2 (CRITICAL).
const playbookScript = `. /lab/lib.sh
export PATH=/usr/bin:/usr/sbin:/sbin:/bin
S=/tmp/pb
lab_step "provision-host, SIGTERM during lvm-apply"
tbhost playbook run --yes --state-dir $S provision-host > /tmp/run1.log 2>&1 &
pid=$!
i=0
while ! grep -q '"current_step": "lvm-apply"' $S/provision-host/state.json 2>/dev/null; do
  sleep 1; i=$((i+1)); [ $i -gt 900 ] && break
done
sleep 15
kill -TERM $pid
wait $pid; echo $? | lab_out interrupted.rc
lab_out interrupted.log < /tmp/run1.log
cp $S/provision-host/state.json /tmp/state-interrupted.json; lab_out state-interrupted.json < /tmp/state-interrupted.json

lab_step "provision-host --resume"
tbhost playbook run --yes --resume --state-dir $S provision-host > /tmp/run2.log 2>&1; echo $? | lab_out resume.rc
lab_out resume.log < /tmp/run2.log

lab_step "tables and prefix store"
H="--set store="
if ls /tables/* >/dev/null 2>&1; then
  cp /tables/* /srv/syzygy/
  tbhost prefix extract --tables /srv/syzygy --store /srv/syzygy-prefix > /tmp/x.log 2>&1; echo $? | lab_out extract.rc
  lab_out extract.log < /tmp/x.log
  H=""
fi
lab_wait_sync vg-hdd/tables 600

lab_step "health-check on the healthy host"
tbhost playbook run --state-dir $S --set scrub_budget=20s --set monitor_for=10s $H health-check > /tmp/h1.log 2>&1
echo $? | lab_out health.rc; lab_out health.out < /tmp/h1.log

lab_step "health-check with a member disk removed"
echo 1 > /sys/block/sdc/device/delete; sleep 3
tbhost playbook run --state-dir $S --set scrub_budget=20s --set monitor_for=10s $H health-check > /tmp/h2.log 2>&1
echo $? | lab_out health-degraded.rc; lab_out health-degraded.out < /tmp/h2.log
lab_out provision-log.jsonl < $S/provision-host/log.jsonl
exit 0
`

func TestPlaybookProvisionResumeHealth(t *testing.T) {
	hdd, _ := Disks(HDD, 6, 256, "512n")
	nvme, _ := Disks(NVMe, 2, 128, "512n")
	files := map[string][]byte{}
	for _, name := range []string{"KRvK.rtbw", "KRvK.rtbz", "KQvK.rtbw", "KQvK.rtbz", "KBNvK.rtbw"} {
		b, err := os.ReadFile(filepath.Join(moduleRoot(), "..", "shared", "syzygy", "tables", name))
		if err != nil {
			t.Logf("no real tables (%v): health-check runs without the prefix store", err)
			files = nil
			break
		}
		files["/tables/"+name] = b
	}
	res := boot(t, Config{Name: "playbook", Disks: append(hdd, nvme...), Script: []byte(playbookScript), Files: files, Timeout: 40 * time.Minute})
	out := func(n string) string { return strings.TrimSpace(string(res.Outputs[n])) }
	if res.ExitCode != 0 {
		t.Fatalf("scenario exit %d (log %s)", res.ExitCode, res.LogPath)
	}
	// interrupted: the run stops with a signal status and the state says where
	if rc := out("interrupted.rc"); rc == "0" {
		t.Errorf("the interrupted run exited 0:\n%s", out("interrupted.log"))
	}
	if st := out("state-interrupted.json"); !strings.Contains(st, "current_step") {
		t.Errorf("state after the interruption does not say where it stopped:\n%s", st)
	}
	if rc := out("resume.rc"); rc != "0" {
		t.Errorf("--resume exit %s, want 0:\n%s", rc, out("resume.log"))
	}
	if files != nil {
		if rc := out("extract.rc"); rc != "0" {
			t.Errorf("prefix extract exit %s:\n%s", rc, out("extract.log"))
		}
	}
	if rc, o := out("health.rc"), out("health.out"); rc != "0" || o != "" {
		t.Errorf("health-check on the healthy host: exit %s, output %q; want 0 and silence", rc, o)
	}
	if rc := out("health-degraded.rc"); rc != "2" || !strings.Contains(out("health-degraded.out"), "CRITICAL") {
		t.Errorf("health-check with a disk removed: exit %s, want 2 (CRITICAL):\n%s", rc, out("health-degraded.out"))
	}
}
