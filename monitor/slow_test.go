package monitor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs/blockdevice"

	"github.com/tbhost/tbhost/lvm"
)

// ioRow is what one disk does in one 5 s interval.
type ioRow struct {
	reads   uint64
	awaitMS float64 // per read
	util    float64 // percent
}

// latencySeq builds samples 5 s apart from per-interval, per-disk activity.
func latencySeq(disks []string, rows [][]ioRow) []Sample {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	cum := make([]blockdevice.IOStats, len(disks))
	out := []Sample{}
	snap := func(k int) {
		s := Sample{Time: t0.Add(time.Duration(k) * 5 * time.Second), Devices: map[string]blockdevice.IOStats{}}
		for i, d := range disks {
			s.Devices[d] = cum[i]
		}
		out = append(out, s)
	}
	snap(0)
	for k, row := range rows {
		for i := range disks {
			ticks := uint64(float64(row[i].reads)*row[i].awaitMS + 0.5)
			cum[i].ReadIOs += row[i].reads
			cum[i].ReadSectors += row[i].reads * 8
			cum[i].ReadTicks += ticks
			cum[i].IOsTotalTicks += uint64(row[i].util * 50) // % of 5000 ms
			cum[i].WeightedIOTicks += ticks
		}
		snap(k + 1)
	}
	return out
}

// repeat makes n intervals of the same row.
func repeat(n int, row []ioRow) [][]ioRow {
	out := make([][]ioRow, n)
	for k := range out {
		out[k] = row
	}
	return out
}

func slowOnly(ar ArrayResult) []string {
	var out []string
	for _, m := range ar.Members {
		if m.Flag == FlagSlow {
			out = append(out, m.Disk)
		}
	}
	return out
}

func withSerials(a Array) Array {
	for i := range a.Members {
		a.Members[i].Serial = "SER-" + strings.ToUpper(a.Members[i].Disk)
	}
	return a
}

// The lab reading: sdc capped at 15 read IOPS by qemu waits half a
// second per read while its siblings answer in 0.6 ms, at the same rate.
// The rate-skew detector says balanced; latency must say CRITICAL.
func TestSlowMemberIsCriticalNamingIt(t *testing.T) {
	fast := ioRow{80, 0.6, 1.3}
	row := []ioRow{fast, fast, {75, 506.6, 100}, fast, fast, fast}
	r := Evaluate([]Array{withSerials(array(six...))}, latencySeq(six, repeat(12, row)), DefaultThresholds())
	ar := r.Arrays[0]
	if r.Status != Critical {
		t.Fatalf("status %s, want CRITICAL: %s", r.Status, r.Summary)
	}
	if got := slowOnly(ar); len(got) != 1 || got[0] != "sdc" {
		t.Fatalf("slow members %v, want exactly [sdc] (%s)", got, flags(ar))
	}
	var p *Problem
	for i := range ar.Problems {
		if ar.Problems[i].Code == lvm.CodeMemberSlow {
			if p != nil {
				t.Fatalf("two slow findings: %v", ar.Problems)
			}
			p = &ar.Problems[i]
		}
	}
	if p == nil || p.Severity != Critical {
		t.Fatalf("no CRITICAL member-slow finding: %v", ar.Problems)
	}
	for _, want := range []string{"sdc", "SER-SDC", "a_rimage_sdc", "r_await 506.6 ms", "%util 100", "median r_await 0.6 ms", "tbhost lvm replace vg/a --old /dev/sdc --new NEWDISK", "id-sdc"} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("finding lacks %q: %s", want, p.Text)
		}
	}
	m := ar.Members[2]
	if m.AwaitRatio < 800 || m.SiblingsAwaitMS != 0.6 {
		t.Errorf("ratio %.1f siblings %.2f ms", m.AwaitRatio, m.SiblingsAwaitMS)
	}
	if j := r.JSON(); j.Arrays[0].Members[2].Flag != "slow" || j.Arrays[0].Members[2].RAwaitMS != 506.6 {
		t.Errorf("json member %+v", j.Arrays[0].Members[2])
	}
}

