package integrity

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/fixturetree"
	"github.com/tbhost/tbhost/internal/smallfs"
	"github.com/tbhost/tbhost/lvm"
	"github.com/tbhost/tbhost/lvm/lvmfake"
)

func TestDMName(t *testing.T) {
	for in, want := range map[[2]string]string{
		{"vg-hdd", "tables_rimage_0"}: "vg--hdd-tables_rimage_0",
		{"vg", "my-lv"}:               "vg-my--lv",
		{"a--b", "c"}:                 "a----b-c",
	} {
		if got := DMName(in[0], in[1]); got != want {
			t.Errorf("%v: %q, want %q", in, got, want)
		}
	}
}

// fakeRoot makes <root>/dev/mapper/* regular files for the images and the top LV.
func fakeRoot(t *testing.T, imageSize int64) string {
	t.Helper()
	root := t.TempDir()
	m := filepath.Join(root, "dev/mapper")
	os.MkdirAll(m, 0o755)
	for i := 0; i < 6; i++ {
		b := make([]byte, imageSize)
		for j := range b {
			b[j] = byte(i + j)
		}
		os.WriteFile(filepath.Join(m, fmt.Sprintf("vg--hdd-tables_rimage_%d", i)), b, 0o644)
	}
	os.WriteFile(filepath.Join(m, "vg--hdd-tables"), make([]byte, imageSize*5), 0o644)
	return root
}

func TestPlanLVScrubFindsImageDevicesAndDisks(t *testing.T) {
	all := fixtureLVs(t, "lvs-a-2.03.16-tables-clean.json")
	root := fakeRoot(t, 1<<20)
	p, err := PlanLVScrub(all, "vg-hdd", "tables", root)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Targets) != 6 || p.BlockSize != 512 || p.Stripes != 6 || p.Data != 5 || p.Chunk != 65536 {
		t.Fatalf("%+v", p)
	}
	if want := filepath.Join(root, "dev/mapper/vg--hdd-tables_rimage_3"); p.Targets[3].Path != want || p.Targets[3].Disks[0] != "/dev/sdd" {
		t.Fatalf("target 3: %+v", p.Targets[3])
	}
	// an image device missing: a clear error with the fix
	os.Remove(p.Targets[4].Path)
	if _, err := PlanLVScrub(all, "vg-hdd", "tables", root); err == nil || !strings.Contains(err.Error(), "lvchange -ay vg-hdd/tables") {
		t.Fatalf("want an error naming the device and the fix, got %v", err)
	}
	if _, err := PlanLVScrub(all, "vg-hdd", "nope", root); err == nil {
		t.Fatal("unknown LV must fail")
	}
}

func TestPlanLVScrubRefusesImagesWithoutIntegrity(t *testing.T) {
	all := fixtureLVs(t, "lvs-a-2.03.16-tables-clean.json")
	for i := range all {
		if all[i].Name == "tables_rimage_1" {
			all[i].Segments[0].Type = "linear"
		}
	}
	if _, err := PlanLVScrub(all, "vg-hdd", "tables", fakeRoot(t, 4096)); err == nil || !strings.Contains(err.Error(), "--syncaction") {
		t.Fatalf("got %v", err)
	}
}

// forwardRaid5LS is md's raid5_compute_sector for ALGORITHM_LEFT_SYMMETRIC:
// LV offset -> (device, device offset).
func forwardRaid5LS(lvOff, chunk int64, n int) (int, int64) {
	c := lvOff / chunk
	stripe := c / int64(n-1)
	dd := c % int64(n-1)
	pd := int64(n-1) - stripe%int64(n)
	return int((pd + 1 + dd) % int64(n)), stripe*chunk + lvOff%chunk
}

func TestMapToLVInvertsRaid5LeftSymmetric(t *testing.T) {
	const chunk, n = 65536, 6
	p := LVScrubPlan{SegType: "raid5", Stripes: n, Data: n - 1, Chunk: chunk, ImageSize: 40 * chunk, LVSize: 40 * chunk * (n - 1)}
	parity := map[int64]int{}
	for lv := int64(0); lv < p.LVSize; lv += 4096 {
		d, off := forwardRaid5LS(lv, chunk, n)
		got, isParity, ok := p.MapToLV(d, off)
		if !ok || isParity || got != lv {
			t.Fatalf("LV %d -> disk %d off %d -> back %d (parity %v ok %v)", lv, d, off, got, isParity, ok)
		}
	}
	for d := 0; d < n; d++ {
		for stripe := int64(0); stripe < 40; stripe++ {
			if _, isParity, _ := p.MapToLV(d, stripe*chunk); isParity {
				parity[stripe]++
			}
		}
	}
	for stripe, k := range parity {
		if k != 1 {
			t.Fatalf("stripe %d has %d parity chunks", stripe, k)
		}
	}
	if len(parity) != 40 {
		t.Fatalf("%d stripes with parity", len(parity))
	}
	// reshape space (LV smaller than data x image): refuse to guess
	p.LVSize -= chunk
	if _, _, ok := p.MapToLV(0, 0); ok {
		t.Fatal("odd geometry must not be mapped")
	}
	if _, _, ok := (LVScrubPlan{SegType: "raid6"}).MapToLV(0, 0); ok {
		t.Fatal("raid6 is not mapped")
	}
}

