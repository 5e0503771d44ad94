package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs/blockdevice"

	"github.com/tbhost/tbhost/internal/diskstats"
	"github.com/tbhost/tbhost/internal/fixturetree"
	"github.com/tbhost/tbhost/monitor"
	"github.com/tbhost/tbhost/monitor/monitortest"
)

// The tables' filesystem on the raid5 LV (dm-24, 254:24) resolves through
// the integrity and rimage layers to the six disks; a device number that is
// no block device (tmpfs) says so and adds none.
func TestDisksBehindTheTablesLV(t *testing.T) {
	root := filepath.Join(t.TempDir(), "tree")
	if err := monitortest.Write(root, "balanced"); err != nil {
		t.Fatal(err)
	}
	disks, via, err := DisksBehind(root, []string{"254:24", "0:45"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(disks, " ") != "sda sdb sdc sdd sde sdf" {
		t.Errorf("disks %v", disks)
	}
	if len(via) != 2 || via[0] != "dm-24 (vg--hdd-tables) -> sda sdb sdc sdd sde sdf" || !strings.Contains(via[1], "0:45 is no block device") {
		t.Errorf("via %q", via)
	}
	// the prefix array: the two NVMe
	if disks, _, err := DisksBehind(root, []string{"254:27"}); err != nil || strings.Join(disks, " ") != "nvme0n1 nvme1n1" {
		t.Errorf("prefix: %v %v", disks, err)
	}
}

// diskSamples: every disk reads n reads at awaitMS each over 10 s.
func diskSamples(per map[string][2]float64) []diskstats.Sample {
	t0 := time.Unix(1000, 0)
	a := diskstats.Sample{Time: t0, Devices: map[string]blockdevice.IOStats{}}
	b := diskstats.Sample{Time: t0.Add(10 * time.Second), Devices: map[string]blockdevice.IOStats{}}
	for d, v := range per {
		a.Devices[d] = blockdevice.IOStats{ReadIOs: 1000, ReadTicks: 5000, IOsTotalTicks: 100}
		b.Devices[d] = blockdevice.IOStats{ReadIOs: 1000 + uint64(v[0]), ReadSectors: uint64(v[0]) * 8,
			ReadTicks: 5000 + uint64(v[0]*v[1]), IOsTotalTicks: 100 + uint64(min(v[0]*v[1], 10000))}
	}
	return []diskstats.Sample{a, b}
}

// A slow member stands out in the per-disk table; a balanced set does not.
func TestDiskWatchMarksTheSlowMember(t *testing.T) {
	per := map[string][2]float64{"sda": {150, 0.6}, "sdb": {160, 0.7}, "sdc": {150, 506}, "sdd": {155, 0.6}}
	s := diskSamples(per)
	w := &DiskWatch{Disks: []string{"sda", "sdb", "sdc", "sdd"}}
	ds := w.Since(s[0], s[1])
	if len(ds) != 4 {
		t.Fatalf("%+v", ds)
	}
	for _, d := range ds {
		if d.Slow != (d.Disk == "sdc") {
			t.Errorf("%s slow=%v ratio %.1f", d.Disk, d.Slow, d.AwaitRatio)
		}
	}
	if c := ds[2]; c.Reads != 150 || c.ReadsPerS != 15 || c.RAwaitMS < 505 || c.RAwaitMS > 507 || c.UtilPercent != 100 || c.AwaitRatio < 700 {
		t.Errorf("sdc %+v", c)
	}
	var buf bytes.Buffer
	r := &Report{Runs: []Run{{Name: "pread/normal/seq/no-store", Disks: ds}}}
	if err := r.WriteDisks(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "per-disk reads during pread/normal/seq/no-store") || strings.Count(out, "<- slow") != 1 {
		t.Errorf("table:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "<- slow") && !strings.Contains(l, "sdc") {
			t.Errorf("slow mark on %q", l)
		}
	}
	// balanced: nobody slow; a disk gone meanwhile: no table rather than a wrong one
	per["sdc"] = [2]float64{150, 0.8}
	s = diskSamples(per)
	for _, d := range w.Since(s[0], s[1]) {
		if d.Slow {
			t.Errorf("balanced: %s slow", d.Disk)
		}
	}
	delete(s[1].Devices, "sdb")
	if ds := w.Since(s[0], s[1]); ds != nil {
		t.Errorf("a vanished disk: %+v", ds)
	}
}

// RunProbes samples the disks right around each configuration's run.
func TestRunProbesReportsPerDiskReads(t *testing.T) {
	tables, _ := copyTables(t)
	set, err := LoadTables(context.Background(), []string{tables})
	if err != nil {
		t.Fatal(err)
	}
	s := diskSamples(map[string][2]float64{"sda": {150, 0.6}, "sdb": {150, 40}})
	w := &DiskWatch{Disks: []string{"sda", "sdb"}, src: &diskstats.SliceSource{Samples: s}}
	rep, err := RunProbes(context.Background(), ProbeOptions{Set: set, Configs: []ProbeConfig{{IO: IOPread, Advise: AdviseNormal, Parallel: 1}},
		Mix: DefaultMix(), Cache: CacheKeep, Load: Load{Clients: 1, Requests: 3, Warmup: 1}, Disks: w})
	if err != nil {
		t.Fatal(err)
	}
	ds := rep.Runs[0].Disks
	if len(ds) != 2 || ds[1].Disk != "sdb" || !ds[1].Slow || ds[0].Slow || ds[1].Reads != 150 {
		t.Fatalf("run disks %+v", ds)
	}
	var buf bytes.Buffer
	if err := rep.WriteTable(&buf); err != nil || !strings.Contains(buf.String(), "<- slow") {
		t.Errorf("table %v:\n%s", err, buf.String())
	}
}

// A disk that also writes (ext4's journal and atime updates land on one
// member) waits longer for its reads because it is busier, not slower: not
// marked. The same wait without the writes is.
func TestDiskWatchBusyWithWritesIsNotSlow(t *testing.T) {
	per := map[string][2]float64{"sda": {150, 2}, "sdb": {150, 2}, "sdc": {150, 2}, "sdd": {150, 2}}
	s := diskSamples(per)
	d := s[1].Devices["sdd"]
	d.ReadTicks = s[0].Devices["sdd"].ReadTicks + 150*9 // 9 ms per read
	d.WriteIOs, d.WriteTicks = 600, 600*2
	d.IOsTotalTicks = s[0].Devices["sdd"].IOsTotalTicks + (150+600)*2 // 2 ms busy per I/O, like the others
	s[1].Devices["sdd"] = d
	w := &DiskWatch{Disks: []string{"sda", "sdb", "sdc", "sdd"}}
	ds := w.Since(s[0], s[1])
	if ds[3].AwaitRatio < 4 || ds[3].Slow {
		t.Errorf("busy sdd: ratio %.1f slow %v, want a high ratio and not slow", ds[3].AwaitRatio, ds[3].Slow)
	}
	d.WriteIOs, d.WriteTicks = 0, 0
	s[1].Devices["sdd"] = d
	if ds := w.Since(s[0], s[1]); !ds[3].Slow {
		t.Errorf("sdd at 4.5x without writes: %+v, want slow", ds[3])
	}
}

// On the VM lab's real capture (two raid5 LVs over 12 HDDs), the tables
// LV's device number resolves to its six disks, HDD1..HDD6.
func TestDisksBehindOnTheLabCapture(t *testing.T) {
	root := fixturetree.Dir(t, "../lab/testdata/captures/raid5-slow-member.tar.gz")
	sb, err := monitor.ReadSysBlock(root)
	if err != nil {
		t.Fatal(err)
	}
	dm, ok := sb.ByDMName("vg--hdd-tables")
	if !ok {
		t.Fatal("no vg--hdd-tables in the capture")
	}
	num, err := os.ReadFile(filepath.Join(root, "sys", "block", dm, "dev"))
	if err != nil {
		t.Fatal(err)
	}
	disks, via, err := DisksBehind(root, []string{strings.TrimSpace(string(num))})
	if err != nil {
		t.Fatal(err)
	}
	if len(disks) != 6 || len(via) != 1 || !strings.HasPrefix(via[0], dm+" (vg--hdd-tables) -> ") {
		t.Fatalf("disks %v via %q", disks, via)
	}
	for _, d := range disks {
		if id := monitor.StableID(root, d); !strings.HasPrefix(id, "wwn-") {
			t.Errorf("%s: id %q", d, id)
		}
	}
}
