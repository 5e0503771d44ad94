package monitor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/lvm"
)

// The VM lab's captures of issue 20 (internal/lab TestMonitorSlowMemberScenario,
// TBHOST_LAB_CAPTURE_SLOW=1): raid5 --stripes 5 over 6 HDDs under 8 random
// 4 KiB O_DIRECT readers, HDD3 capped by qemu at 15 read IOPS; and the same
// array shape without the cap under the same load. 7 samples 5 s apart.
func TestCapturedSlowMember(t *testing.T) {
	check := func(name, array string) Report {
		t.Helper()
		r, err := Check(context.Background(), Env{Root: captured(t, name)}, CheckOptions{Names: []string{array},
			For: 30 * time.Second, Interval: 5 * time.Second, Thresholds: DefaultThresholds()})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := check("raid5-slow-member", "vg-hdd/tables")
	if r.Status != Warning && r.Status != Critical {
		t.Errorf("capped: %s, want WARNING or CRITICAL: %s", r.Status, r.Summary)
	}
	if got := flaggedIDs(r, "vg-hdd/tables", FlagSlow); strings.Join(got, ",") != "wwn-0x5000c50d3b985ec0" {
		t.Errorf("slow %v, want exactly HDD3 (wwn-0x5000c50d3b985ec0): %s", got, r.Summary)
	}
	if !strings.Contains(r.Summary, "serial HDD3") {
		t.Errorf("summary %q lacks the serial", r.Summary)
	}
	r = check("raid5-slow-member-uncapped", "vg-fast/tables")
	if r.Status != OK || len(flaggedIDs(r, "vg-fast/tables", FlagSlow)) != 0 {
		t.Errorf("uncapped: %s: %s", r.Status, r.Summary)
	}
}

// The same lab boot's hot-table capture (raid5-hot-table): vg-fast/tables
// without a cap, ext4 on it, four readers re-reading one table file with
// 4 KiB O_DIRECT reads (KRvKN.rtbw, 100 KB: 3 chunks, so 3 members) plus 3
// random 4 KiB O_DIRECT readers of the whole LV. Uneven but legitimate
// (sdg ~1385 reads/s at 0.8 ms, the light members ~47 at 1.2 ms): the rate
// rule flags the skew (CRITICAL over/under), no member is slow.
func TestCapturedHotTable(t *testing.T) {
	r, err := Check(context.Background(), Env{Root: captured(t, "raid5-hot-table")}, CheckOptions{Names: []string{"vg-fast/tables"},
		For: 30 * time.Second, Interval: 5 * time.Second, Thresholds: DefaultThresholds()})
	if err != nil {
		t.Fatal(err)
	}
	if got := flaggedIDs(r, "vg-fast/tables", FlagSlow); len(got) != 0 {
		t.Errorf("slow %v under a hot table: %s", got, r.Summary)
	}
	for _, a := range r.Arrays {
		for _, p := range a.Problems {
			if p.Code == lvm.CodeMemberSlow {
				t.Errorf("slow finding under a hot table: %s", p.Text)
			}
		}
	}
	if len(r.Arrays) != 1 || len(r.Arrays[0].Members) != 6 {
		t.Fatalf("want vg-fast/tables with 6 members: %+v", r.Arrays)
	}
	// the capture is uneven: the hottest member reads over 3x the members'
	// mean by over 60 % (CRITICAL over), the least-read one under half the mean, and
	// the hot member was judged (above the slow floor) against siblings
	// that read above it too
	ms := r.Arrays[0].Members
	hot, cold := ms[0], ms[0]
	for _, m := range ms {
		if m.Rates.ReadsPerS > hot.Rates.ReadsPerS {
			hot = m
		}
		if m.Rates.ReadsPerS < cold.Rates.ReadsPerS {
			cold = m
		}
	}
	th := DefaultThresholds()
	if hot.Deviation < th.Crit || cold.Deviation > -0.5 || cold.Rates.ReadsPerS < th.SlowMinIOPS {
		t.Errorf("capture not the hot-table load: hottest %s %+.0f%%, least-read %s %+.0f%% at %.1f reads/s",
			hot.Disk, 100*hot.Deviation, cold.Disk, 100*cold.Deviation, cold.Rates.ReadsPerS)
	}
	if r.Status != Critical || hot.Flag != FlagOver {
		t.Errorf("status %s, hottest %s flagged %q: want CRITICAL with it over (read-rate skew): %s", r.Status, hot.Disk, hot.Flag, r.Summary)
	}
	// monitor serve judges every interval alone (no persistence): no
	// interval of the capture has a slow member either
	e := &Exporter{Env: Env{Root: captured(t, "raid5-hot-table")}, Names: []string{"vg-fast/tables"}, Interval: 5 * time.Second,
		TopologyEvery: time.Minute, Thresholds: th}
	for k := 1; k <= 7; k++ {
		stepAll(t, e, 1)
		if k == 1 {
			continue // one sample: no interval yet
		}
		n := 0
		for _, line := range strings.Split(scrape(t, e), "\n") {
			if strings.HasPrefix(line, "tbhost_array_member_slow{") {
				n++
				if !strings.HasSuffix(line, "} 0") {
					t.Errorf("interval %d: %s", k-1, line)
				}
			}
		}
		if n != 6 {
			t.Errorf("interval %d: %d tbhost_array_member_slow series, want 6", k-1, n)
		}
	}
	t.Logf("%s; hottest %s %.1f reads/s at r_await %.2f ms (x%.1f its siblings'), least-read %s %.1f reads/s at %.2f ms",
		r.Summary, hot.Disk, hot.Rates.ReadsPerS, hot.Rates.RAwaitMS, hot.AwaitRatio, cold.Disk, cold.Rates.ReadsPerS, cold.Rates.RAwaitMS)
}
