package integrity

import (
	"testing"
	"time"
)

func sampleFixture(t *testing.T, name string) map[string]DiskCounters {
	t.Helper()
	s, err := ProcDiskstats{Root: "testdata/diskstats/" + name}.Sample()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var hdds = []string{"sda", "sdb", "sdc", "sdd", "sde", "sdf"}

func TestBackoffFromRealDiskstatsLayout(t *testing.T) {
	t0, t1 := sampleFixture(t, "t0"), sampleFixture(t, "t1")
	if t0["sdc"].Reads != 58692 || t0["sdc"].ReadTicksMs != 280957 {
		t.Fatalf("parsed %+v", t0["sdc"])
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
	s := func(reads, ticks uint64) map[string]DiskCounters {
		return map[string]DiskCounters{"sda": {reads, ticks}}
	}
	cases := []struct {
		name      string
		cur       int64
		prev, now map[string]DiskCounters
		want      int64
	}{
		{"floor at MinRate", 10 << 20, s(0, 0), s(10, 1000), 8 << 20},
		{"in the band: keep", 40 << 20, s(0, 0), s(10, 400), 40 << 20},
		{"no reads: keep", 40 << 20, s(5, 50), s(5, 50), 40 << 20},
		{"counter reset: keep", 40 << 20, s(100, 5000), s(3, 10), 40 << 20},
		{"disk missing: keep", 40 << 20, s(0, 0), map[string]DiskCounters{}, 40 << 20},
		{"exactly MaxAwait: keep", 40 << 20, s(0, 0), s(10, 600), 40 << 20},
		{"just above: halve", 40 << 20, s(0, 0), s(10, 610), 20 << 20},
	}
	for _, c := range cases {
		if d := rule.Next(c.cur, []string{"sda"}, c.prev, c.now); d.Rate != c.want {
			t.Errorf("%s: rate %d, want %d (%s)", c.name, d.Rate, c.want, d.Reason)
		}
	}
}
