package lvm

import (
	"strings"
	"testing"
)

// Issue 18: a size that changed by less than the rounding read "5.46 TiB,
// planned 5.46 TiB"; both figures carry their bytes now.
func TestApplyStaleSizeShowsBytesWhenTheRoundedFiguresAgree(t *testing.T) {
	l := newLab(t, PlanOptions{})
	l.host.Disks[0].Size -= 4096 // 4 KiB less: both round to 256 MiB
	_, err := l.apply(t, ApplyOptions{Yes: true, DryRun: true})
	if err == nil || !strings.Contains(err.Error(), "bytes), planned ") {
		t.Fatalf("err %v", err)
	}
	msg := err.Error()[strings.Index(err.Error(), "size "):]
	if now, planned, _ := strings.Cut(strings.SplitN(msg, "\n", 2)[0], ", planned "); now == "size "+planned {
		t.Errorf("the two sizes read the same: %s", msg)
	}
}

// Issue 18: the example plan applied on another machine said "... is not
// on vm any more" once per device; it says once whose plan it is.
func TestApplyAnotherHostsPlanSaysSoOnce(t *testing.T) {
	l := newLab(t, PlanOptions{})
	l.plan.Host = "tb-ref"
	for i := range l.host.Disks {
		l.host.Disks[i].Serial += "-other"
		l.host.Disks[i].WWN = ""
	}
	l.host.Hostname = "vm"
	_, err := l.apply(t, ApplyOptions{DryRun: true})
	if err == nil {
		t.Fatal("applied another host's plan")
	}
	msg := err.Error()
	if strings.Count(msg, "this plan was made for host tb-ref (this is vm)") != 1 || strings.Contains(msg, "any more") {
		t.Errorf("message:\n%s", msg)
	}
	if len(l.lvm.Calls) != 0 {
		t.Errorf("ran %v", l.lvm.Calls)
	}
}
