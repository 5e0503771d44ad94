package monitor

import (
	"encoding/json"
	"testing"

	"github.com/tbhost/tbhost/lvm"
)

// monitor's problems carry lvm's finding codes; alerts and scripts decide on them.
func TestProblemsCarryCodes(t *testing.T) {
	for _, c := range []struct {
		root  string
		codes []lvm.Code
	}{
		{"raid5-member-dropped", []lvm.Code{lvm.CodeImageMissing, lvm.CodeRAIDDegraded}},
		{"raid5-missing-member-boot", []lvm.Code{lvm.CodeImageMissing, lvm.CodeRAIDDegraded, lvm.CodeLVInactive}},
		{"raid5-no-stripes", []lvm.Code{lvm.CodeMemberIdle}},
	} {
		r := checkTree(t, captured(t, c.root), "vg-hdd/tables")
		var got []lvm.Code
		seen := map[lvm.Code]bool{}
		for _, p := range r.Arrays[0].Problems {
			if p.Severity != OK && p.Code == "" {
				t.Errorf("%s: problem without a code: %q", c.root, p.Text)
			}
			seen[p.Code] = true
			got = append(got, p.Code)
		}
		for _, want := range c.codes {
			if !seen[want] {
				t.Errorf("%s: codes %v lack %s", c.root, got, want)
			}
		}
		if !r.Arrays[0].Degraded != (c.root == "raid5-no-stripes") {
			t.Errorf("%s: degraded %v", c.root, r.Arrays[0].Degraded)
		}
	}
}

// topology --json keeps Severity a number, as before the one status type.
func TestProblemJSONKeepsSeverityNumber(t *testing.T) {
	b, err := json.Marshal(Problem{Severity: Critical, Text: "x", Code: lvm.CodeImageMissing})
	if err != nil || string(b) != `{"severity":2,"text":"x","code":"image-missing"}` {
		t.Errorf("%s %v", b, err)
	}
}