// 4x the siblings' latency, for the whole window: WARNING, not CRITICAL.
func TestModeratelySlowIsWarning(t *testing.T) {
	hdd := ioRow{60, 12, 70}
	// the same reads/s as its siblings (NCQ keeps up), 4x the wait: the
	// busy time per I/O can only grow 1/0.7 here, the reads ratio says "not hot"
	row := []ioRow{hdd, hdd, hdd, hdd, {60, 48, 100}, hdd}
	r := Evaluate([]Array{array(six...)}, latencySeq(six, repeat(6, row)), DefaultThresholds())
	if got := slowOnly(r.Arrays[0]); len(got) != 1 || got[0] != "sde" || r.Arrays[0].Members[4].Severity != Warning {
		t.Fatalf("slow %v, severity %s: %s", got, r.Arrays[0].Members[4].Severity, r.Summary)
	}
	if r.Status != Warning {
		t.Errorf("status %s (the rate skew of sde is WARNING at most here): %s", r.Status, r.Summary)
	}
	// saturated and capped: it reads less, each I/O keeps it busy longer
	row[4] = ioRow{30, 48, 100}
	r = Evaluate([]Array{array(six...)}, latencySeq(six, repeat(6, row)), DefaultThresholds())
	if got := slowOnly(r.Arrays[0]); len(got) != 1 || got[0] != "sde" || r.Arrays[0].Members[4].Severity != Warning {
		t.Fatalf("capped: slow %v, severity %s: %s", got, r.Arrays[0].Members[4].Severity, r.Summary)
	}
}

// One hot table: one member serves three times the reads of its siblings,
// so it queues and each read waits longer, but each I/O keeps the disk no
// busier than on its siblings. That is load, not a failing disk: the rate
// skew may be flagged (over), latency must not be.
func TestHotTableIsNotSlow(t *testing.T) {
	cool := ioRow{40, 9, 36}   // 9 ms busy per I/O
	hot := ioRow{120, 40, 100} // queueing: 40 ms per read, 8.3 ms busy per I/O
	rows := repeat(12, []ioRow{cool, cool, hot, cool, cool, cool})
	r := Evaluate([]Array{array(six...)}, latencySeq(six, rows), DefaultThresholds())
	if got := slowOnly(r.Arrays[0]); len(got) != 0 {
		t.Fatalf("hot member flagged slow: %v (%s)", got, r.Summary)
	}
	for _, p := range r.Arrays[0].Problems {
		if p.Code == lvm.CodeMemberSlow {
			t.Errorf("slow finding for a hot member: %s", p.Text)
		}
	}
	if r.Arrays[0].Members[2].Flag != FlagOver {
		t.Errorf("hot member flag %q, want over (rate skew still judged)", r.Arrays[0].Members[2].Flag)
	}
	// the same hot member, slightly busier per I/O than the rest (bigger
	// reads), still below the guard
	rows = repeat(12, []ioRow{cool, cool, {90, 45, 100}, cool, cool, cool})
	r = Evaluate([]Array{array(six...)}, latencySeq(six, rows), DefaultThresholds())
	if got := slowOnly(r.Arrays[0]); len(got) != 0 {
		t.Fatalf("hot member (11 ms per I/O) flagged slow: %v", got)
	}
}

// Idle arrays never flag: a slow disk under a trickle of reads is not judged.
func TestSlowNeedsTraffic(t *testing.T) {
	row := []ioRow{{10, 0.5, 0.1}, {10, 0.5, 0.1}, {10, 300, 60}, {10, 0.5, 0.1}, {10, 0.5, 0.1}, {10, 0.5, 0.1}} // 2 reads/s each
	r := Evaluate([]Array{array(six...)}, latencySeq(six, repeat(6, row)), DefaultThresholds())
	if r.Status != OK || len(slowOnly(r.Arrays[0])) != 0 {
		t.Fatalf("below --slow-min-iops: status %s slow %v", r.Status, slowOnly(r.Arrays[0]))
	}
	th := DefaultThresholds()
	th.SlowMinIOPS = 1
	r = Evaluate([]Array{array(six...)}, latencySeq(six, repeat(6, row)), th)
	if got := slowOnly(r.Arrays[0]); len(got) != 1 || got[0] != "sdc" {
		t.Fatalf("--slow-min-iops 1: slow %v, want [sdc]", got)
	}
}

