//go:build lab

package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/treearchive"
)

// captureScript builds (b) raid5+integrity WITHOUT --stripes, then (a)
// raid5+integrity --stripes 5 over the six HDDs (raid0 over the two NVMe
// throughout), and captures a fixture tree of each under a read load.
const captureScript = `. /lab/lib.sh
HDDS=$(lab_disks hdd); NVMES=$(lab_disks nvme)
lab_step "PVs and VGs"
lab_run pvcreate -y $HDDS || exit 10
lab_run vgcreate vg-hdd $HDDS || exit 10
lab_run pvcreate -y $NVMES || exit 10
lab_run vgcreate vg-nvme $NVMES || exit 10
lab_run lvcreate -y --type raid0 --stripes 2 --name prefix -l 100%FREE vg-nvme || exit 11

lab_step "(b) raid5 + integrity WITHOUT --stripes"
lab_run lvcreate -y --type raid5 --raidintegrity y --raidintegrityblocksize 512 --name tables -l 60%FREE vg-hdd || exit 12
lab_wait_sync vg-hdd/tables || exit 13
lab_run lvs -a -o lv_name,segtype,stripes,data_stripes,lv_size,devices
c=/tmp/cap/raid5-no-stripes
lab_diskstats_under_load $c /dev/vg-hdd/tables 5
lab_capture $c
lab_stop_load
lab_run lvremove -y vg-hdd/tables || exit 14

lab_step "(a) raid5 + integrity --stripes 5"
pe=$(pvs --noheadings -o pv_pe_count $(echo $HDDS | cut -d' ' -f1) | tr -d ' ')
lab_run lvcreate -y --type raid5 --raidintegrity y --raidintegrityblocksize 512 --stripes 5 --name tables -l $((5 * (pe - 3))) vg-hdd || exit 15
lab_wait_sync vg-hdd/tables || exit 16
lab_run lvs -a -o lv_name,segtype,stripes,data_stripes,lv_size,devices
c=/tmp/cap/raid5-integrity-stripes5
lab_diskstats_under_load $c /dev/vg-hdd/tables 5
lab_capture $c
lab_stop_load
dd if=/dev/urandom of=/tmp/pat bs=1M count=64 2>/dev/null
dd if=/tmp/pat of=/dev/vg-hdd/tables bs=1M oflag=direct conv=fsync 2>/dev/null || exit 17
md5sum < /tmp/pat | cut -d' ' -f1 | lab_out pattern.md5
lab_tar captures.tgz /tmp/cap
`

// missingScript boots with one HDD gone: lvm2 2.03.16 refuses degraded
// activation of raid with integrity, and the capture records that state.
const missingScript = `. /lab/lib.sh
lab_step "one member missing at boot"
lab_run vgchange -ay --activationmode degraded vg-hdd | tee /tmp/vgchange.txt
lab_run vgchange -ay vg-nvme
lab_run lvs -a -o lv_name,lv_attr,lv_health_status,devices
c=/tmp/cap/raid5-missing-member-boot
lab_capture $c
cp /tmp/vgchange.txt $c/lvm/vgchange-degraded.txt
lab_tar captures.tgz /tmp/cap
`

// droppedScript boots with all HDDs, starts a read load, then drops one
// HDD from the SCSI bus (as a dying disk does) and captures the degraded
// but running array; the data must still read back correctly.
const droppedScript = `. /lab/lib.sh
lab_step "member dropped while running"
lab_run vgchange -ay vg-hdd || exit 20
lab_run vgchange -ay vg-nvme
c=/tmp/cap/raid5-member-dropped
d=$(lab_dev HDD3) || exit 21
echo "dropping HDD3 = $d"
(while :; do dd if=/dev/vg-hdd/tables of=/dev/null bs=1M iflag=direct 2>/dev/null || exit; done) &
load=$!
sleep 2
echo 1 > /sys/block/${d#/dev/}/device/delete
sleep 8
lab_run dmsetup status vg-hdd-tables
lab_diskstats_under_load $c /dev/vg-hdd/tables 5
lab_capture $c
lab_stop_load
kill $load 2>/dev/null; killall dd 2>/dev/null
lab_run lvs -a -o lv_name,lv_attr,lv_health_status,devices
dmesg | grep -iE 'md/raid|raid|integrity|sd ' | tail -40 > $c/dmesg.txt
dd if=/dev/vg-hdd/tables bs=1M count=64 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1 | lab_out readback.md5
lab_tar captures.tgz /tmp/cap
`

