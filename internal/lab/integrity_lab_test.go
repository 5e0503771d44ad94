//go:build lab

package lab

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/lab/labrates"
)

// integrityScript (issue 6): raid5 + dm-integrity over six HDDs, data
// written; `integrity status` clean; a scrub killed with SIGKILL and rerun
// resumes from its checkpoint; then a few KiB on the disk under image 2 are
// overwritten inside that image's data area (LV deactivated, so the
// dm-integrity journal is flushed and nothing is cached), and `integrity
// scrub` must report that disk's image only, `integrity status` must exit 1
// naming the disk, and the LV must still read back the data written.
const integrityScript = `. /lab/lib.sh
HDDS=$(lab_disks hdd)
up() { cut -d' ' -f1 /proc/uptime; }
cpu() { head -1 /proc/stat >> $LAB_OUT/rates/$1.cpu; }
mkdir -p $LAB_OUT/rates
uname -r | lab_out rates/kernel
grep -c '^cpu[0-9]' /proc/stat | lab_out rates/vcpus
lab_step "raw rate of one HDD (dd, O_DIRECT, 64 MiB written then read back)"
d1=$(echo $HDDS | cut -d' ' -f1)
t0=$(up); dd if=/dev/zero of=$d1 bs=1M count=64 seek=64 oflag=direct conv=fsync 2>/dev/null || exit 9
t1=$(up); dd if=$d1 of=/dev/null bs=1M count=64 skip=64 iflag=direct 2>/dev/null || exit 9
t2=$(up); echo "$((64 << 20)) $t0 $t1 $t2" | lab_out rates/raw.times
# all six at once, as the sync and the scrub read them (32 MiB each)
for d in $HDDS; do dd if=/dev/zero of=$d bs=1M count=32 seek=64 oflag=direct conv=fsync 2>/dev/null; done
t0=$(up); for d in $HDDS; do dd if=$d of=/dev/null bs=1M count=32 skip=64 iflag=direct 2>/dev/null & done; wait
t1=$(up); echo "$((6 * 32 << 20)) $t0 $t1" | lab_out rates/raw-parallel.times
lab_step "raid5 + integrity --stripes 5"
lab_run pvcreate -y $HDDS || exit 10
lab_run vgcreate vg-hdd $HDDS || exit 10
pe=$(pvs --noheadings -o pv_pe_count $(echo $HDDS | cut -d' ' -f1) | tr -d ' ')
cpu sync; t0=$(up)
lab_run lvcreate -y --type raid5 --raidintegrity y --raidintegrityblocksize 512 --stripes 5 --name tables -l $((5 * (pe - 3))) vg-hdd || exit 11
t1=$(up)
lab_wait_sync vg-hdd/tables || exit 12
t2=$(up); cpu sync; echo "$t0 $t1 $t2" | lab_out rates/sync.times
lvs -a --noheadings --units b --nosuffix -o lv_size vg-hdd/tables_rimage_0_iorig | tr -d ' ' | lab_out rates/image.bytes
dd if=/dev/urandom of=/tmp/pat bs=1M count=48 2>/dev/null
dd if=/tmp/pat of=/dev/vg-hdd/tables bs=1M oflag=direct conv=fsync 2>/dev/null || exit 13
md5sum < /tmp/pat | cut -d' ' -f1 | lab_out pattern.md5

lab_step "status on the clean array"
tbhost integrity status --json vg-hdd/tables > /tmp/o.json; echo $? | lab_out status-clean.rc
lab_out status-clean.json < /tmp/o.json

lab_step "scrub killed with SIGKILL, then rerun"
tbhost integrity scrub --rate 16MiB/s --state /tmp/scrub.json vg-hdd/tables > /tmp/killed.out 2>&1 &
pid=$!
i=0
while [ $i -lt 120 ] && ! grep -q '"offset": [1-9]' /tmp/scrub.json 2>/dev/null; do sleep 1; i=$((i+1)); done
sleep 3
kill -9 $pid; wait $pid 2>/dev/null
lab_out killed-state.json < /tmp/scrub.json
lab_out killed.out < /tmp/killed.out
tbhost integrity scrub --json --rate 0 --state /tmp/scrub.json vg-hdd/tables > /tmp/o.json 2>/tmp/e.txt; echo $? | lab_out scrub-resumed.rc
lab_out scrub-resumed.json < /tmp/o.json; lab_out scrub-resumed.err < /tmp/e.txt

lab_step "corrupt 8 KiB on the disk under tables_rimage_2 (LV inactive)"
seg=$(lvs -a --noheadings -o devices vg-hdd/tables_rimage_2_iorig | tr -d ' ')
disk=${seg%%(*}; ext=${seg#*(}; ext=${ext%)}
pestart=$(pvs --noheadings --units b --nosuffix -o pe_start $disk | tr -d ' ')
extsz=$(vgs --noheadings --units b --nosuffix -o vg_extent_size vg-hdd | tr -d ' ')
# image offset 1 MiB: stripe 16 of 64 KiB chunks, whose parity is on image 1: image 2 holds data there
off=$((pestart + ext * extsz + 1048576))
echo "$disk $off" | lab_out corrupt.txt
lab_run lvchange -an vg-hdd/tables || exit 20
lab_run dd if=/dev/urandom of=$disk bs=4096 seek=$((off / 4096)) count=2 conv=notrunc,fsync || exit 21
lab_run lvchange -ay vg-hdd/tables || exit 22
tbhost integrity status vg-hdd/tables > /tmp/o.txt; echo $? | lab_out status-corrupt-unread.rc

lab_step "scrub finds it"
tbhost integrity scrub --json --rate 0 --state /tmp/scrub.json vg-hdd/tables > /tmp/o.json 2>/tmp/e.txt; echo $? | lab_out scrub-corrupt.rc
lab_out scrub-corrupt.json < /tmp/o.json; lab_out scrub-corrupt.err < /tmp/e.txt
tbhost integrity status vg-hdd/tables > /tmp/o.txt; echo $? | lab_out status-after.rc
lab_out status-after.txt < /tmp/o.txt
dd if=/dev/vg-hdd/tables bs=1M count=48 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1 | lab_out readback.md5

lab_step "a second scrub pass: the repaired blocks read clean"
cpu scrub
tbhost integrity scrub --json --rate 0 --state /tmp/scrub.json vg-hdd/tables > /tmp/o.json 2>/tmp/e.txt; echo $? | lab_out scrub-again.rc
cpu scrub
lab_out scrub-again.json < /tmp/o.json
dmesg | grep -iE 'integrity|raid|md/' | tail -40 | lab_out dmesg.txt

lab_step "syncaction check capped and stopped by its budget under a read load"
# tbhost must stop its check (dm-raid's idle message) before it puts the
# LV's own rate back: that lvchange is a table reload, and one during a
# check ends it and can hang the 6.1 kernel (TestReloadDuringSync)
lab_run lvchange --maxrecoveryrate 4096 vg-hdd/tables || exit 40
(while :; do dd if=/dev/vg-hdd/tables of=/dev/null bs=1M count=256 iflag=direct 2>/dev/null || exit; done) & lp=$!
tbhost integrity scrub --json --syncaction --maxrecoveryrate 2MiB/s --budget 8s vg-hdd/tables > /tmp/o.json 2>/tmp/e.txt; echo $? | lab_out syncaction-budget.rc
lab_out syncaction-budget.json < /tmp/o.json; lab_out syncaction-budget.err < /tmp/e.txt
lvs --noheadings -o raid_sync_action,raid_max_recovery_rate vg-hdd/tables | tr -s ' ' | sed 's/^ //' | lab_out syncaction-after.txt
# a capped run killed with SIGKILL cannot put the rate back: the next run must
tbhost integrity scrub --syncaction --maxrecoveryrate 2MiB/s vg-hdd/tables > /tmp/k.txt 2>&1 & kp=$!
i=0; while [ $i -lt 60 ] && ! grep -q 'check' /tmp/k.txt 2>/dev/null; do sleep 1; i=$((i+1)); done
sleep 2; kill -9 $kp; wait $kp 2>/dev/null
lvs --noheadings -o raid_sync_action,raid_max_recovery_rate vg-hdd/tables | tr -s ' ' | sed 's/^ //' | lab_out syncaction-killed.txt
tbhost integrity scrub --json --syncaction --budget 8s vg-hdd/tables > /tmp/o.json 2>/tmp/e.txt; echo $? | lab_out syncaction-after-kill.rc
lab_out syncaction-after-kill.json < /tmp/o.json; lab_out syncaction-after-kill.err < /tmp/e.txt
lvs --noheadings -o raid_max_recovery_rate vg-hdd/tables | tr -d ' ' | lab_out syncaction-after-kill-rate.txt
ls /var/lib/tbhost/ | lab_out syncaction-state-files.txt
kill $lp; wait $lp 2>/dev/null
dmsetup message vg--hdd-tables 0 idle
lab_wait_idle vg-hdd/tables 60
lab_run lvchange --maxrecoveryrate 0 vg-hdd/tables || exit 41

lab_step "prefix extract rate: ext4 on the array, 36 MB synthetic set, caches dropped"
if ls /synth/* >/dev/null 2>&1; then
  /sbin/mke2fs -t ext4 -q -F /dev/vg-hdd/tables || exit 30
  mkdir -p /mnt/t /mnt/store
  mount -t ext4 /dev/vg-hdd/tables /mnt/t || exit 31
  mount -t tmpfs -o size=256m tbstore /mnt/store || exit 32
  cp /synth/* /mnt/t/ && sync
  echo 3 > /proc/sys/vm/drop_caches
  cpu extract
  tbhost prefix extract --json --tables /mnt/t --store /mnt/store > /tmp/x.json 2>/tmp/x.err; echo $? | lab_out rates/extract.rc
  cpu extract
  lab_out rates/extract.json < /tmp/x.json; lab_out rates/extract.err < /tmp/x.err
  umount /mnt/store; umount /mnt/t
fi
exit 0
`