// Persistence: slow in some intervals but not all is not flagged; nor is
// a member judged in fewer than half of the window's intervals.
func TestSlowMustLastTheWholeWindow(t *testing.T) {
	fast, slow := ioRow{80, 0.6, 2}, ioRow{70, 400, 100}
	var rows [][]ioRow
	for k := 0; k < 12; k++ {
		s := slow
		if k == 7 {
			s = fast
		}
		rows = append(rows, []ioRow{fast, fast, fast, s, fast, fast})
	}
	r := Evaluate([]Array{array(six...)}, latencySeq(six, rows), DefaultThresholds())
	if got := slowOnly(r.Arrays[0]); len(got) != 0 {
		t.Fatalf("slow in 11 of 12 intervals flagged: %v", got)
	}
	// slow whenever there was traffic, but traffic in 5 of 12 intervals only
	rows = nil
	for k := 0; k < 12; k++ {
		row := []ioRow{fast, fast, fast, slow, fast, fast}
		if k >= 5 {
			row = []ioRow{{}, {}, {}, {}, {}, {}}
		}
		rows = append(rows, row)
	}
	r = Evaluate([]Array{array(six...)}, latencySeq(six, rows), DefaultThresholds())
	if got := slowOnly(r.Arrays[0]); len(got) != 0 {
		t.Fatalf("judged in 5 of 12 intervals, flagged: %v", got)
	}
	// 6 of 12 is half: flagged
	rows[5] = []ioRow{fast, fast, fast, slow, fast, fast}
	r = Evaluate([]Array{array(six...)}, latencySeq(six, rows), DefaultThresholds())
	if got := slowOnly(r.Arrays[0]); len(got) != 1 {
		t.Fatalf("judged in 6 of 12 intervals, slow in all: %v", got)
	}
}

// Sub-millisecond ratios are noise: 0.4 ms vs 0.1 ms is "4x" but no disk failing.
func TestSubMillisecondRatioIsNotSlow(t *testing.T) {
	nv := ioRow{5000, 0.1, 40}
	row := []ioRow{nv, nv, {2500, 0.9, 90}, nv}
	disks := six[:4]
	r := Evaluate([]Array{array(disks...)}, latencySeq(disks, repeat(6, row)), DefaultThresholds())
	if got := slowOnly(r.Arrays[0]); len(got) != 0 {
		t.Fatalf("0.9 ms vs 0.1 ms flagged slow: %v", got)
	}
}

// The member an integrity scrub reads is left out (Skip): its own load
// makes it slow for everybody else's reads, and that is not a failing disk.
func TestSkippedMemberIsNotJudged(t *testing.T) {
	fast := ioRow{80, 0.6, 1.3}
	row := []ioRow{fast, fast, {75, 506.6, 100}, fast, fast, fast}
	th := DefaultThresholds()
	th.Skip = []string{"/dev/disk/by-id/id-sdc"}
	r := Evaluate([]Array{array(six...)}, latencySeq(six, repeat(6, row)), th)
	ar := r.Arrays[0]
	if r.Status != OK || len(slowOnly(ar)) != 0 || !ar.Members[2].Skipped {
		t.Fatalf("skipped sdc: status %s slow %v skipped %v: %s", r.Status, slowOnly(ar), ar.Members[2].Skipped, r.Summary)
	}
	if len(ar.Notes) != 1 || !strings.Contains(ar.Notes[0], "sdc left out") {
		t.Errorf("notes %q", ar.Notes)
	}
	// the others stay judged: a second slow disk is still found
	row[4] = ioRow{70, 300, 100}
	r = Evaluate([]Array{array(six...)}, latencySeq(six, repeat(6, row)), th)
	if got := slowOnly(r.Arrays[0]); len(got) != 1 || got[0] != "sde" {
		t.Fatalf("slow %v, want [sde]", got)
	}
}

// The balanced lab capture (real LVM raid5 + integrity under load) has no slow member.
func TestCapturedBalancedHasNoSlowMember(t *testing.T) {
	r := checkTree(t, captured(t, "raid5-integrity-stripes5"), "vg-hdd/tables")
	if got := slowOnly(r.Arrays[0]); len(got) != 0 {
		t.Fatalf("slow %v in the balanced capture: %s", got, r.Summary)
	}
}

// The derived slow tree end to end (discover, replay, judge): sdc, and only sdc, is slow.
func TestDerivedSlowTree(t *testing.T) {
	r := checkTree(t, derived(t, "slow"), "vg-hdd/tables")
	ar := r.Arrays[0]
	if r.Status != Warning || strings.Join(slowOnly(ar), ",") != "sdc" {
		t.Fatalf("status %s slow %v: %s", r.Status, slowOnly(ar), r.Summary)
	}
	if !strings.Contains(r.Summary, "sdc (scsi-0QEMU_QEMU_HARDDISK_HDD3, serial") || !strings.Contains(r.Summary, "r_await 30.0 ms") {
		t.Errorf("summary %q", r.Summary)
	}
}

