package integrity

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/procfs/blockdevice"
	"github.com/tbhost/tbhost/internal/diskstats"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/lvm"
)

// captureScrubRoot is the lab's real capture of the clean raid5+integrity
// array (lvs, sysfs with the disks' VPD serials, /dev/disk/by-id) plus
// small regular files standing in for the /dev/mapper devices.
func captureScrubRoot(t *testing.T, imageSize int64) (root string, rec *execx.Recorded) {
	t.Helper()
	root = capture(t, "raid5-integrity-stripes5")
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
	rec = execx.NewRecorded()
	rec.On(execx.Reply{Stdout: string(lvs)}, lvm.LVsArgv("vg-hdd")...)
	rec.On(execx.Reply{Stdout: "[    1.0] boot\n"}, "dmesg")
	return root, rec
}

// Issue 13: the live BAD lines never named the disk (the command filled
// its image-to-disk map only after the scrub returned). Every event about
// an image now names the disk under it, with the serial the operator finds
// on the drive's label, from the moment the scrub starts.
func TestScrubLVLiveBadEventsNameTheDiskAndSerial(t *testing.T) {
	root, rec := captureScrubRoot(t, 2<<20)
	bad := int64(1<<20 + 512)
	var mu sync.Mutex
	var events []ScrubEvent
	so := ScrubOptions{Chunk: 1 << 20, Events: func(e ScrubEvent) { mu.Lock(); events = append(events, e); mu.Unlock() }}
	so.open = func(p string, direct bool) (blockReader, bool, string, error) {
		f, err := os.Open(p)
		if err != nil {
			return nil, false, "", err
		}
		if strings.HasSuffix(p, "_rimage_2") {
			return flakyFile{f, []int64{bad}, 512}, false, "", nil
		}
		return f, false, "", nil
	}
	rep, err := ScrubLV(context.Background(), LVScrubOptions{VG: "vg-hdd", LV: "tables", Root: root, Runner: rec, Scrub: so})
	if err != nil {
		t.Fatal(err)
	}
	// the capture: tables_rimage_2 sits on /dev/sdd, whose VPD page 0x80
	// says HDD3 (the lab's qemu serial; sdd is not HDD4: the kernel probes
	// SCSI disks asynchronously)
	const want = "/dev/sdd (serial HDD3)"
	var badEvents []ScrubEvent
	for _, e := range events {
		if e.Kind == EventBad {
			badEvents = append(badEvents, e)
		}
		if e.Image != "" && e.Disk == "" {
			t.Errorf("%s event for %s names no disk", e.Kind, e.Image)
		}
	}
	if len(badEvents) != 1 || badEvents[0].Image != "tables_rimage_2" || badEvents[0].Disk != want || badEvents[0].Offset != bad {
		t.Fatalf("bad events %+v, want one on tables_rimage_2 naming %q", badEvents, want)
	}
	if len(rep.Plan.Targets) != 6 || rep.Plan.Targets[2].Serials[0] != "HDD3" || rep.Plan.Targets[1].DiskLabel() != "/dev/sda (serial HDD2)" {
		t.Errorf("targets %+v", rep.Plan.Targets)
	}
	if p := strings.Join(rep.Problems, "\n"); !strings.Contains(p, "tables_rimage_2 on "+want) {
		t.Errorf("problems %q do not name the disk and serial", p)
	}
}

// The foreground device is the LV's own dm device, found by its dm name.
func TestForegroundDeviceIsTheLVsDMDevice(t *testing.T) {
	root := capture(t, "raid5-integrity-stripes5")
	all := lvsFile(t, filepath.Join(root, "lvm", "lvs.json"))
	if got := foregroundDevice(root, all, "vg-hdd", "tables"); got != "dm-27" {
		t.Fatalf("foreground device %q, want dm-27 (sys/block/dm-27/dm/name is vg--hdd-tables)", got)
	}
	// no sysfs: lvs' kernel minor
	top := lvm.LV{Name: "tables", VG: "vg-hdd", KernelMajor: 254, KernelMinor: 9}
	if got := foregroundDevice(t.TempDir(), []lvm.LV{top}, "vg-hdd", "tables"); got != "dm-9" {
		t.Fatalf("from lvs: %q", got)
	}
	if got := foregroundDevice(t.TempDir(), nil, "vg-hdd", "tables"); got != "" {
		t.Fatalf("nothing known: %q", got)
	}
}

// bump adds reads (of sectors each) taking ticks ms in total to dev.
func bump(s diskstats.Sample, dev string, reads, sectorsPerRead, ticks uint64) {
	st := s.Devices[dev]
	st.ReadIOs += reads
	st.ReadSectors += reads * sectorsPerRead
	st.ReadTicks += ticks
	s.Devices[dev] = st
}

