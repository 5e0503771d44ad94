package monitor

import (
	"strings"
	"testing"
)

// Issue 14: lvm2 2.03.16 refuses vgchange -ay for raid+integrity with a
// member missing at boot; monitor check must advise tbhost lvm replace.
func TestMissingAtBootAdvisesReplaceNotVgchange(t *testing.T) {
	r := checkTree(t, captured(t, "raid5-missing-member-boot"), "vg-hdd/tables")
	text := ""
	for _, p := range r.Arrays[0].Problems {
		text += p.Text + "\n"
	}
	if strings.Contains(text, "vgchange -ay vg-hdd") || !strings.Contains(text, "tbhost lvm replace --dry-run vg-hdd/tables --old missing") {
		t.Errorf("advice:\n%s", text)
	}
}