// monitor serve exports the slow verdict and the latencies of the last interval.
func TestExporterSlowMember(t *testing.T) {
	e := &Exporter{Env: Env{Root: derived(t, "slow")}, Names: []string{"vg-hdd/tables"}, Interval: 5 * time.Second, TopologyEvery: time.Minute, Thresholds: DefaultThresholds()}
	stepAll(t, e, 2)
	out := scrape(t, e)
	for _, want := range []string{
		`tbhost_array_member_slow{array="vg-hdd/tables",disk="sdc",id="scsi-0QEMU_QEMU_HARDDISK_HDD3",image="tables_rimage_2"} 1`,
		`tbhost_array_member_slow{array="vg-hdd/tables",disk="sdb",id="scsi-0QEMU_QEMU_HARDDISK_HDD2",image="tables_rimage_1"} 0`,
		`tbhost_array_member_read_await_seconds{array="vg-hdd/tables",disk="sdc",id="scsi-0QEMU_QEMU_HARDDISK_HDD3",image="tables_rimage_2"} 0.03`,
		`tbhost_array_member_read_await_ratio{array="vg-hdd/tables",disk="sdc",id="scsi-0QEMU_QEMU_HARDDISK_HDD3",image="tables_rimage_2"} 7.5`,
		`tbhost_array_member_read_await_ratio{array="vg-hdd/tables",disk="sda",id="wwn-0x5000c500a0000001",image="tables_rimage_0"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Count(out, "tbhost_array_member_slow{") != 6 || strings.Count(out, "} 1\n") < 1 {
		t.Errorf("want a slow verdict per member:\n%s", grepLines(out, "tbhost_array_member_slow"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// --textfile carries the slow flag and the latencies.
func TestTextfileSlowMember(t *testing.T) {
	r := checkTree(t, derived(t, "slow"), "vg-hdd/tables")
	p := t.TempDir() + "/tbhost.prom"
	if err := r.WriteTextfile(context.Background(), p, 1); err != nil {
		t.Fatal(err)
	}
	b, err := readFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`tbhost_monitor_check_member_flag{array="vg-hdd/tables",disk="sdc",flag="slow",id="scsi-0QEMU_QEMU_HARDDISK_HDD3",image="tables_rimage_2"} 1`,
		`tbhost_monitor_check_member_read_await_seconds{array="vg-hdd/tables",disk="sdc",id="scsi-0QEMU_QEMU_HARDDISK_HDD3",image="tables_rimage_2"} 0.03`,
		`tbhost_monitor_check_member_read_await_ratio{array="vg-hdd/tables",disk="sdc",id="scsi-0QEMU_QEMU_HARDDISK_HDD3",image="tables_rimage_2"} 7.5`,
	} {
		if !strings.Contains(b, want) {
			t.Errorf("textfile lacks %s", want)
		}
	}
}

// The reused scratch of the per-interval path gives what a fresh
// CompareLatency gives, member after member.
func TestLatencyScratchReuse(t *testing.T) {
	rs := []Rates{{ReadsPerS: 10, RAwaitMS: 5, UtilPercent: 20}, {ReadsPerS: 30, RAwaitMS: 50, UtilPercent: 90, WritesPerS: 3},
		{ReadsPerS: 12, RAwaitMS: 4, UtilPercent: 18}, {ReadsPerS: 11, RAwaitMS: 300, UtilPercent: 100}, {ReadsPerS: 9, RAwaitMS: 6}}
	var sc latencyScratch
	for i := range rs {
		var sib []Rates
		for j := range rs {
			if j != i {
				sib = append(sib, rs[j])
			}
		}
		if got, want := sc.compare(rs[i], sib), CompareLatency(rs[i], sib); got != want {
			t.Errorf("member %d: reused %+v, fresh %+v", i, got, want)
		}
	}
	if c := CompareLatency(rs[3], rs[:3]); !c.SlowAt(10) || c.IOPSRatio > 1.1 {
		t.Errorf("300 ms vs ~5 ms at the same rate: %+v", c)
	}
}
