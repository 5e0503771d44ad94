//go:build lab

package lab

import (
	"os"
	"path/filepath"
	"testing"
	"time"
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

// missingScript activates vg-hdd with one HDD gone and captures it.
const missingScript = `. /lab/lib.sh
lab_step "one member missing"
lab_run vgchange -ay --activationmode degraded vg-hdd
lab_run vgchange -ay vg-nvme
lab_run lvs -a -o lv_name,lv_attr,lv_health_status,devices
c=/tmp/cap/raid5-missing-member
lab_diskstats_under_load $c /dev/vg-hdd/tables 5
lab_capture $c
lab_stop_load
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
		os.RemoveAll(work)
	}
	hdd, _ := Disks(HDD, 6, 256, "512n")
	nvme, _ := Disks(NVMe, 2, 128, "512n")
	disks := append(hdd, nvme...)
	r1 := boot(t, Config{Name: "capture", WorkDir: work, Disks: disks, Script: []byte(captureScript), Timeout: 40 * time.Minute})
	if r1.ExitCode != 0 {
		t.Fatalf("capture scenario exit %d (log %s)", r1.ExitCode, r1.LogPath)
	}
	var again []Disk
	for _, d := range Without(disks, "hdd3") {
		d.Image = r1.Images[d.Name]
		again = append(again, d)
	}
	r2 := boot(t, Config{Name: "missing", WorkDir: work, Disks: again, Script: []byte(missingScript), Timeout: 20 * time.Minute})
	if r2.ExitCode != 0 {
		t.Fatalf("missing-member scenario exit %d (log %s)", r2.ExitCode, r2.LogPath)
	}
	if a, b := string(r1.Outputs["pattern.md5"]), string(r2.Outputs["readback.md5"]); a == "" || a != b {
		t.Errorf("data written before the member went missing: md5 %q, read back %q", a, b)
	}
	dst := filepath.Join("testdata", "captures")
	for _, r := range []*Result{r1, r2} {
		if err := ExtractTarGz(r.Outputs["captures.tgz"], dst); err != nil {
			t.Fatal(err)
		}
	}
}
