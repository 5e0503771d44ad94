package monitor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs/blockdevice"
)

// seq builds samples 5 s apart where disk i reads perInterval[k][i] reads in interval k.
func seq(disks []string, perInterval [][]uint64) []Sample {
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	cum := make([]blockdevice.IOStats, len(disks))
	var out []Sample
	snap := func(k int) {
		s := Sample{Time: t0.Add(time.Duration(k) * 5 * time.Second), Devices: map[string]blockdevice.IOStats{}}
		for i, d := range disks {
			s.Devices[d] = cum[i]
		}
		out = append(out, s)
	}
	snap(0)
	for k, row := range perInterval {
		for i := range disks {
			cum[i].ReadIOs += row[i]
			cum[i].ReadSectors += row[i] * 8
			cum[i].ReadTicks += row[i] * 5
			cum[i].IOsTotalTicks += 2500
			cum[i].WeightedIOTicks += row[i] * 5
		}
		snap(k + 1)
	}
	return out
}

func array(disks ...string) Array {
	a := Array{Name: "vg/a", Kind: "lvm", Level: "raid5", Device: "dm-9", Images: len(disks), SyncProgress: -1, IntegrityMismatches: -1}
	for _, d := range disks {
		a.Members = append(a.Members, Member{Disk: d, ID: "id-" + d, Images: []string{"a_rimage_" + d}})
	}
	return a
}

func flags(ar ArrayResult) string {
	var f []string
	for _, m := range ar.Members {
		f = append(f, m.Disk+"="+m.Flag)
	}
	return strings.Join(f, " ")
}

var six = []string{"sda", "sdb", "sdc", "sdd", "sde", "sdf"}

func TestBalancedIsOK(t *testing.T) {
	s := seq(six, [][]uint64{{500, 510, 495, 505, 490, 500}, {480, 520, 500, 500, 505, 495}})
	r := Evaluate([]Array{array(six...)}, s, DefaultThresholds())
	if r.Status != OK || r.Arrays[0].Judged != 2 {
		t.Fatalf("status %s judged %d: %s", r.Status, r.Arrays[0].Judged, r.Summary)
	}
	if !strings.Contains(r.Summary, "vg/a balanced (6 disks") {
		t.Errorf("summary %q", r.Summary)
	}
	m := r.Arrays[0].Members[0]
	if m.Rates.ReadsPerS != 98 || m.Rates.RAwaitMS != 5 || m.Rates.UtilPercent != 50 {
		t.Errorf("rates %+v (want 98 r/s, 5 ms, 50%%)", m.Rates)
	}
	if m.Share < 0.16 || m.Share > 0.17 {
		t.Errorf("share %v", m.Share)
	}
}

func TestIdleDisksAreCritical(t *testing.T) {
	s := seq(six, [][]uint64{{900, 910, 905, 0, 0, 0}, {880, 900, 920, 0, 0, 0}})
	r := Evaluate([]Array{array(six...)}, s, DefaultThresholds())
	if r.Status != Critical {
		t.Fatalf("status %s", r.Status)
	}
	if got := flags(r.Arrays[0]); got != "sda=over sdb=over sdc=over sdd=idle sde=idle sdf=idle" {
		t.Errorf("flags %s", got)
	}
	if !strings.Contains(r.Summary, "sdd, sde, sdf idle") {
		t.Errorf("summary must name the idle disks first: %q", r.Summary)
	}
}

