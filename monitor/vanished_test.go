package monitor

import (
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/diskstats"
	"github.com/tbhost/tbhost/lvm"
)

// A member removed in the middle of monitor check's window (seen in the
// migrate lab run: `echo 1 > /sys/block/sdc/device/delete` during the
// post-cutover watch) was reported UNKNOWN, "counters went backwards",
// with sdc still ok. The topology at the window's end says it is gone:
// CRITICAL, naming the disk; the other members are still judged.
func TestMemberVanishedDuringTheWindowIsCritical(t *testing.T) {
	members := func(gone bool) []Member {
		var ms []Member
		for i, d := range []string{"sdb", "sdc", "sdd"} {
			m := Member{Disk: d, Images: []string{"tables_rimage_" + string(rune('0'+i))}}
			if gone && d == "sdc" {
				m = Member{Images: m.Images, Missing: true}
			}
			ms = append(ms, m)
		}
		return ms
	}
	start := []Array{{Name: "vg-hdd/tables", Kind: "lvm", Level: "raid5", Images: 3, Members: members(false), IntegrityMismatches: -1}}
	end := []Array{{Name: "vg-hdd/tables", Kind: "lvm", Level: "raid5", Images: 3, Members: members(true), Degraded: true, IntegrityMismatches: -1,
		Problems: []Problem{{Severity: Critical, Code: lvm.CodeMemberGone, Text: "vg-hdd/tables: a PV is missing"}}}}
	// three members reading evenly; sdc's counters vanish after the second sample
	line := func(d string, reads int) string {
		return "   8       0 " + d + " " + itoa(reads) + " 0 " + itoa(reads*8) + " " + itoa(reads) + " 0 0 0 0 0 " + itoa(reads) + " " + itoa(reads) + " 0 0 0 0 0 0\n"
	}
	var samples []Sample
	for k := 0; k < 4; k++ {
		text := line("sdb", 1000*k) + line("sdd", 1000*k)
		if k < 2 {
			text += line("sdc", 1000*k)
		}
		samples = append(samples, mustSample(t, text, k))
	}
	before := Evaluate(start, samples, DefaultThresholds())
	after := Evaluate(WithVanished(start, end), samples, DefaultThresholds())
	if after.Status != Critical {
		t.Fatalf("status %v (before the fix: %v), want CRITICAL:\n%+v", after.Status, before.Status, after)
	}
	text := ""
	for _, a := range after.Arrays {
		for _, p := range a.Problems {
			text += p.Text + "\n"
		}
		for _, m := range a.Members {
			if m.Member.Images[0] == "tables_rimage_1" && m.Flag != FlagMissing {
				t.Errorf("sdc flag %q, want missing", m.Flag)
			}
		}
	}
	if !strings.Contains(text, "sdc (tables_rimage_1) vanished during the window") {
		t.Errorf("problems do not name the vanished disk:\n%s", text)
	}
	// nothing vanished: the arrays are unchanged
	if same := WithVanished(start, start); same[0].Degraded || len(same[0].Problems) != 0 || same[0].Members[1].Missing {
		t.Errorf("no change expected: %+v", same[0])
	}
}

func mustSample(t *testing.T, text string, k int) Sample {
	t.Helper()
	s, err := diskstats.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	s.Time = time.Unix(1733000000+int64(5*k), 0)
	return s
}

// A check while an integrity re-initialisation runs (lab case c) said it
// twice, "13.56% done" from the window's start and "20.34% done" from its
// end. The end's progress replaces the start's; other findings still add.
func TestProgressFindingSaidOnceWithTheLatestPercent(t *testing.T) {
	reinit := func(pct string) Problem {
		return Problem{Severity: Warning, Code: lvm.CodeIntegrityReinit,
			Text: "vg-hdd/tables: dm-integrity re-initialising 6 images, " + pct + "% done (skew is not judged meanwhile)"}
	}
	other := Problem{Severity: Warning, Code: lvm.CodePVUnused, Text: "vg-hdd/tables: 1 PV(s) of VG vg-hdd hold no image of it"}
	start := []Array{{Name: "vg-hdd/tables", Problems: []Problem{reinit("13.56")}}}
	end := []Array{{Name: "vg-hdd/tables", Problems: []Problem{reinit("20.34"), other}}}
	got := WithVanished(start, end)[0].Problems
	if len(got) != 2 || got[0] != reinit("20.34") || got[1] != other {
		t.Fatalf("problems %+v, want the re-initialisation at 20.34%% once, then the PV finding", got)
	}
	if start[0].Problems[0] != reinit("13.56") {
		t.Errorf("the start's problems were changed in place: %+v", start[0].Problems)
	}
	// A progress finding only the end has is said once too, with its last text.
	twice := []Array{{Name: "vg-hdd/tables", Problems: []Problem{reinit("20.34"), reinit("27.12")}}}
	if got := WithVanished([]Array{{Name: "vg-hdd/tables"}}, twice)[0].Problems; len(got) != 1 || got[0] != reinit("27.12") {
		t.Errorf("problems %+v, want the re-initialisation at 27.12%% once", got)
	}
}