// TestCaptureFixtures regenerates internal/lab/testdata/captures (two
// boots, ~6 min). Run it on purpose: TBHOST_LAB_CAPTURE=1.
func TestCaptureFixtures(t *testing.T) {
	if os.Getenv("TBHOST_LAB_CAPTURE") == "" {
		t.Skip("regenerates testdata/captures; set TBHOST_LAB_CAPTURE=1 to run")
	}
	work := t.TempDir()
	if d := os.Getenv("TBHOST_LAB_KEEP"); d != "" {
		work = d
		if os.Getenv("TBHOST_LAB_CAPTURE_PHASES") == "" {
			os.RemoveAll(work) // a full capture starts from blank disks
		}
	}
	hdd, _ := Disks(HDD, 6, 256, "512n")
	nvme, _ := Disks(NVMe, 2, 128, "512n")
	disks := append(hdd, nvme...)
	phases := os.Getenv("TBHOST_LAB_CAPTURE_PHASES") // default: all
	want := func(p string) bool { return phases == "" || strings.Contains(phases, p) }
	var results []*Result
	images := map[string]string{}
	for _, d := range disks {
		images[d.Name] = filepath.Join(work, d.Name+".img")
	}
	pattern, _ := os.ReadFile(filepath.Join(work, "pattern.md5"))
	if want("arrays") {
		r1 := boot(t, Config{Name: "capture", WorkDir: work, Disks: disks, Script: []byte(captureScript), Timeout: 40 * time.Minute})
		if r1.ExitCode != 0 {
			t.Fatalf("capture scenario exit %d (log %s)", r1.ExitCode, r1.LogPath)
		}
		pattern = r1.Outputs["pattern.md5"]
		os.WriteFile(filepath.Join(work, "pattern.md5"), pattern, 0o644)
		results = append(results, r1)
	}
	if want("missing") {
		r2 := boot(t, Config{Name: "missing", WorkDir: work, Disks: Reuse(Without(disks, "hdd3"), images), Script: []byte(missingScript), Timeout: 20 * time.Minute})
		if r2.ExitCode != 0 {
			t.Fatalf("missing-member scenario exit %d (log %s)", r2.ExitCode, r2.LogPath)
		}
		results = append(results, r2)
	}
	if want("dropped") {
		r3 := boot(t, Config{Name: "dropped", WorkDir: work, Disks: Reuse(disks, images), Script: []byte(droppedScript), Timeout: 20 * time.Minute})
		if r3.ExitCode != 0 {
			t.Fatalf("dropped-member scenario exit %d (log %s)", r3.ExitCode, r3.LogPath)
		}
		if a, b := string(pattern), string(r3.Outputs["readback.md5"]); a == "" || a != b {
			t.Errorf("data written before the member dropped: md5 %q, read back %q", a, b)
		}
		results = append(results, r3)
	}
	// Each capture is committed once, as testdata/captures/NAME.tar.gz
	// (internal/treearchive: reproducible, symlinks kept).
	unpacked := t.TempDir()
	for _, r := range results {
		if err := ExtractTarGz(r.Outputs["captures.tgz"], unpacked); err != nil {
			t.Fatal(err)
		}
	}
	captures, err := os.ReadDir(unpacked)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range captures {
		b, err := treearchive.Pack(filepath.Join(unpacked, c.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("testdata", "captures", c.Name()+".tar.gz"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
