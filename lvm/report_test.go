package lvm

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/lvm/lvmfake"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parseLVs(t *testing.T, name string) []LV {
	t.Helper()
	rows, err := ParseReport(readFixture(t, name), "lv")
	if err != nil {
		t.Fatal(err)
	}
	lvs, err := ParseLVRows(rows)
	if err != nil {
		t.Fatal(err)
	}
	return lvs
}

func TestParse2_03_16RaidIntegrity(t *testing.T) {
	lvs := parseLVs(t, "lvs-a-2.03.16-raid5-integrity-raid0.json")
	if len(lvs) != 28 {
		t.Fatalf("got %d LVs, want 28", len(lvs))
	}
	top, ok := Find(lvs, "", "tables")
	if !ok {
		t.Fatal("tables not found")
	}
	if top.SegType() != "raid5" || top.Segments[0].Stripes != 6 || top.Hidden {
		t.Errorf("tables: %+v", top)
	}
	if top.IntegrityMode != "journal" || top.IntegrityBlockSize != 512 || top.IntegrityMismatches != 0 {
		t.Errorf("integrity fields: %+v", top)
	}
	images := SubLVs(lvs, top, "rimage")
	if len(images) != 6 {
		t.Fatalf("images: %d", len(images))
	}
	wantDisks := []string{"/dev/sda", "/dev/sdb", "/dev/sdc", "/dev/sdd", "/dev/sde", "/dev/sdf"}
	for i, img := range images {
		if !img.Hidden || img.SegType() != "integrity" {
			t.Errorf("image %d: %+v", i, img)
		}
		// the image's data and its integrity metadata both sit on one disk
		if got := PhysicalDevices(lvs, img); !reflect.DeepEqual(got, []string{wantDisks[i]}) {
			t.Errorf("image %d on %v, want %s", i, got, wantDisks[i])
		}
	}
	if n := len(SubLVs(lvs, top, "rmeta")); n != 6 {
		t.Errorf("rmeta: %d", n)
	}
	imeta, _ := Find(lvs, "", "tables_rimage_0_imeta")
	if imeta.IntegrityMismatches != -1 || imeta.IntegrityBlockSize != -1 {
		t.Errorf("a linear sub-LV has no integrity: %+v", imeta)
	}
	prefix, _ := Find(lvs, "", "prefix")
	if got := PhysicalDevices(lvs, prefix); !reflect.DeepEqual(got, []string{"/dev/nvme0n1", "/dev/nvme1n1"}) {
		t.Errorf("prefix on %v", got)
	}
}

func TestParseMultiSegmentImage(t *testing.T) {
	// raid5 without --stripes and -l 100%FREE: each image is two PVs concatenated.
	rows := []map[string]string{
		{"lv_name": "[probe_rimage_0]", "vg_name": "vg-hdd", "segtype": "linear", "devices": "/dev/sda(1)"},
		{"lv_name": "[probe_rimage_0]", "vg_name": "vg-hdd", "segtype": "linear", "devices": "/dev/sdd(0)"},
	}
	lvs, _ := ParseLVRows(rows)
	if len(lvs) != 1 || len(lvs[0].Segments) != 2 {
		t.Fatalf("%+v", lvs)
	}
	if got := PhysicalDevices(lvs, lvs[0]); !reflect.DeepEqual(got, []string{"/dev/sda", "/dev/sdd"}) {
		t.Errorf("got %v", got)
	}
}

func TestParseNoStripesShowsDataStripes(t *testing.T) {
	lvs := parseLVs(t, "lvs-2.03.16-raid5-no-stripes.json")
	if lvs[0].Segments[0].DataStripes != 2 || lvs[0].Segments[0].Stripes != 3 {
		t.Errorf("%+v", lvs[0].Segments[0])
	}
}

func TestParseTypedReportWithLogAndHealth(t *testing.T) {
	lvs := parseLVs(t, "lvs-2.03.26-typed-with-log.json")
	top, _ := Find(lvs, "vg-hdd", "tables")
	if top.Size != 1258291200 || top.Segments[0].DataStripes != 5 || top.IntegrityBlockSize != 4096 {
		t.Errorf("typed values: %+v", top)
	}
	if top.SyncPercent != 100 {
		t.Errorf("sync %v", top.SyncPercent)
	}
	probs := strings.Join(top.Problems(), "\n")
	for _, want := range []string{`health "mismatches exist"`, "mismatches exist", "3 integrity mismatches"} {
		if !strings.Contains(probs, want) {
			t.Errorf("problems %q lack %q", probs, want)
		}
	}
	img, _ := Find(lvs, "vg-hdd", "tables_rimage_2")
	if img.SyncPercent != -1 || img.IntegrityMismatches != 3 {
		t.Errorf("image: %+v", img)
	}
	odd, _ := Find(lvs, "vg-hdd", "odd")
	if p := odd.Problems(); len(p) != 1 || !strings.Contains(p[0], "unknown health value") {
		t.Errorf("an unknown health value must not be OK: %v", p)
	}
	healthy, _ := Find(lvs, "vg-hdd", "tables_rimage_2_iorig")
	if p := healthy.Problems(); len(p) != 0 {
		t.Errorf("healthy LV has problems %v", p)
	}
}