func TestSkewMustLastTheWholeWindow(t *testing.T) {
	th := DefaultThresholds()
	// sdf reads 50 % of its siblings in one interval, normally in the other: not flagged
	s := seq(six, [][]uint64{{500, 500, 500, 500, 500, 250}, {500, 500, 500, 500, 500, 500}})
	if r := Evaluate([]Array{array(six...)}, s, th); r.Status != OK {
		t.Errorf("transient skew: %s %s", r.Status, r.Summary)
	}
	// 50 % in both intervals: under by ~-45 % of the mean -> WARNING (between 30 and 60)
	s = seq(six, [][]uint64{{500, 500, 500, 500, 500, 250}, {500, 500, 500, 500, 500, 250}})
	r := Evaluate([]Array{array(six...)}, s, th)
	if r.Status != Warning || r.Arrays[0].Members[5].Flag != FlagUnder {
		t.Errorf("persistent skew: %s %s", r.Status, flags(r.Arrays[0]))
	}
	if !strings.Contains(r.Summary, "sdf -45%") {
		t.Errorf("summary must say by how much: %q", r.Summary)
	}
	// 20 % of siblings: CRITICAL
	s = seq(six, [][]uint64{{500, 500, 500, 500, 500, 100}, {500, 500, 500, 500, 500, 100}})
	if r := Evaluate([]Array{array(six...)}, s, th); r.Status != Critical {
		t.Errorf("heavy skew: %s %s", r.Status, r.Summary)
	}
}

func TestLowTrafficDoesNotCryWolf(t *testing.T) {
	// 1 read/s per disk, one disk idle: too little to judge
	s := seq(six, [][]uint64{{5, 6, 4, 5, 5, 0}, {5, 5, 5, 6, 4, 0}})
	th := DefaultThresholds()
	r := Evaluate([]Array{array(six...)}, s, th)
	if r.Status != OK || r.Arrays[0].Judged != 0 || !strings.Contains(r.Summary, "too little traffic") {
		t.Errorf("default: %s judged %d: %q", r.Status, r.Arrays[0].Judged, r.Summary)
	}
	th.NoTraffic = Unknown
	if r := Evaluate([]Array{array(six...)}, s, th); r.Status != Unknown {
		t.Errorf("NoTraffic=Unknown: %s", r.Status)
	}
	// with the floor lowered it is judged, and the idle disk is critical
	th = DefaultThresholds()
	th.MinReads = 0.5
	if r := Evaluate([]Array{array(six...)}, s, th); r.Status != Critical {
		t.Errorf("min-reads 0.5: %s %s", r.Status, r.Summary)
	}
}

func TestSyncingIsWarningAndNotJudged(t *testing.T) {
	a := array(six...)
	a.Syncing, a.SyncAction, a.SyncProgress = true, "resync", 0.4
	a.Problems = []Problem{{Severity: Warning, Text: "vg/a: resync in progress"}}
	s := seq(six, [][]uint64{{900, 0, 900, 900, 900, 900}, {900, 0, 900, 900, 900, 900}})
	r := Evaluate([]Array{a}, s, DefaultThresholds())
	if r.Status != Warning || r.Arrays[0].Judged != 0 {
		t.Errorf("%s judged %d %s", r.Status, r.Arrays[0].Judged, flags(r.Arrays[0]))
	}
}

func TestMissingMemberIsCriticalAndExcludedFromMean(t *testing.T) {
	a := array(six[:5]...)
	a.Members = append(a.Members, Member{Images: []string{"a_rimage_5"}, Missing: true})
	s := seq(six[:5], [][]uint64{{600, 600, 600, 600, 600}, {600, 600, 600, 600, 600}})
	r := Evaluate([]Array{a}, s, DefaultThresholds())
	if r.Status != Critical {
		t.Errorf("status %s", r.Status)
	}
	if got := flags(r.Arrays[0]); got != "sda=ok sdb=ok sdc=ok sdd=ok sde=ok =missing" {
		t.Errorf("flags %s", got)
	}
}

func TestDiskGoneFromDiskstats(t *testing.T) {
	s := seq(six[:5], [][]uint64{{600, 600, 600, 600, 600}})
	r := Evaluate([]Array{array(six...)}, s, DefaultThresholds())
	if r.Status != Critical || !strings.Contains(r.Summary, "sdf is not in /proc/diskstats") {
		t.Errorf("%s %q", r.Status, r.Summary)
	}
}

func TestNoArraysIsUnknown(t *testing.T) {
	if r := Evaluate(nil, nil, DefaultThresholds()); r.Status != Unknown {
		t.Errorf("%s", r.Status)
	}
}