type labScrubReport struct {
	Result struct {
		Pass          int
		PassCompleted bool `json:"pass_completed"`
		Images        []struct {
			Name      string
			Disks     []string
			Start     int64   `json:"start_offset"`
			BytesRead int64   `json:"bytes_read"`
			BadBlocks []int64 `json:"bad_blocks"`
		}
	}
	Images []struct {
		Name      string
		Disks     []string
		Before    int64 `json:"mismatches_before"`
		After     int64 `json:"mismatches_after"`
		BadBlocks int   `json:"unreadable_blocks"`
	}
	BadBlocks []struct {
		Image    string
		Repaired bool
		Parity   bool
		Note     string
	} `json:"bad_blocks"`
	KernelLog []string `json:"kernel_log"`
	Problems  []string
}

// The same boot measures the rates of issue 15 (raw disk, initial sync
// with integrity, an uncapped scrub pass, a prefix extract): subtest
// "rates" writes lab-results.json ($TBHOST_LAB_RESULTS or the test's temp
// dir) and fails when internal/timeline, fed the raw disk rate, predicts
// a disk-bound step outside a factor of 2; steps bound by the guest's CPU
// (TCG) are recorded, not held to it (skip when none is disk-bound).
func TestLabIntegrityScrubCorruptDisk(t *testing.T) {
	hdd, _ := Disks(HDD, 6, 256, "512n")
	files := map[string][]byte{}
	if err := addSyntheticTables(files); err != nil {
		t.Fatal(err)
	}
	res := boot(t, Config{Name: "integrity", Disks: hdd, Script: []byte(integrityScript), Files: files, Timeout: 40 * time.Minute})
	t.Run("rates", func(t *testing.T) { checkRates(t, res) })
	out := func(n string) string { return strings.TrimSpace(string(res.Outputs[n])) }
	if res.ExitCode != 0 {
		t.Fatalf("scenario exit %d (log %s)", res.ExitCode, res.LogPath)
	}
	parse := func(n string) labScrubReport {
		var r labScrubReport
		if err := json.Unmarshal(res.Outputs[n], &r); err != nil {
			t.Fatalf("%s: %v\n%s\nstderr: %s", n, err, res.Outputs[n], res.Outputs[strings.TrimSuffix(n, ".json")+".err"])
		}
		return r
	}

	// status on a clean array exits 0
	if rc := out("status-clean.rc"); rc != "0" {
		t.Errorf("status on the clean array: exit %s\n%s", rc, out("status-clean.json"))
	}

	// killed and rerun: resumes from the checkpoint, not from zero
	resumed := parse("scrub-resumed.json")
	var fromCheckpoint int64
	for _, im := range resumed.Result.Images {
		fromCheckpoint += im.Start
	}
	if fromCheckpoint == 0 || !resumed.Result.PassCompleted || resumed.Result.Pass != 1 {
		t.Errorf("rerun after SIGKILL did not resume (sum of start offsets %d, pass %d complete %v)\nstate at kill: %s",
			fromCheckpoint, resumed.Result.Pass, resumed.Result.PassCompleted, out("killed-state.json"))
	}
	if rc := out("scrub-resumed.rc"); rc != "0" {
		t.Errorf("clean scrub exit %s: %v", rc, resumed.Problems)
	}

	// the corrupted disk's image, and only it
	f := strings.Fields(out("corrupt.txt"))
	if len(f) != 2 {
		t.Fatalf("corrupt.txt %q", out("corrupt.txt"))
	}
	disk := f[0]
	sc := parse("scrub-corrupt.json")
	if rc := out("scrub-corrupt.rc"); rc != "1" {
		t.Errorf("scrub after corruption: exit %s, want 1", rc)
	}
	if len(sc.Problems) == 0 {
		t.Errorf("scrub after corruption reported no problem")
	}
	for _, p := range sc.Problems {
		if !strings.Contains(p, "tables_rimage_2 on "+disk) {
			t.Errorf("problem not about tables_rimage_2 on %s: %q", disk, p)
		}
	}
	for _, im := range sc.Images {
		bad := im.BadBlocks > 0 || im.After > im.Before
		if bad != (im.Name == "tables_rimage_2") {
			t.Errorf("%s (%v): unreadable %d, mismatches %d -> %d", im.Name, im.Disks, im.BadBlocks, im.Before, im.After)
		}
	}
	repaired := 0
	for _, b := range sc.BadBlocks {
		if b.Repaired {
			repaired++
		} else if b.Note == "" {
			t.Errorf("bad block on %s neither repaired nor explained", b.Image)
		}
		if b.Parity || b.Image != "tables_rimage_2" {
			t.Errorf("bad block %+v: want data blocks of tables_rimage_2 (image offset 1 MiB holds data)", b)
		}
	}
	// each was read through the LV: md rebuilt it from parity and rewrote it
	if repaired == 0 {
		t.Errorf("none of %d bad blocks repaired by reading through the LV", len(sc.BadBlocks))
	}
	t.Logf("scrub after corruption: %d bad blocks, %d repaired through the LV; problems %q; kernel %q", len(sc.BadBlocks), repaired, sc.Problems, sc.KernelLog)

	// status after the corruption exits 1 naming the disk
	if rc := out("status-after.rc"); rc != "1" || !strings.Contains(out("status-after.txt"), disk) {
		t.Errorf("status after corruption: exit %s, want 1 naming %s:\n%s", rc, disk, out("status-after.txt"))
	}
	// the LV's data still reads back correctly
	if a, b := out("pattern.md5"), out("readback.md5"); a == "" || a != b {
		t.Errorf("LV read back md5 %q, written %q", b, a)
	}
	// after the repair reads and the read-back, a new pass finds nothing
	again := parse("scrub-again.json")
	n := 0
	for _, im := range again.Result.Images {
		n += len(im.BadBlocks)
	}
	if n != 0 {
		t.Errorf("second pass still finds %d unreadable blocks: %+v", n, again.Result.Images)
	}
	t.Logf("status before corruption was read: exit %s; dmesg:\n%s", out("status-corrupt-unread.rc"), out("dmesg.txt"))

	// a capped --syncaction check stopped by its budget: stopped, the
	// LV's own rate back, idle (not a reload during the check)
	var sa struct {
		Stopped      string     `json:"stopped"`
		CheckStopped bool       `json:"check_stopped"`
		Restored     bool       `json:"recovery_rate_restored"`
		Commands     [][]string `json:"commands"`
	}
	if err := json.Unmarshal(res.Outputs["syncaction-budget.json"], &sa); err != nil {
		t.Fatalf("syncaction-budget.json: %v\n%s", err, out("syncaction-budget.err"))
	}
	if rc := out("syncaction-budget.rc"); rc != "0" || sa.Stopped != "budget" || !sa.CheckStopped || !sa.Restored {
		t.Errorf("capped --syncaction --budget: exit %s, stopped %q, check_stopped %v, restored %v\n%s", rc, sa.Stopped, sa.CheckStopped, sa.Restored, out("syncaction-budget.json"))
	}
	if got := out("syncaction-after.txt"); got != "idle 4096" {
		t.Errorf("after the budget stop: sync action and rate %q, want \"idle 4096\"", got)
	}
	t.Logf("capped --syncaction --budget ran %q", sa.Commands)

	// the capped run killed with SIGKILL left the cap; the next run (no
	// cap of its own) put the LV's own rate back from the record
	if got := out("syncaction-killed.txt"); got != "check 2048" {
		t.Errorf("right after the SIGKILL: sync action and rate %q, want \"check 2048\" (the killed run's check at its cap)", got)
	}
	var ak struct {
		Restored bool     `json:"recovery_rate_restored"`
		Notes    []string `json:"notes"`
	}
	if err := json.Unmarshal(res.Outputs["syncaction-after-kill.json"], &ak); err != nil {
		t.Fatalf("syncaction-after-kill.json: %v\n%s", err, out("syncaction-after-kill.err"))
	}
	if rc, rate := out("syncaction-after-kill.rc"), out("syncaction-after-kill-rate.txt"); rc != "0" || rate != "4096" || !ak.Restored {
		t.Errorf("the run after the SIGKILL: exit %s, rate %s (want 4096, the LV's own), restored %v; notes %q", rc, rate, ak.Restored, ak.Notes)
	}
	if files := out("syncaction-state-files.txt"); strings.Contains(files, "syncaction-rate") {
		t.Errorf("the rate record is still there once the rate is back: %s", files)
	}
}