func copySample(s diskstats.Sample, after time.Duration) diskstats.Sample {
	out := diskstats.Sample{Time: s.Time.Add(after), Devices: map[string]blockdevice.IOStats{}}
	for k, v := range s.Devices {
		out.Devices[k] = v
	}
	return out
}

// Issue 20: the backoff must not mistake the scrub's own load on the disk
// it reads for foreground reads queueing. The samples are the lab's real
// /proc/diskstats (raid5-integrity-stripes5, proc/diskstats.0; dm-27 is
// vg-hdd/tables), advanced 5 s by the deltas each case states.
func TestBackoffDoesNotMistakeItsOwnLoad(t *testing.T) {
	base, err := diskstats.ReadFile(filepath.Join(capture(t, "raid5-integrity-stripes5"), "proc", "diskstats.0"))
	if err != nil {
		t.Fatal(err)
	}
	members := []string{"sda", "sdb", "sdc", "sdd", "sde", "sdf"}
	rule := BackoffRule{MaxAwait: DefaultMaxAwait, MinRate: 1 << 20, MaxRate: 100 << 20}
	scrubbingSdd := Load{Members: members, Scrubbing: map[string]bool{"sdd": true}, Foreground: "dm-27", ForegroundName: "vg-hdd/tables"}

	t.Run("only the scrub reads sdd", func(t *testing.T) {
		// --parallel 1 with --chunk 16MiB on tables_rimage_2 (sdd): 20
		// reads of 16 MiB (32768 sectors), 150 ms each; nothing else reads.
		now := copySample(base, 5*time.Second)
		bump(now, "sdd", 20, 32768, 20*150)
		old := rule.Next(50<<20, members, base, now)
		if old.Rate != 25<<20 || old.WorstDisk != "sdd" {
			t.Fatalf("the rule without the scrub's load should halve on sdd's 150 ms (what this fixes): %+v", old)
		}
		d := rule.Decide(50<<20, scrubbingSdd, base, now)
		if d.Rate != 50<<20+100<<20/8 || !strings.Contains(d.Reason, "only the scrub read sdd") || len(d.Skipped) != 1 {
			t.Fatalf("its own reads are no reason to back off: %+v", d)
		}
	})
	t.Run("foreground queueing behind the scrub on sdd", func(t *testing.T) {
		// the same scrub reads, plus 300 probe reads through the LV (8
		// sectors, 90 ms each): 50 of them land on sdd and wait behind the
		// scrub, the others on the five other disks at 8 ms.
		now := copySample(base, 5*time.Second)
		bump(now, "sdd", 20, 32768, 20*150)
		bump(now, "sdd", 50, 8, 50*400)
		for _, d := range []string{"sda", "sdb", "sdc", "sde", "sdf"} {
			bump(now, d, 50, 8, 50*8)
		}
		bump(now, "dm-27", 300, 8, 300*90)
		d := rule.Decide(50<<20, scrubbingSdd, base, now)
		if d.Rate != 25<<20 || d.WorstDisk != "dm-27" || !strings.Contains(d.Reason, "reads through vg-hdd/tables (dm-27) r_await 90ms > 60ms") {
			t.Fatalf("foreground reads at 90 ms must make it back off: %+v", d)
		}
	})
	t.Run("a slow member the scrub is not reading", func(t *testing.T) {
		// sde answers the probes in 150 ms (a fail-slow disk, or a heavy
		// foreground there): that is foreground latency, the rule backs off.
		now := copySample(base, 5*time.Second)
		bump(now, "sdd", 20, 32768, 20*150)
		bump(now, "sde", 50, 8, 50*150)
		bump(now, "dm-27", 50, 8, 50*20)
		d := rule.Decide(50<<20, scrubbingSdd, base, now)
		if d.Rate != 25<<20 || d.WorstDisk != "sde" {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("no foreground device known", func(t *testing.T) {
		// without it the member is judged by its own r_await, as before
		now := copySample(base, 5*time.Second)
		bump(now, "sdd", 20, 32768, 20*150)
		l := scrubbingSdd
		l.Foreground = ""
		if d := rule.Decide(50<<20, l, base, now); d.Rate != 25<<20 || d.WorstDisk != "sdd" {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("the real capture: dd through the LV, no scrub", func(t *testing.T) {
		now, err := diskstats.ReadFile(filepath.Join(capture(t, "raid5-integrity-stripes5"), "proc", "diskstats.1"))
		if err != nil {
			t.Fatal(err)
		}
		now.Time = base.Time.Add(5 * time.Second)
		l := Load{Members: members, Foreground: "dm-27"}
		if a, b := rule.Next(50<<20, members, base, now), rule.Decide(50<<20, l, base, now); a.Rate != b.Rate || a.WorstDisk != b.WorstDisk {
			t.Fatalf("nothing scrubbed: the same decision as before: %+v vs %+v", a, b)
		}
	})
}

// Issue 20: the state file says which disks the scrub reads right now, so
// the monitor can leave them out of its latency comparison.
func TestScrubStateNamesTheDisksBeingRead(t *testing.T) {
	dir := t.TempDir()
	targets := imageFiles(t, dir, 2<<20, 2<<20)
	state := filepath.Join(dir, "scrub.json")
	seen := map[string][]string{}
	var checkErr error
	_, err := Scrub(context.Background(), ScrubOptions{Targets: targets, Identity: "u", StatePath: state, Chunk: 1 << 20, Parallel: 1,
		Events: func(e ScrubEvent) {
			if e.Kind != EventProgress {
				return
			}
			a, err := ReadScrubActivity(state, time.Now())
			if err != nil || !a.Running {
				checkErr = fmt.Errorf("during %s: %+v %v", e.Image, a, err)
				return
			}
			seen[e.Image] = a.Disks
		}})
	if err != nil || checkErr != nil {
		t.Fatal(err, checkErr)
	}
	if strings.Join(seen["tables_rimage_0"], ",") != "/dev/sda" || strings.Join(seen["tables_rimage_1"], ",") != "/dev/sdb" {
		t.Fatalf("reading_disks seen while reading: %v", seen)
	}
	a, err := ReadScrubActivity(state, time.Now())
	if err != nil || a.Running || len(a.Disks) != 0 || a.PID != 0 {
		t.Fatalf("after the run: %+v %v", a, err)
	}
	// a run killed with -9 leaves reading_disks: stale after ActivityFreshness
	var st ScrubState
	if _, err := readJSON(state, &st); err != nil {
		t.Fatal(err)
	}
	st.ReadingDisks, st.ReadingImages, st.PID = []string{"/dev/sdc"}, []string{"tables_rimage_2"}, 4242
	if err := writeJSONAtomic(state, st); err != nil {
		t.Fatal(err)
	}
	if a, _ := ReadScrubActivity(state, st.Updated.Add(time.Minute)); !a.Running || a.Disks[0] != "/dev/sdc" || a.PID != 4242 {
		t.Fatalf("fresh: %+v", a)
	}
	if a, _ := ReadScrubActivity(state, st.Updated.Add(ActivityFreshness+time.Second)); a.Running || a.Disks != nil {
		t.Fatalf("stale: %+v", a)
	}
	if a, err := ReadScrubActivity(filepath.Join(dir, "none.json"), time.Now()); err != nil || a.Running {
		t.Fatalf("no file: %+v %v", a, err)
	}
}

// The scrub tells the backoff which members it read in each interval.
func TestScrubbedDisksCoverTheInterval(t *testing.T) {
	r := &scrubRun{reading: map[string]ScrubTarget{}, touched: map[string]ScrubTarget{}}
	a := ScrubTarget{Name: "a", Disks: []string{"/dev/sda"}}
	b := ScrubTarget{Name: "b", Disks: []string{"/dev/sdb"}}
	r.beginReading(a)
	r.beginReading(b)
	r.endReading(a) // a ended within the interval: it still counts
	if got := r.scrubbedDisks(); !got["sda"] || !got["sdb"] || len(got) != 2 {
		t.Fatalf("first interval %v", got)
	}
	if got := r.scrubbedDisks(); got["sda"] || !got["sdb"] {
		t.Fatalf("second interval: only b is still read: %v", got)
	}
}

// The scrub's backoff loop is told which member it is reading and the LV's
// own device: sda's 200 ms (the scrub's own 16 MiB reads) with no
// foreground reads speeds the rate up instead of halving it.
func TestScrubBackoffKnowsWhatItReads(t *testing.T) {
	clk := newFakeClock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := ScrubTarget{Name: "tables_rimage_0", Disks: []string{"/dev/sda"}}
	b := ScrubTarget{Name: "tables_rimage_1", Disks: []string{"/dev/sdb"}}
	stats := &scriptedStats{done: cancel, samples: []diskstats.Sample{counters(0, 0, 0), counters(5, 10, 2000)}}
	var msgs []string
	r := &scrubRun{o: ScrubOptions{Targets: []ScrubTarget{a, b}, Rate: 64 << 20, Stats: stats, Clock: clk, SampleEvery: 5 * time.Second,
		Foreground: "dm-9", ForegroundName: "vg-hdd/tables", Backoff: BackoffRule{MaxAwait: DefaultMaxAwait, MinRate: 1 << 20},
		Events: func(e ScrubEvent) { msgs = append(msgs, e.Message) }},
		throttle: NewThrottle(32<<20, clk), reading: map[string]ScrubTarget{}, touched: map[string]ScrubTarget{}}
	r.beginReading(a)
	r.startBackoff(ctx)()
	if r.throttle.Rate() != 40<<20 || len(msgs) != 1 || !strings.Contains(msgs[0], "only the scrub read sda") {
		t.Fatalf("rate %d MiB/s, events %q: want 32 + 64/8 = 40 MiB/s, speeding up", r.throttle.Rate()>>20, msgs)
	}
}
