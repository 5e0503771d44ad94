//go:build lab

package lab

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/realdata"
	"github.com/tbhost/tbhost/prefix/prefixtest"
)

// playbookScript (issue 7): provision-host end to end on the guest's disks,
// interrupted (SIGTERM) in the middle of lvm-apply and resumed; health-check
// on the result exits 0 and prints nothing; after a member disk is removed
// it exits 2 (CRITICAL). Before the disk is removed, pre-cutover runs for
// real: GO on the healthy host under a probe load (on a synthetic table set,
// large enough to spread over the disks), and NO-GO naming verify-tables on
// the real tables, checked against the published list, once two bytes of one
// table's data are changed.
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

if [ -e /checksums/sha256 ] && [ -e /synth-checksums/sha256 ]; then
  # The real host's 17 TiB never fits its page cache, so a probe reaches the
  # disks. The lab's tables would sit in the guest's cache after a few
  # 768 KiB readaheads: with readahead off and the cache dropped all through
  # the runs, every probe's data read goes to the disks, as there.
  ra=$(blockdev --getra /dev/vg-hdd/tables)
  blockdev --setra 0 /dev/vg-hdd/tables
  ( while :; do echo 3 > /proc/sys/vm/drop_caches; sleep 0.2; done ) &
  dropper=$!

  lab_step "pre-cutover on the healthy host (synthetic table set)"
  # The 24 real tables (1.6 MB) lie on ~25 chunks of the array, and where
  # ext4 puts them decides which disks the probes reach: too little data for
  # the balance check. A 36 MB synthetic set of the same format (the probes
  # spread over its blocks as over a real table's) stands in for the full
  # set, with its own checksum list.
  mkdir -p /srv/syzygy/synth /srv/syzygy-prefix/synth
  cp /synth/* /srv/syzygy/synth/
  tbhost prefix extract --tables /srv/syzygy/synth --store /srv/syzygy-prefix/synth > /tmp/xs.log 2>&1 || cat /tmp/xs.log
  sync
  tbhost playbook run --state-dir $S --set tables=/srv/syzygy/synth --set store=/srv/syzygy-prefix/synth \
    --set checksums=/synth-checksums/sha256 --set load_for=20s pre-cutover > /tmp/pc1.log 2>&1
  echo $? | lab_out precutover.rc; lab_out precutover.out < /tmp/pc1.log
  rm -rf /srv/syzygy/synth /srv/syzygy-prefix/synth

  lab_step "pre-cutover on the real tables, two bytes of one table's data changed"
  f=/srv/syzygy/KRvKP.rtbz
  touch -r $f /tmp/mtime-ref
  printf '\125\252' | dd of=$f bs=1 seek=100000 conv=notrunc 2>/dev/null
  touch -r /tmp/mtime-ref $f
  sync
  cmp -s $f /tables/KRvKP.rtbz && echo same | lab_out flip-unchanged
  tbhost playbook run --state-dir $S --set complete=false --set checksums=/checksums/sha256 \
    --set load_for=10s pre-cutover > /tmp/pc2.log 2>&1
  echo $? | lab_out precutover-corrupt.rc; lab_out precutover-corrupt.out < /tmp/pc2.log
  kill $dropper
  blockdev --setra $ra /dev/vg-hdd/tables
  cp /tables/KRvKP.rtbz $f; touch -r /tmp/mtime-ref $f
  lab_out precutover-log.jsonl < $S/pre-cutover/log.jsonl
fi

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
	files, err := realTablesAndChecksums()
	if err != nil {
		t.Logf("no real tables (%v): health-check runs without the prefix store, pre-cutover does not run", err)
		files = nil
	} else if err := addSyntheticTables(files); err != nil {
		t.Fatal(err)
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
		t.Logf("pre-cutover on the healthy host, synthetic set (exit %s):\n%s", out("precutover.rc"), out("precutover.out"))
		t.Logf("pre-cutover, real tables with KRvKP.rtbz changed (exit %s):\n%s", out("precutover-corrupt.rc"), out("precutover-corrupt.out"))
		if rc, o := out("precutover.rc"), out("precutover.out"); rc != "0" || !strings.Contains(o, "GO: all") {
			t.Errorf("pre-cutover on the healthy host: exit %s, want 0 and GO:\n%s", rc, o)
		}
		if out("flip-unchanged") != "" {
			t.Fatal("the scenario's byte change left KRvKP.rtbz as it was")
		}
		rc, o := out("precutover-corrupt.rc"), out("precutover-corrupt.out")
		if rc == "0" || !strings.Contains(o, "NO-GO") || !noGoNames(o, "verify-tables") {
			t.Errorf("pre-cutover with KRvKP.rtbz changed: exit %s, want non-zero and NO-GO naming verify-tables:\n%s", rc, o)
		}
		if !strings.Contains(o, "KRvKP.rtbz") {
			t.Errorf("pre-cutover with KRvKP.rtbz changed does not name the file:\n%s", o)
		}
	}
	if rc, o := out("health.rc"), out("health.out"); rc != "0" || o != "" {
		t.Errorf("health-check on the healthy host: exit %s, output %q; want 0 and silence", rc, o)
	}
	if rc := out("health-degraded.rc"); rc != "2" || !strings.Contains(out("health-degraded.out"), "CRITICAL") {
		t.Errorf("health-check with a disk removed: exit %s, want 2 (CRITICAL):\n%s", rc, out("health-degraded.out"))
	}
}

// realTablesAndChecksums returns the guest files of the playbook scenario:
// the real tables that match the published checksum list (all but
// realdata.OldGenerator) under /tables, and that list (sha256, with
// bytes.tsv and tbcheck.txt beside it) under /checksums.
func realTablesAndChecksums() (map[string][]byte, error) {
	data, err := realdata.Find()
	if err != nil {
		return nil, err
	}
	tables, err := filepath.Glob(filepath.Join(data, "tables", "*.rtb[wz]"))
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, path := range tables {
		if slices.Contains(realdata.OldGenerator, filepath.Base(path)) {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		files["/tables/"+filepath.Base(path)] = b
	}
	if _, ok := files["/tables/KRvKP.rtbz"]; !ok {
		return nil, fmt.Errorf("KRvKP.rtbz, which the scenario changes, is not under %s", filepath.Join(data, "tables"))
	}
	for _, name := range []string{"sha256", "bytes.tsv", "tbcheck.txt"} {
		b, err := os.ReadFile(filepath.Join(data, "checksums", "syzygy-tables.info", name))
		if err != nil {
			return nil, err
		}
		files["/checksums/"+name] = b
	}
	return files, nil
}

// noGoNames reports whether the go-no-go report in out lists step among the
// checks that did not pass ("  - STEP (failed...").
func noGoNames(out, step string) bool {
	_, report, ok := strings.Cut(out, "NO-GO:")
	return ok && strings.Contains(report, "\n  - "+step+" (")
}

// addSyntheticTables adds a 36 MB set of synthetic tables under /synth and
// its sha256 list (sha256sum format) at /synth-checksums/sha256: enough data
// for probe reads to spread over the lab array's six disks, which the 1.6 MB
// of real tables are not.
func addSyntheticTables(files map[string][]byte) error {
	var list strings.Builder
	for _, name := range []string{"KRPvKR.rtbw", "KRPvKR.rtbz", "KQPvKQ.rtbw", "KBPvKN.rtbz", "KRBvKR.rtbw", "KQNvKR.rtbz"} {
		subs := make([]prefixtest.Sub, prefixtest.NumSubtables(name))
		for i := range subs {
			subs[i] = prefixtest.Sub{BlockSizeLog: 10, IdxBits: 18}
		}
		tb, err := prefixtest.Build(prefixtest.Spec{Name: name, Subs: subs})
		if err != nil {
			return fmt.Errorf("synthetic table %s: %w", name, err)
		}
		files["/synth/"+name] = tb.Bytes
		fmt.Fprintf(&list, "%x  %s\n", sha256.Sum256(tb.Bytes), name)
	}
	files["/synth-checksums/sha256"] = []byte(list.String())
	return nil
}
