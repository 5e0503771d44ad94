package integritycmd

import (
	"strings"
	"testing"

	"github.com/tbhost/tbhost/integrity"
)

// An array not activated (a member missing at boot) has no sync state and
// no readable raid_mismatch_count (JSON: "" and -1): the array's line said
// "sync ; raid_mismatch_count -1".
func TestStatusTextInactiveArraySaysUnknown(t *testing.T) {
	a := integrity.ArrayStatus{LV: "vg-hdd/tables", SegType: "raid5", IntegrityMode: "journal", IntegrityBlockSize: 512,
		Health: "partial", SyncPercent: -1, RaidMismatchCount: -1,
		Images: []integrity.ImageStatus{{Name: "tables_rimage_0", SegType: "integrity", Disks: []string{"/dev/sda"}, Mismatches: -1}}}
	var b strings.Builder
	if err := printStatus(&b, []integrity.ArrayStatus{a}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "-1") || strings.Contains(out, "sync ;") || !strings.Contains(out, "sync unknown; raid_mismatch_count unknown") {
		t.Errorf("an inactive array's unknown sync state and counter in the text:\n%s", out)
	}
	a.SyncAction, a.SyncPercent, a.RaidMismatchCount = "idle", 100, 0
	b.Reset()
	if err := printStatus(&b, []integrity.ArrayStatus{a}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "sync idle 100.00%; raid_mismatch_count 0") {
		t.Errorf("an active array's sync state and counter:\n%s", b.String())
	}
}
