package integrity

import (
	"testing"
	"time"

	"github.com/prometheus/procfs/blockdevice"
	"github.com/tbhost/tbhost/internal/diskstats"
)

// sampleFixture reads testdata/diskstats/NAME/proc/diskstats; t1 is 5 s after t0.
func sampleFixture(t *testing.T, name string) diskstats.Sample {
	t.Helper()
	s, err := diskstats.ReadFile("testdata/diskstats/" + name + "/proc/diskstats")
	if err != nil {
		t.Fatal(err)
	}
	if name == "t1" {
		s.Time = s.Time.Add(5 * time.Second)
	}
	return s
}

// counters is a sample of sda alone, at second k.
func counters(k int, reads, ticks uint64) diskstats.Sample {
	return diskstats.Sample{Time: time.Unix(int64(k), 0), Devices: map[string]blockdevice.IOStats{"sda": {ReadIOs: reads, ReadTicks: ticks}}}
}

var hdds = []string{"sda", "sdb", "sdc", "sdd", "sde", "sdf"}

func TestBackoffFromRealDiskstatsLayout(t *testing.T) {
	t0, t1 := sampleFixture(t, "t0"), sampleFixture(t, "t1")
	if t0.Devices["sdc"].ReadIOs != 58692 || t0.Devices["sdc"].ReadTicks != 280957 {
		t.Fatalf("parsed %+v", t0.Devices["sdc"])
	}
	rule := BackoffRule{MaxAwait: 60 * time.Millisecond, MinRate: 4 << 20, MaxRate: 100 << 20}
	d := rule.Next(100<<20, hdds, t0, t1)
	if d.Rate != 50<<20 || !d.Changed || d.WorstDisk != "sdc" || d.Await != 150*time.Millisecond {
		t.Fatalf("sdc at 150 ms must halve the rate: %+v", d)
	}
	// without sdc among the members, 20 ms is fast: speed up, capped at MaxRate
	d = rule.Next(50<<20, []string{"sda", "sdb"}, t0, t1)
	if d.Rate != 50<<20+100<<20/8 || d.WorstDisk == "sdc" {
		t.Fatalf("%+v", d)
	}
	if d = rule.Next(100<<20, []string{"sda"}, t0, t1); d.Rate != 100<<20 || d.Changed {
		t.Fatalf("already at MaxRate: %+v", d)
	}
}

func TestBackoffRuleEdges(t *testing.T) {
	rule := BackoffRule{MaxAwait: 60 * time.Millisecond, MinRate: 8 << 20, MaxRate: 100 << 20}
	s := func(reads, ticks uint64) diskstats.Sample { return counters(0, reads, ticks) }
	n := func(reads, ticks uint64) diskstats.Sample { return counters(5, reads, ticks) }
	cases := []struct {
		name      string
		cur       int64
		prev, now diskstats.Sample
		want      int64
	}{
		{"floor at MinRate", 10 << 20, s(0, 0), n(10, 1000), 8 << 20},
		{"in the band: keep", 40 << 20, s(0, 0), n(10, 400), 40 << 20},
		{"no reads: keep", 40 << 20, s(5, 50), n(5, 50), 40 << 20},
		{"counter reset: keep", 40 << 20, s(100, 5000), n(3, 10), 40 << 20},
		{"disk missing: keep", 40 << 20, s(0, 0), diskstats.Sample{Time: time.Unix(5, 0)}, 40 << 20},
		{"exactly MaxAwait: keep", 40 << 20, s(0, 0), n(10, 600), 40 << 20},
		{"just above: halve", 40 << 20, s(0, 0), n(10, 610), 20 << 20},
		// read ticks printed as 32 bits wrap: 4294966796 -> 500 is 1000 ms for 10 reads
		{"32-bit tick wrap: 100 ms, halve", 40 << 20, s(0, 1<<32-500), n(10, 500), 20 << 20},
		{"no interval: keep", 40 << 20, s(0, 0), counters(0, 10, 1000), 40 << 20},
	}
	for _, c := range cases {
		if d := rule.Next(c.cur, []string{"sda"}, c.prev, c.now); d.Rate != c.want {
			t.Errorf("%s: rate %d, want %d (%s)", c.name, d.Rate, c.want, d.Reason)
		}
	}
}
