//go:build lab

package lab

// The fail-slow scenario of issue 20, in ONE boot: 12 virtual HDDs, two
// raid5 arrays of 6 (--stripes 5). vg-hdd/tables has hdd3 capped by qemu at
// 15 read IOPS (Disk.ReadIOPS: throttling.iops-read); vg-fast/tables is the
// same array without the cap ("cap removed"). Under the same random 4 KiB
// O_DIRECT read load, `monitor check` on the capped array exits 1 or 2
// naming exactly hdd3 as slow, and 0 on the other; `bench probe` on the
// real tables copied onto ext4 on each array shows the worse p99 and its
// per-disk table marks hdd3 alone. First run 2026-12-01: 5m46s boot on the
// shared 2-core machine (monitor check exit 1 naming hdd3 alone, 0 on the
// uncapped array; bench p99 139 vs 68 ms; the bench's first run then also
// marked a second disk, which carried ext4's atime writes: now mounted
// noatime, and the mark has monitor's load guard).
//
// Last, in the same boot, one hot table on vg-fast/tables (no cap): 4 KiB
// O_DIRECT re-reads of one table file on ext4 plus a light random load, so
// 3 members take most of the reads: no member may be flagged slow (issue
// 20's "a balanced array under uneven but legitimate load raises no slow
// flag"); the read-rate skew rule makes it CRITICAL (checkHotTable says
// why that is right). Run of 2026-12-01 at load ~3: 6m59s boot (420 s test);
// the hottest member read 1369 reads/s (58 %) at r_await 0.8 ms against
// 1.2 ms on the light ones, exit 2 (over/under), no slow member.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/realdata"
	"github.com/tbhost/tbhost/internal/treearchive"
	"github.com/tbhost/tbhost/monitor"
)

const slowScript = `. /lab/lib.sh
set -- $(lab_disks hdd)
A="$1 $2 $3 $4 $5 $6"; shift 6; B="$1 $2 $3 $4 $5 $6"
lab_run pvcreate -y $A $B || exit 10
lab_run vgcreate vg-hdd $A || exit 10
lab_run vgcreate vg-fast $B || exit 10
for vg in vg-hdd vg-fast; do
  # no initial sync: reads of data do not need the parity, and a resync
  # through the capped disk would take long
  lab_run lvcreate -y --type raid5 --stripes 5 --nosync --name tables -l 100%FREE $vg ||
    { lab_run lvcreate -y --type raid5 --stripes 5 --name tables -l 100%FREE $vg && lab_wait_sync $vg/tables; } || exit 11
done
lab_run lvs -a -o lv_name,segtype,stripes,sync_percent,devices
pids=""
rload() { # DEV N: N random 4 KiB O_DIRECT readers of DEV
  blocks=$(( $(blockdev --getsize64 $1) / 4096 ))
  i=0
  while [ $i -lt $2 ]; do
    (while :; do dd if=$1 of=/dev/null bs=4096 count=1 skip=$(( (RANDOM * 32768 + RANDOM) % blocks )) iflag=direct 2>/dev/null || exit; done) &
    pids="$pids $!"; i=$((i + 1))
  done
  sleep 5
}
rstop() { kill $pids 2>/dev/null; wait $pids 2>/dev/null; pids=""; }
check() { # NAME ARRAY: monitor check under the running load, text and JSON at once
  /usr/bin/tbhost monitor check --for 30s --interval 5s $2 > $LAB_OUT/$1.txt 2>&1 & ct=$!
  /usr/bin/tbhost --json monitor check --for 15s --interval 5s $2 > $LAB_OUT/$1.json 2>/dev/null & cj=$!
  wait $ct; echo $? > $LAB_OUT/$1.exit; wait $cj
  cat $LAB_OUT/$1.txt
}
observe() { # NAME ARRAY CAPTURE: check, capture and watch under the running load, all at once
  capture $3 & oc=$!
  /usr/bin/tbhost monitor watch --plain --interval 5s --count 2 $2 > /tmp/$1-watch.txt & ow=$!
  check $1 $2
  wait $oc $ow
  lab_out $1-watch.txt < /tmp/$1-watch.txt
}
capture() { # NAME: 7 samples of /proc/diskstats 5 s apart and a fixture tree (lab_capture)
  c=/tmp/cap/$1
  mkdir -p $c/proc
  k=0
  while [ $k -lt 7 ]; do
    cat /proc/diskstats > $c/proc/diskstats.$k
    k=$((k + 1)); [ $k -lt 7 ] && sleep 5
  done
  cp $c/proc/diskstats.6 $c/proc/diskstats
  lab_capture $c
}
for vg in vg-hdd vg-fast; do
  lab_step "$vg/tables under random reads"
  t0=$(cut -d' ' -f1 /proc/uptime)
  rload /dev/$vg/tables 8
  if [ $vg = vg-hdd ]; then observe $vg $vg/tables raid5-slow-member; else observe $vg $vg/tables raid5-slow-member-uncapped; fi
  rstop
  echo "lab: $vg load and checks took $t0 .. $(cut -d' ' -f1 /proc/uptime)s"
done
for vg in vg-hdd vg-fast; do
  lab_step "bench probe on ext4 on $vg/tables"
  # inode tables and journal written now, not by ext4lazyinit during the loads
  lab_run mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 /dev/$vg/tables || exit 20
  # noatime, as a tables server mounts them: the first reads must not write atimes
  mkdir -p /mnt/$vg && lab_run mount -o noatime /dev/$vg/tables /mnt/$vg || exit 21
  cp -r /lab/tables /mnt/$vg/ && sync || exit 22
  # few requests, no warm-up: the 1.7 MB of tables are cached after the first
  # requests, so the cold ones (from the disks) make the tail
  /usr/bin/tbhost --json bench probe --tables /mnt/$vg/tables --cache drop --advise random --clients 4 --requests 40 --warmup 0 > $LAB_OUT/$vg-bench.json 2>$LAB_OUT/$vg-bench.err; echo $? > $LAB_OUT/$vg-bench.exit
  /usr/bin/tbhost bench probe --tables /mnt/$vg/tables --cache drop --advise random --clients 4 --requests 40 --warmup 0 2>&1 | lab_out $vg-bench.txt
  cat $LAB_OUT/$vg-bench.txt
  umount /mnt/$vg
done
# one hot table on the array without a cap: a legitimate uneven load (issue
# 20: no member may be flagged slow). Four readers re-read KRvKN.rtbw (100048
# bytes, so 2 or 3 chunks of 64 KiB: 2 or 3 members) with 4 KiB O_DIRECT
# reads, over and over (the page cache never serves them); three random 4 KiB
# O_DIRECT readers of the whole LV are the light rest of the traffic, so the
# other members read too and the hot ones are judged against lightly loaded
# siblings (the load guard's case).
lab_step "one hot table on ext4 on vg-fast/tables"
lab_run mount -o noatime /dev/vg-fast/tables /mnt/vg-fast || exit 30
hot=/mnt/vg-fast/tables/KRvKN.rtbw
[ -f $hot ] || { echo "lab: $hot missing"; exit 31; }
t0=$(cut -d' ' -f1 /proc/uptime)
i=0
while [ $i -lt 4 ]; do
  (while :; do dd if=$hot of=/dev/null bs=4096 iflag=direct 2>/dev/null || exit; done) &
  pids="$pids $!"; i=$((i + 1))
done
rload /dev/vg-fast/tables 3
observe hot vg-fast/tables raid5-hot-table
rstop
echo "lab: hot table load and checks took $t0 .. $(cut -d' ' -f1 /proc/uptime)s"
umount /mnt/vg-fast
lab_tar captures.tgz /tmp/cap
exit 0
`

