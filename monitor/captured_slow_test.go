package monitor

import (
	"context"
	"strings"
	"testing"
	"time"
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