func recordLVS(rec *execx.Recorded, t *testing.T, fixture, name string) {
	b, err := os.ReadFile("testdata/" + fixture)
	if err != nil {
		t.Fatal(err)
	}
	rec.On(execx.Reply{Stdout: string(b)}, lvm.LVsArgv(name)...)
}

func TestScrubLVReportsTheCorruptDiskOnly(t *testing.T) {
	root := fakeRoot(t, 2<<20)
	rec := execx.NewRecorded()
	recordLVS(rec, t, "lvs-a-2.03.16-tables-clean.json", "vg-hdd")
	recordLVS(rec, t, "lvs-a-2.03.16-tables-mismatch-sdc.json", "vg-hdd")
	rec.On(execx.Reply{Stdout: "[    1.0] boot\n"}, "dmesg")
	rec.On(execx.Reply{Stdout: "[    1.0] boot\n[   99.1] device-mapper: integrity: dm-11: Checksum failed at sector 0x2800\n[   99.2] unrelated line\n"}, "dmesg")
	bad := []int64{1<<20 + 512}
	so := ScrubOptions{Chunk: 1 << 20, Direct: true}
	so.open = func(p string, direct bool) (blockReader, bool, string, error) {
		f, err := os.Open(p)
		if err != nil {
			return nil, false, "", err
		}
		if strings.HasSuffix(p, "_rimage_2") {
			return flakyFile{f, bad, 512}, false, "", nil
		}
		return f, false, "", nil
	}
	rep, err := ScrubLV(context.Background(), LVScrubOptions{VG: "vg-hdd", LV: "tables", Root: root, Runner: rec, Scrub: so, RepairReads: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Result.PassCompleted || len(rep.Images) != 6 {
		t.Fatalf("%+v", rep.Result)
	}
	if len(rep.Problems) != 2 {
		t.Fatalf("want 2 problems about image 2 (bad blocks, counter 0 -> 5), got %q", rep.Problems)
	}
	for _, p := range rep.Problems {
		if !strings.Contains(p, "tables_rimage_2 on /dev/sdc") {
			t.Errorf("problem %q does not name image 2 and /dev/sdc", p)
		}
	}
	if c := rep.Images[2]; c.Before != 0 || c.After != 5 || c.BadBlocks != 1 {
		t.Errorf("image 2 counters %+v", c)
	}
	if len(rep.BadBlocks) != 1 || rep.BadBlocks[0].ImageOffset != 1<<20+512 || rep.BadBlocks[0].Disks[0] != "/dev/sdc" {
		t.Fatalf("bad blocks %+v", rep.BadBlocks)
	}
	// image 2, offset 1 MiB + 512 = stripe 16: parity on disk 5-(16%6)=1, so image 2 holds data
	b := rep.BadBlocks[0]
	if b.Parity || b.LVOffset < 0 || !b.Repaired {
		t.Errorf("repair read: %+v", b)
	}
	if len(rep.KernelLines) != 1 || !strings.Contains(rep.KernelLines[0], "dm-11: Checksum failed") {
		t.Errorf("kernel lines %q", rep.KernelLines)
	}
}

// The state file's file system fills up while the scrub reads (/var full
// in the night): the scrub finds a bad block all the same. Its findings
// must not be dropped for the state's error: the bad block is read through
// the LV and reported beside the error (which names the state file and
// says what to do), not just "no space left on device".
func TestScrubLVOnAFullStateDiskStillReportsItsFindings(t *testing.T) {
	root := fakeRoot(t, 2<<20)
	stateDir := smallfs.Mount(t, "64k", "a full /var")
	state := filepath.Join(stateDir, "scrub.json")
	rec := execx.NewRecorded()
	recordLVS(rec, t, "lvs-a-2.03.16-tables-clean.json", "vg-hdd")
	recordLVS(rec, t, "lvs-a-2.03.16-tables-mismatch-sdc.json", "vg-hdd")
	rec.On(execx.Reply{Stdout: "[    1.0] boot\n"}, "dmesg")
	rec.On(execx.Reply{Stdout: "[    1.0] boot\n"}, "dmesg")
	bad := []int64{1<<20 + 512}
	so := ScrubOptions{Chunk: 1 << 20, Direct: true, StatePath: state, Identity: "u"}
	filled := false
	so.open = func(p string, direct bool) (blockReader, bool, string, error) {
		if !filled { // after the first checkpoint: the file system fills up
			filled = true
			os.WriteFile(filepath.Join(stateDir, "filler"), make([]byte, 1<<20), 0o644)
		}
		f, err := os.Open(p)
		if err != nil {
			return nil, false, "", err
		}
		if strings.HasSuffix(p, "_rimage_2") {
			return flakyFile{f, bad, 512}, false, "", nil
		}
		return f, false, "", nil
	}
	rep, err := ScrubLV(context.Background(), LVScrubOptions{VG: "vg-hdd", LV: "tables", Root: root, Runner: rec, Scrub: so, RepairReads: true})
	if !errors.Is(err, ErrStateNotWritten) || !strings.Contains(err.Error(), state) || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("scrub with its state on a full disk: %v; want ErrStateNotWritten naming the state file", err)
	}
	if len(rep.BadBlocks) != 1 || !rep.BadBlocks[0].Repaired || len(rep.Problems) == 0 || len(rep.Images) != 6 {
		t.Fatalf("report beside the state's error: bad blocks %+v, problems %q, %d images; want the bad block repaired and reported", rep.BadBlocks, rep.Problems, len(rep.Images))
	}
}

func TestSyncCheckDrivesLVChangeAndWaits(t *testing.T) {
	rec := execx.NewRecorded()
	recordLVS(rec, t, "lvs-a-2.03.16-tables-clean.json", "vg-hdd")
	recordLVS(rec, t, "lvs-a-2.03.16-tables-check-running.json", "vg-hdd")
	recordLVS(rec, t, "lvs-a-2.03.16-tables-check-running.json", "vg-hdd")
	recordLVS(rec, t, "lvs-a-2.03.16-tables-mismatch-sdc.json", "vg-hdd")
	rec.On(execx.Reply{Stdout: `{"report":[{"lv":[{"raid_max_recovery_rate":"0"}]}]}`}, lvm.MaxRecoveryRateArgv("vg-hdd", "tables")...)
	rec.On(execx.Reply{}, "lvm", "lvchange", "--maxrecoveryrate", "51200", "vg-hdd/tables")
	rec.On(execx.Reply{}, "lvm", "lvchange", "--maxrecoveryrate", "0", "vg-hdd/tables")
	rec.On(execx.Reply{}, "lvm", "lvchange", "--syncaction", "check", "vg-hdd/tables")
	clk := newFakeClock()
	var seen []string
	rep, err := SyncCheck(context.Background(), SyncCheckOptions{VG: "vg-hdd", LV: "tables", Runner: rec, MaxRecoveryRate: 50 << 20,
		Clock: clk, Poll: 10 * time.Second, Progress: func(a string, p float64) { seen = append(seen, fmt.Sprintf("%s %.1f", a, p)) }})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Finished || strings.Join(seen, ",") != "check 42.5,check 42.5,idle 100.0" {
		t.Fatalf("finished %v progress %q", rep.Finished, seen)
	}
	for _, c := range rec.Calls {
		if strings.Contains(strings.Join(c, " "), "repair") {
			t.Fatalf("ran %q: never repair", c)
		}
	}
	if len(rep.Commands) != 3 || rep.Commands[1][2] != "--syncaction" || !rep.RecoveryRateRestored {
		t.Fatalf("commands %q", rep.Commands)
	}
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "tables_rimage_2 on /dev/sdc: integrity mismatches 0 -> 5") {
		t.Fatalf("problems %q", rep.Problems)
	}
}