func TestCollectStopsAtReplayEnd(t *testing.T) {
	src := &SliceSource{Samples: seq(six, [][]uint64{{1, 1, 1, 1, 1, 1}})}
	got, err := Collect(context.Background(), src, noSleep{}, 5*time.Second, 10)
	if err != nil || len(got) != 2 {
		t.Fatalf("%d samples, %v", len(got), err)
	}
}

type noSleep struct{}

func (noSleep) Now() time.Time                                   { return time.Unix(0, 0) }
func (noSleep) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

func TestFixtureTrees(t *testing.T) {
	for _, c := range []struct {
		tree   string
		status Severity
		want   []string
	}{
		{derived(t, "balanced"), OK, []string{"vg-hdd/tables balanced (6 disks", "vg-nvme/prefix skew not judged: too little traffic"}},
		{derived(t, "misbuilt"), Critical, []string{"sdd, sde, sdf idle"}},
		{derived(t, "missing"), Critical, []string{"tables_rimage_5 has no disk", "partial"}},
	} {
		topo := discover(t, c.tree)
		src, ok := NewReplaySource(c.tree, time.Unix(0, 0), 5*time.Second)
		if !ok {
			t.Fatalf("%s: no diskstats.N", c.tree)
		}
		samples, err := Collect(context.Background(), src, noSleep{}, 5*time.Second, 100)
		if err != nil || len(samples) != 3 {
			t.Fatalf("%s: %d samples %v", c.tree, len(samples), err)
		}
		r := Evaluate(topo.Arrays, samples, DefaultThresholds())
		if r.Status != c.status {
			t.Errorf("%s: %s, want %s: %s", c.tree, r.Status, c.status, r.Summary)
		}
		for _, w := range c.want {
			if !strings.Contains(r.Summary, w) {
				t.Errorf("%s: summary %q lacks %q", c.tree, r.Summary, w)
			}
		}
	}
}

func TestSamplerAgreesWithProcfs(t *testing.T) {
	root := derived(t, "balanced")
	fs, err := blockdevice.NewFS(root+"/proc", root+"/sys")
	if err != nil {
		t.Fatal(err)
	}
	viaProcfs, err := fs.ProcDiskstats()
	if err != nil {
		t.Fatal(err)
	}
	src, _ := NewReplaySource(root, time.Unix(0, 0), time.Second)
	src.Files = []string{root + "/proc/diskstats"}
	ours, err := src.Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(viaProcfs) != len(ours.Devices) || len(viaProcfs) < 30 {
		t.Fatalf("%d vs %d devices", len(viaProcfs), len(ours.Devices))
	}
	for _, d := range viaProcfs {
		if ours.Devices[d.DeviceName] != d.IOStats {
			t.Errorf("%s: procfs %+v ours %+v", d.DeviceName, d.IOStats, ours.Devices[d.DeviceName])
		}
	}
}

func TestTrickleOfMetadataReadsStillIdle(t *testing.T) {
	// dm-integrity tag reads on the unused half of each image: ~1 % of the data reads
	s := seq(six, [][]uint64{{900, 910, 905, 9, 8, 10}, {880, 900, 920, 7, 9, 9}})
	r := Evaluate([]Array{array(six...)}, s, DefaultThresholds())
	if got := flags(r.Arrays[0]); got != "sda=over sdb=over sdc=over sdd=idle sde=idle sdf=idle" || r.Status != Critical {
		t.Errorf("%s %s", r.Status, got)
	}
	// 10 % of the mean is not idle: under, by the thresholds
	s = seq(six, [][]uint64{{900, 900, 900, 900, 900, 60}, {900, 900, 900, 900, 900, 60}})
	r = Evaluate([]Array{array(six...)}, s, DefaultThresholds())
	if got := r.Arrays[0].Members[5].Flag; got != FlagUnder {
		t.Errorf("sdf at ~8%% of the mean: %s", got)
	}
}
