package integritycmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/integrity"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/fixturetree"
	"github.com/tbhost/tbhost/internal/sizes"
	"github.com/tbhost/tbhost/lvm"
	"github.com/urfave/cli/v2"
)

func TestUntilTimeIsTheNextOccurrence(t *testing.T) {
	loc := time.FixedZone("X", 3600)
	now := time.Date(2026, 11, 30, 23, 10, 0, 0, loc)
	got, err := untilTime("06:00", now)
	if err != nil || !got.Equal(time.Date(2026, 12, 1, 6, 0, 0, 0, loc)) {
		t.Fatalf("23:10 -> 06:00: %v %v", got, err)
	}
	now = time.Date(2026, 11, 30, 1, 0, 0, 0, loc)
	if got, _ := untilTime("06:00", now); !got.Equal(time.Date(2026, 11, 30, 6, 0, 0, 0, loc)) {
		t.Fatalf("01:00 -> 06:00 the same day: %v", got)
	}
	if got, _ := untilTime("01:00", now); got.Sub(now) != 24*time.Hour {
		t.Fatalf("now exactly: tomorrow, got %v", got)
	}
	if got, err := untilTime("2026-12-01T05:00:00Z", now); err != nil || got.Hour() != 5 {
		t.Fatalf("RFC 3339: %v %v", got, err)
	}
	for _, bad := range []string{"6", "25:00", "tomorrow"} {
		if _, err := untilTime(bad, now); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// captureRoot is the lab's real capture of the clean raid5+integrity array
// (lvs, sysfs with the VPD serials) with small regular files standing in
// for its /dev/mapper devices, and a runner answering lvs and dmesg.
func captureRoot(t *testing.T, imageSize int64) (string, *execx.Recorded) {
	t.Helper()
	root := fixturetree.Dir(t, "../../../../internal/lab/testdata/captures/raid5-integrity-stripes5.tar.gz")
	m := filepath.Join(root, "dev/mapper")
	if err := os.MkdirAll(m, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		if err := os.WriteFile(filepath.Join(m, fmt.Sprintf("vg--hdd-tables_rimage_%d", i)), make([]byte, imageSize), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(m, "vg--hdd-tables"), make([]byte, 5*imageSize), 0o644); err != nil {
		t.Fatal(err)
	}
	lvs, err := os.ReadFile(filepath.Join(root, "lvm/lvs.json"))
	if err != nil {
		t.Fatal(err)
	}
	rec := execx.NewRecorded()
	rec.On(execx.Reply{Stdout: string(lvs)}, lvm.LVsArgv("vg-hdd")...)
	rec.On(execx.Reply{Stdout: "[    1.0] boot\n"}, "dmesg")
	return root, rec
}

// Issue 15 item 4: the scrub prints its forecast for the pass before it
// starts, with a WARNING when a full pass takes more than the target
// nights; --json carries it. 6 images of 8 MiB at 1 MiB/s in 2 s slices:
// 48 MiB / 2 MiB = 24 nights, over the 14 of internal/timeline.
func TestScrubPrintsItsForecastFirst(t *testing.T) {
	root, rec := captureRoot(t, 8<<20)
	state := filepath.Join(t.TempDir(), "scrub.json")
	code, _, stderr := runCLI(t, &cliutil.Env{Runner: rec}, "--root", root, "integrity", "scrub", "vg-hdd/tables",
		"--rate", "1MiB/s", "--budget", "2s", "--chunk", "256KiB", "--state", state)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(stderr, "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[1], "forecast: a full pass reads 48 MiB (6 images) at 1 MiB/s (the --rate cap") ||
		!strings.Contains(lines[1], "24 nights for a full pass") || !strings.HasPrefix(lines[2], "WARNING: a full pass takes 24 nights") {
		t.Fatalf("want the forecast and the warning right after the banner:\n%s", stderr)
	}
	var st integrity.ScrubState
	if b, err := os.ReadFile(state); err != nil || json.Unmarshal(b, &st) != nil {
		t.Fatalf("state %s: %v", state, err)
	}
	firstRuns := st.Runs
	code, stdout, _ := runCLI(t, &cliutil.Env{Runner: rec}, "--root", root, "--json", "integrity", "scrub", "vg-hdd/tables",
		"--rate", "1MiB/s", "--budget", "2s", "--chunk", "256KiB", "--state", state)
	var rep integrity.LVScrubReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != 0 {
		t.Fatalf("exit %d, %v: %s", code, err, stdout)
	}
	f := rep.Result.Forecast
	if f == nil || f.PassBytes != 48<<20 || f.SliceSeconds != 2 || f.TargetNights != 14 || f.Warning == "" {
		t.Fatalf("JSON forecast %+v", f)
	}
	// the first run's rate is measured when it read for at least a second
	// (a loaded machine may spend the 2 s budget starting up)
	if measured := len(firstRuns) == 1; measured != (f.RateFrom == "measured") {
		t.Fatalf("the first run recorded %+v, the second's forecast rate from %q", firstRuns, f.RateFrom)
	}
}

// Issue 13: the live BAD line names the image's disk and its serial (the
// map the command used was filled only after the scrub returned).
func TestScrubBadLineNamesTheDisk(t *testing.T) {
	var errb bytes.Buffer
	p := &scrubPrinter{g: &cliutil.Globals{Env: &cliutil.Env{Stderr: &errb}}}
	p.event(integrity.ScrubEvent{Kind: integrity.EventBad, Image: "tables_rimage_2", Disks: []string{"/dev/sdd"}, Disk: "/dev/sdd (serial HDD3)",
		Offset: 1049088, Message: "checksum mismatch: dm-integrity refused the block (EILSEQ)"})
	if want := "BAD tables_rimage_2 on /dev/sdd (serial HDD3) at image byte 1049088: checksum mismatch"; !strings.HasPrefix(errb.String(), want) {
		t.Fatalf("%q, want %q", errb.String(), want)
	}
}

// The flags map onto integrity's policy: the defaults it documents, and
// its refusals as usage errors naming the flag.
func TestScrubFlagsMapOntoThePolicy(t *testing.T) {
	root, rec := captureRoot(t, 1<<20)
	for _, bad := range [][]string{{"--chunk", "65000"}, {"--chunk", "0"}, {"--chunk", "32KiB"}} {
		code, _, stderr := runCLI(t, &cliutil.Env{Runner: rec}, append([]string{"--root", root, "integrity", "scrub", "vg-hdd/tables"}, bad...)...)
		if code != 2 || !strings.Contains(stderr, `--chunk "`+bad[1]+`": want a multiple of 4KiB, at least 64KiB`) {
			t.Errorf("%v: exit %d: %s", bad, code, stderr)
		}
	}
	if r, err := sizes.ParseRate(scrubCommand().Flags[0].(*cli.StringFlag).Value); err != nil || r != integrity.DefaultScrubRate {
		t.Errorf("--rate's default %d is not integrity.DefaultScrubRate: %v", r, err)
	}
}