// checkRates builds the lab's measured rates from the boot's outputs,
// compares them with the timeline's forecast and writes lab-results.json.
func checkRates(t *testing.T, res *Result) {
	out := func(n string) string { return strings.TrimSpace(string(res.Outputs[n])) }
	floats := func(n string, want int) []float64 {
		f := strings.Fields(out(n))
		if len(f) != want {
			t.Fatalf("%s: %q, want %d numbers", n, out(n), want)
		}
		v := make([]float64, len(f))
		for i, x := range f {
			var err error
			if v[i], err = strconv.ParseFloat(x, 64); err != nil {
				t.Fatalf("%s: %v", n, err)
			}
		}
		return v
	}
	raw, sync, par := floats("rates/raw.times", 4), floats("rates/sync.times", 3), floats("rates/raw-parallel.times", 3)
	img, vcpus := floats("rates/image.bytes", 1), floats("rates/vcpus", 1)
	m := labrates.Measured{Date: time.Now().UTC().Format(time.RFC3339), Kernel: out("rates/kernel"), Host: "qemu TCG (software emulation), 6 x 256 MiB scsi-hd sparse images",
		HDDs: 6, DataStripes: 5, ImageBytes: int64(img[0]), VCPUs: int(vcpus[0]),
		RawBytes: int64(raw[0]), RawWriteSeconds: raw[2] - raw[1], RawReadSeconds: raw[3] - raw[2],
		RawParallelBytes: int64(par[0]), RawParallelSeconds: par[2] - par[1],
		LVCreateSeconds: sync[1] - sync[0], SyncSeconds: sync[2] - sync[0]}
	var scrub struct {
		Result struct {
			Bytes   int64   `json:"bytes_read"`
			Seconds float64 `json:"seconds"`
		}
	}
	if err := json.Unmarshal(res.Outputs["scrub-again.json"], &scrub); err != nil {
		t.Fatalf("scrub-again.json: %v", err)
	}
	m.ScrubBytes, m.ScrubSeconds = scrub.Result.Bytes, scrub.Result.Seconds
	var ex struct {
		BytesRead int64   `json:"bytes_read"`
		Seconds   float64 `json:"seconds"`
		Written   int     `json:"written"`
	}
	if rc := out("rates/extract.rc"); rc != "0" {
		t.Fatalf("prefix extract exit %q: %s", rc, out("rates/extract.err"))
	}
	if err := json.Unmarshal(res.Outputs["rates/extract.json"], &ex); err != nil {
		t.Fatalf("extract.json: %v", err)
	}
	m.ExtractBytes, m.ExtractSeconds, m.ExtractFiles = ex.BytesRead, ex.Seconds, ex.Written
	for _, c := range []struct {
		name string
		v    *float64
	}{{"sync", &m.SyncCPUBusy}, {"scrub", &m.ScrubCPUBusy}, {"extract", &m.ExtractCPUBusy}} {
		lines := strings.Split(out("rates/"+c.name+".cpu"), "\n")
		if len(lines) != 2 {
			t.Fatalf("rates/%s.cpu: %q, want /proc/stat's cpu line before and after", c.name, lines)
		}
		busy, err := labrates.CPUBusy(lines[0], lines[1])
		if err != nil {
			t.Fatalf("rates/%s.cpu: %v", c.name, err)
		}
		*c.v = busy
	}
	r, err := labrates.Compare(m)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(r, "", "  ")
	dir := os.Getenv("TBHOST_LAB_RESULTS")
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, "lab-results.json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	fmt.Fprintf(&table, "raw HDD read %.1f MiB/s (write %.1f MiB/s; all six at once %.1f MiB/s in total)\n", labrates.Rate(m.RawBytes, m.RawReadSeconds)/(1<<20),
		labrates.Rate(m.RawBytes, m.RawWriteSeconds)/(1<<20), labrates.Rate(m.RawParallelBytes, m.RawParallelSeconds)/(1<<20))
	for _, c := range r.Comparisons {
		fmt.Fprintf(&table, "%-15s measured %7.1fs predicted %7.1fs ratio %.2f within %v cpu %.0f%% applies %v\n", c.Name, c.MeasuredSeconds, c.PredictedSeconds, c.Ratio, c.Within, 100*c.CPUBusy, c.Applies)
	}
	t.Logf("lab-results.json at %s:\n%s%s", path, table.String(), b)
	if r.Checked == 0 {
		t.Skipf("SKIP the 2x check: no step was in the regime the timeline models (bound by the guest's CPU at >= %.0f %% busy: TCG emulates the checksums and the parity; or an extract of less than %d bytes a file); the measurements are in %s", 100*labrates.CPUBoundAt(m.VCPUs), labrates.MinPrefixPerFile, path)
	}
	for _, c := range r.Comparisons {
		if c.Applies && !c.Within {
			t.Errorf("%s: the timeline predicts %.1fs, the lab measured %.1fs (ratio %.2f, outside %gx)", c.Name, c.PredictedSeconds, c.MeasuredSeconds, c.Ratio, labrates.Factor)
		}
	}
}