func TestClientRunsLVSWithJSONUnitsAndMapsNotFound(t *testing.T) {
	rec := execx.NewRecorded()
	argv := []string{"lvm", "lvs", "--reportformat", "json", "--units", "b", "--nosuffix", "-o", strings.Join(lvFields, ","), "-a", "vg-hdd"}
	if got := LVsArgv("vg-hdd"); !reflect.DeepEqual(got, argv) {
		t.Fatalf("LVsArgv %q", got)
	}
	rec.On(execx.Reply{Stdout: string(readFixture(t, "lvs-2.03.26-typed-with-log.json"))}, argv...)
	c := Client{Runner: rec}
	lvs, err := c.LVs(context.Background(), "vg-hdd")
	if err != nil || len(lvs) != 4 {
		t.Fatalf("%v %d", err, len(lvs))
	}
	missing := append(argv[:len(argv)-1:len(argv)-1], "vg-none")
	rec.On(execx.Reply{Stderr: `  Volume group "vg-none" not found`, ExitCode: 5}, missing...)
	_, err = c.LVs(context.Background(), "vg-none")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "vg-none") {
		t.Errorf("want ErrNotFound naming the VG, got %v", err)
	}
}

func TestParseReportRejectsGarbage(t *testing.T) {
	for _, in := range []string{"", "{}", "not json", `{"report": 3}`} {
		if _, err := ParseReport([]byte(in), "lv"); err == nil {
			t.Errorf("%q: want error", in)
		}
	}
}

// lvm2 2.03.16 run by a user other than root (recorded in the lab as
// nobody, exit 5): it warns, prints an empty report and cannot open its
// lock. The error says lvm needs root and how a monitoring user gets it,
// with the line that failed, not the 21 report fields.
func TestClientNamesANonRootRunAndTheFix(t *testing.T) {
	rec := execx.NewRecorded()
	rec.On(lvmfake.NonRootReply(), LVsArgv()...)
	_, err := Client{Runner: rec}.LVs(context.Background())
	if !errors.Is(err, ErrNeedsRoot) {
		t.Fatalf("want ErrNeedsRoot, got %v", err)
	}
	for _, want := range []string{"lvm lvs: lvm needs root", `"/run/lock/lvm/P_global:aux: open failed: Permission denied"`, "run tbhost as root", "sudo"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "raidintegrityblocksize") || strings.Contains(err.Error(), "WARNING: Running") {
		t.Errorf("%q repeats lvm's command line or its warning", err)
	}
	// a named VG (lab, lvm lvs vg-hdd as nobody): the lock line, not the
	// "Cannot process volume group" after it
	rec.On(execx.Reply{
		Stderr: "  WARNING: Running as a non-root user. Functionality may be unavailable.\n  /dev/mapper/control: open failed: Permission denied\n" +
			"  Failure to communicate with kernel device-mapper driver.\n  Incompatible libdevmapper 1.02.185 (2022-05-18) and kernel driver (unknown version).\n" +
			"  /run/lock/lvm/V_vg-hdd:aux: open failed: Permission denied\n  Can't get lock for vg-hdd.\n  Cannot process volume group vg-hdd\n",
		ExitCode: 5,
	}, LVsArgv("vg-hdd")...)
	_, err = Client{Runner: rec}.LVs(context.Background(), "vg-hdd")
	if !errors.Is(err, ErrNeedsRoot) || !strings.Contains(err.Error(), `"/run/lock/lvm/V_vg-hdd:aux: open failed: Permission denied"`) {
		t.Errorf("named VG: want ErrNeedsRoot quoting the lock line, got %v", err)
	}
	// without root lvm may not see a VG's disks and say it is not found:
	// the cause is root, not a missing VG
	rec.On(execx.Reply{
		Stderr:   "  WARNING: Running as a non-root user. Functionality may be unavailable.\n  Volume group \"vg-nvme\" not found\n  Cannot process volume group vg-nvme\n",
		ExitCode: 5,
	}, LVsArgv("vg-nvme")...)
	_, err = Client{Runner: rec}.LVs(context.Background(), "vg-nvme")
	if !errors.Is(err, ErrNeedsRoot) || errors.Is(err, ErrNotFound) {
		t.Errorf("non-root 'not found': want ErrNeedsRoot only, got %v", err)
	}
	// an lvm that answers a non-root user (exit 0, the warning, no LVs:
	// device-mapper is root's) is not taken for a host without arrays
	rec.On(execx.Reply{
		Stdout: "{\"report\": [{\"vg\": []}]}",
		Stderr: "  WARNING: Running as a non-root user. Functionality may be unavailable.\n",
	}, VGsArgv()...)
	if _, err := (Client{Runner: rec}).VGs(context.Background()); !errors.Is(err, ErrNeedsRoot) || !strings.Contains(err.Error(), "Running as a non-root user") {
		t.Errorf("exit 0 with the non-root warning: want ErrNeedsRoot quoting it, got %v", err)
	}
	// a root run that fails otherwise keeps lvm's own error
	rec.On(execx.Reply{Stderr: "  /dev/sdc: read failed: Input/output error\n", ExitCode: 5}, PVsArgv()...)
	if _, err := (Client{Runner: rec}).PVs(context.Background()); errors.Is(err, ErrNeedsRoot) || err == nil {
		t.Errorf("an I/O error read as needing root: %v", err)
	}
}