func TestSyncCheckRefusesWhileSyncing(t *testing.T) {
	b, _ := os.ReadFile("testdata/lvs-a-2.03.16-tables-clean.json")
	resync := strings.Replace(string(b), `"sync_percent":"100.00", "raid_sync_action":"idle"`, `"sync_percent":"12.00", "raid_sync_action":"recover"`, 1)
	if resync == string(b) {
		t.Fatal("fixture edit did not apply")
	}
	rec := execx.NewRecorded().On(execx.Reply{Stdout: resync}, lvm.LVsArgv("vg-hdd")...)
	_, err := SyncCheck(context.Background(), SyncCheckOptions{VG: "vg-hdd", LV: "tables", Runner: rec, Clock: newFakeClock()})
	if err == nil || !strings.Contains(err.Error(), `"recover" is running`) {
		t.Fatalf("got %v", err)
	}
	if len(rec.Calls) != 1 {
		t.Fatalf("ran %q after refusing", rec.Calls)
	}
}

// A member dropped while the array runs (the lab's real capture: attr
// rwi-aor-p-, health partial): the scrub refuses instead of reading every
// block of the dead image as an I/O error.
func TestPlanLVScrubRefusesDegradedArray(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(fixturetree.Dir(t, "../internal/lab/testdata/captures/raid5-member-dropped.tar.gz"), "lvm", "lvs.json"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := lvm.ParseReport(b, "lv")
	if err != nil {
		t.Fatal(err)
	}
	all, err := lvm.ParseLVRows(rows)
	if err != nil {
		t.Fatal(err)
	}
	_, err = PlanLVScrub(all, "vg-hdd", "tables", fakeRoot(t, 4096))
	if !errors.Is(err, ErrDegraded) || !strings.Contains(err.Error(), "vg-hdd/tables") {
		t.Fatalf("want ErrDegraded naming the LV, got %v", err)
	}
	// the same array before the drop is scrubbed
	if _, err := PlanLVScrub(fixtureLVs(t, "lvs-a-2.03.16-tables-clean.json"), "vg-hdd", "tables", fakeRoot(t, 4096)); errors.Is(err, ErrDegraded) {
		t.Fatalf("a healthy array refused as degraded: %v", err)
	}
}

// After the check lvs reports the array's raid_mismatch_count as "lots":
// read as -1 it passed as "no parity mismatch". It is a problem naming the
// LV and the value: the check cannot be judged from it.
func TestSyncCheckUnreadableCounterIsAProblem(t *testing.T) {
	rec := execx.NewRecorded()
	recordLVS(rec, t, "lvs-a-2.03.16-tables-clean.json", "vg-hdd")
	b, err := os.ReadFile("testdata/lvs-a-2.03.16-tables-clean.json")
	if err != nil {
		t.Fatal(err)
	}
	after, err := lvmfake.EditedReport(b, lvmfake.Edit{LV: "tables", Field: "raid_mismatch_count", Value: "lots"})
	if err != nil {
		t.Fatal(err)
	}
	rec.On(execx.Reply{Stdout: string(after)}, lvm.LVsArgv("vg-hdd")...)
	rec.On(execx.Reply{Stdout: `{"report":[{"lv":[{"raid_max_recovery_rate":"0"}]}]}`}, lvm.MaxRecoveryRateArgv("vg-hdd", "tables")...)
	rec.On(execx.Reply{}, "lvm", "lvchange", "--maxrecoveryrate", "51200", "vg-hdd/tables")
	rec.On(execx.Reply{}, "lvm", "lvchange", "--maxrecoveryrate", "0", "vg-hdd/tables")
	rec.On(execx.Reply{}, "lvm", "lvchange", "--syncaction", "check", "vg-hdd/tables")
	rep, err := SyncCheck(context.Background(), SyncCheckOptions{VG: "vg-hdd", LV: "tables", Runner: rec, MaxRecoveryRate: 50 << 20,
		Clock: newFakeClock(), Poll: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Finished || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], `vg-hdd/tables: lvs reported raid_mismatch_count="lots"`) {
		t.Fatalf("finished %v, problems %q; want the unreadable counter named", rep.Finished, rep.Problems)
	}
}

// An lvs report that leaves out an image the array names (tables_rimage_2
// and its sub-LVs cut from the clean capture): the scrub read the five
// images it saw and called the array scrubbed. It refuses, naming the image.
func TestPlanLVScrubRefusesReportWithoutAnImage(t *testing.T) {
	var cut []lvm.LV
	for _, lv := range fixtureLVs(t, "lvs-a-2.03.16-tables-clean.json") {
		if !strings.HasPrefix(lv.Name, "tables_rimage_2") && lv.Name != "tables_rmeta_2" {
			cut = append(cut, lv)
		}
	}
	_, err := PlanLVScrub(cut, "vg-hdd", "tables", fakeRoot(t, 4096))
	if err == nil || !strings.Contains(err.Error(), `vg-hdd/tables: the devices column of tables names "tables_rimage_2"`) || !strings.Contains(err.Error(), "not scrubbing") {
		t.Fatalf("want a refusal naming the left-out image, got %v", err)
	}
}