func TestMonitorSlowMemberScenario(t *testing.T) {
	hdd, err := Disks(HDD, 12, 64, "512n")
	if err != nil {
		t.Fatal(err)
	}
	hdd[2].ReadIOPS = 15 // hdd3: the fail-slow member of vg-hdd/tables
	files := map[string][]byte{}
	tables := realdata.Tables(t)
	entries, err := os.ReadDir(tables)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(tables, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files["/lab/tables/"+e.Name()] = b
	}
	r := boot(t, Config{Name: "slow", Disks: hdd, Script: []byte(slowScript), Files: files, Timeout: 35 * time.Minute})
	if r.ExitCode != 0 {
		t.Fatalf("scenario exit %d (log %s)", r.ExitCode, r.LogPath)
	}
	exit := func(n string) string { return strings.TrimSpace(string(r.Outputs[n+".exit"])) }
	for _, n := range []string{"vg-hdd", "vg-fast"} {
		t.Logf("monitor check (%s): exit %s\n%s\nwatch:\n%s\nbench probe:\n%s", n, exit(n), r.Outputs[n+".txt"], r.Outputs[n+"-watch.txt"], r.Outputs[n+"-bench.txt"])
	}
	slowID := fmt.Sprintf("wwn-0x%x", hdd[2].wwn())

	// the capped array: WARNING or CRITICAL, naming hdd3 and no other disk as slow
	if got := exit("vg-hdd"); got != "1" && got != "2" {
		t.Errorf("capped array: exit %s, want 1 or 2\n%s", got, r.Outputs["vg-hdd.txt"])
	}
	for _, n := range []string{"vg-hdd", "vg-fast"} {
		var doc checkJSON
		if err := json.Unmarshal(r.Outputs[n+".json"], &doc); err != nil || len(doc.Arrays) != 1 {
			t.Fatalf("%s.json: %v\n%s", n, err, r.Outputs[n+".json"])
		}
		var slow []string
		disk := ""
		for _, m := range doc.Arrays[0].Members {
			if m.Flag == "slow" {
				slow = append(slow, m.ID)
			}
			if m.ID == slowID {
				disk = m.Disk
			}
		}
		want := ""
		if n == "vg-hdd" {
			want = slowID
			first, _, _ := strings.Cut(strings.SplitN(string(r.Outputs[n+".txt"]), "\n", 2)[0], " | ")
			if disk == "" || !strings.Contains(first, disk+" ("+slowID+", serial HDD3") || !strings.Contains(first, "slow") ||
				!strings.Contains(first, "tbhost lvm replace vg-hdd/tables --old /dev/"+disk) {
				t.Errorf("summary %q must name %s (%s, serial HDD3) slow and the replace command", first, disk, slowID)
			}
		}
		if strings.Join(slow, ",") != want {
			t.Errorf("%s: slow members %v, want [%s]\n%s", n, slow, want, r.Outputs[n+".txt"])
		}
	}
	// the same array without the cap, same load: OK
	if got := exit("vg-fast"); got != "0" {
		t.Errorf("uncapped array: exit %s, want 0\n%s", got, r.Outputs["vg-fast.txt"])
	}

	// bench probe: worse p99 with the slow member, and its per-disk table points at it
	type benchJSON struct {
		Runs []struct {
			Latency struct {
				P99 float64 `json:"p99_ms"`
			} `json:"latency"`
			Disks []struct {
				Disk  string  `json:"disk"`
				Reads uint64  `json:"reads"`
				Ratio float64 `json:"await_ratio"`
				Slow  bool    `json:"slow"`
			} `json:"disks"`
		} `json:"runs"`
	}
	p99 := map[string]float64{}
	for _, n := range []string{"vg-hdd", "vg-fast"} {
		var b benchJSON
		if err := json.Unmarshal(r.Outputs[n+"-bench.json"], &b); err != nil || len(b.Runs) != 1 || exit(n+"-bench") != "0" {
			t.Fatalf("%s bench: exit %s %v\n%s\n%s", n, exit(n+"-bench"), err, r.Outputs[n+"-bench.json"], r.Outputs[n+"-bench.err"])
		}
		run := b.Runs[0]
		p99[n] = run.Latency.P99
		if len(run.Disks) != 6 {
			t.Errorf("%s bench: per-disk table of %d disks, want the 6 members: %+v", n, len(run.Disks), run.Disks)
		}
		var slow []string
		for _, d := range run.Disks {
			if d.Slow {
				slow = append(slow, d.Disk)
			}
		}
		want := 0
		if n == "vg-hdd" {
			want = 1
		}
		if len(slow) != want {
			t.Errorf("%s bench: slow disks %v, want %d\n%s", n, slow, want, r.Outputs[n+"-bench.txt"])
		}
		if n == "vg-hdd" && len(slow) == 1 && !strings.Contains(string(r.Outputs["vg-hdd.txt"]), slow[0]+" (") {
			t.Errorf("bench marks %s slow, monitor check named another disk", slow[0])
		}
	}
	if !(p99["vg-hdd"] > p99["vg-fast"]) {
		t.Errorf("p99 with the slow member %.1f ms, without %.1f ms: want worse with it", p99["vg-hdd"], p99["vg-fast"])
	}
	t.Logf("bench probe p99: %.1f ms with the capped member, %.1f ms without", p99["vg-hdd"], p99["vg-fast"])

	checkHotTable(t, r)

	// TBHOST_LAB_CAPTURE_SLOW=1: (re)write the three fixture trees captured
	// under load (testdata/captures/raid5-slow-member*.tar.gz and
	// raid5-hot-table.tar.gz; monitor's tests replay them); a comma list of
	// names writes only those
	want := os.Getenv("TBHOST_LAB_CAPTURE_SLOW")
	if want == "" {
		return
	}
	unpacked := t.TempDir()
	if err := ExtractTarGz(r.Outputs["captures.tgz"], unpacked); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"raid5-slow-member", "raid5-slow-member-uncapped", "raid5-hot-table"} {
		if want != "1" && !slices.Contains(strings.Split(want, ","), name) {
			continue
		}
		b, err := treearchive.Pack(filepath.Join(unpacked, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("testdata", "captures", name+".tar.gz"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote testdata/captures/%s.tar.gz (%d bytes)", name, len(b))
	}
}

// checkHotTable judges the hot-table phase (vg-fast/tables, no cap): one
// table file takes most of the reads, so 2 or 3 members are hot and the
// others light. Issue 20's acceptance: no member is flagged slow. The test
// also checks that the load really was uneven and above the slow
// judgement's traffic floor, else it would prove nothing.
func checkHotTable(t *testing.T, r *Result) {
	t.Helper()
	text := string(r.Outputs["hot.txt"])
	code := strings.TrimSpace(string(r.Outputs["hot.exit"]))
	t.Logf("monitor check (one hot table on vg-fast): exit %s\n%s\nwatch:\n%s", code, text, r.Outputs["hot-watch.txt"])
	var doc monitor.CheckJSON
	if err := json.Unmarshal(r.Outputs["hot.json"], &doc); err != nil || len(doc.Arrays) != 1 || len(doc.Arrays[0].Members) != 6 {
		t.Fatalf("hot.json: %v\n%s", err, r.Outputs["hot.json"])
	}
	ms := doc.Arrays[0].Members
	hottest := ms[0]
	for _, m := range ms {
		t.Logf("hot table (--json window): %s %s %.1f reads/s, share %.2f, r_await %.1f ms, %%util %.0f, aqu-sz %.2f, x_sib %.1f, flag %s",
			m.Disk, m.ID, m.ReadsPerS, m.Share, m.RAwaitMS, m.UtilPercent, m.QueueSize, m.AwaitRatio, m.Flag)
		if m.ReadsPerS > hottest.ReadsPerS {
			hottest = m
		}
	}
	// the load was uneven: the hot members, those that read at least twice
	// the least-read one, are 1 to 3 (a 100 KB file spans at most 3 chunks
	// of 64 KiB) and together took 2/3 of the reads (a balanced load: none
	// is hot; any 3 members take 1/2)
	floor := monitor.DefaultThresholds().SlowMinIOPS
	lowest := hottest.ReadsPerS
	for _, m := range ms {
		lowest = min(lowest, m.ReadsPerS)
	}
	var hot []string
	hotShare, lightJudged := 0.0, 0
	for _, m := range ms {
		switch {
		case m.ReadsPerS >= 2*lowest:
			hot = append(hot, m.Disk)
			hotShare += m.Share
			// judged in the slow rule with a margin: twice its floor
			if m.ReadsPerS < 2*floor {
				t.Errorf("hot member %s read %.1f reads/s, under twice the slow judgement's floor (%g): the test proves nothing", m.Disk, m.ReadsPerS, floor)
			}
		case m.ReadsPerS >= floor:
			lightJudged++
		}
		if m.Flag == monitor.FlagSlow {
			t.Errorf("hot table: %s flagged slow (a legitimately hot member is no fail-slow disk)\n%s", m.Disk, text)
		}
	}
	if len(hot) == 0 || len(hot) > 3 || hotShare < 2.0/3 {
		t.Errorf("the load was not uneven: %d hot members %v with %.0f%% of the reads, want 1 to 3 with 2/3", len(hot), hot, 100*hotShare)
	}
	// the hot members were judged against light siblings that read above
	// the floor too (the load guard's case), not only against each other
	if lightJudged == 0 {
		t.Errorf("no light member read the slow judgement's floor (%g reads/s): the hot ones were not compared with light siblings", floor)
	}
	t.Logf("hot table: hot members %v with %.0f%% of the reads; %d light members above the %g reads/s floor", hot, 100*hotShare, lightJudged, floor)
	for _, p := range doc.Arrays[0].Problems {
		if strings.Contains(p, " slow: r_await") {
			t.Errorf("hot table: slow finding %q", p)
		}
	}
	// Exit 2, CRITICAL, from the read-rate skew rule, not from the slow
	// rule: the hottest member reads several times the members' mean for the
	// whole window (over 60 %: "over", CRITICAL). That is the rule's job and
	// right for a tables server: a 7-piece table is GBs striped in 64 KiB
	// chunks over every member, so even one hot table spreads its reads;
	// reads that stay on 2 or 3 members for the whole window come from a few
	// chunks the page cache should hold, or from a misbuilt layout, and the
	// rate rule cannot and need not tell which: it names the members and
	// the figures. What it must not do is accuse a disk: no "slow", no
	// "replace it".
	if code != "2" || doc.Status != "CRITICAL" {
		t.Errorf("hot table: exit %s, --json status %s, want 2 and CRITICAL (read-rate skew)\n%s", code, doc.Status, text)
	}
	// the summary line holds at most two findings (idle or under may come
	// first): the over finding is looked for in the whole output
	if !strings.HasPrefix(text, "CRITICAL: ") || !strings.Contains(text, "read more than the members' mean") ||
		strings.Contains(text, " slow: r_await") || strings.Contains(text, "tbhost lvm replace") {
		t.Errorf("hot table: want CRITICAL with the read-rate finding and no slow member or replace advice:\n%s", text)
	}
	if hottest.Flag != monitor.FlagOver {
		t.Errorf("hot table: the hottest member %s flagged %q, want %q", hottest.Disk, hottest.Flag, monitor.FlagOver)
	}
}
