package monitor

import (
	"bytes"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// perfToken is one Nagios plugin perfdata item (Nagios Plugin Development
// Guidelines, "Performance data"): 'label'=value[UOM];[warn];[crit];[min];[max],
// the value a number or U.
var perfToken = regexp.MustCompile(`^'([^'=]+)'=(-?[0-9]+(?:\.[0-9]+)?|U)(s|ms|us|%|B|KB|MB|TB|c)?((?:;[-0-9.:~@]*){0,4})$`)

// statusLine writes the report as text and splits its first line at " | ".
func statusLine(t *testing.T, r Report) (status string, perf []string) {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	first := strings.SplitN(b.String(), "\n", 2)[0]
	if strings.Count(first, "|") > 1 && !strings.Contains(first, " | ") {
		t.Fatalf("first line %q", first)
	}
	status, pd, ok := strings.Cut(first, " | ")
	if strings.Contains(status, "|") {
		t.Errorf("status part %q holds a |: Nagios would take the rest as perfdata", status)
	}
	if !ok {
		return status, nil
	}
	return status, splitPerf(t, pd)
}

// splitPerf splits perfdata into items at the spaces outside quoted labels.
func splitPerf(t *testing.T, pd string) []string {
	t.Helper()
	var out []string
	for pd != "" {
		end := 0
		if strings.HasPrefix(pd, "'") {
			q := strings.Index(pd[1:], "'")
			if q < 0 {
				t.Fatalf("unterminated label in %q", pd)
			}
			end = q + 2
		}
		if sp := strings.IndexByte(pd[end:], ' '); sp >= 0 {
			end += sp
		} else {
			end = len(pd)
		}
		out = append(out, pd[:end])
		pd = strings.TrimPrefix(pd[end:], " ")
	}
	return out
}

// parsePerf checks every token's syntax and returns label -> value, UOM and thresholds.
func parsePerf(t *testing.T, tokens []string) map[string][3]string {
	t.Helper()
	out := map[string][3]string{}
	for _, tok := range tokens {
		m := perfToken.FindStringSubmatch(tok)
		if m == nil {
			t.Errorf("not Nagios perfdata: %q", tok)
			continue
		}
		out[m[1]] = [3]string{m[2], m[3], m[4]}
	}
	return out
}

func TestPerfdataOnTheStatusLine(t *testing.T) {
	r := checkTree(t, captured(t, "raid5-no-stripes"))
	status, tokens := statusLine(t, r)
	if status != r.StatusLine() {
		t.Errorf("status part %q, want %q", status, r.StatusLine())
	}
	if len(r.Arrays) != 2 || len(tokens) != 4*(len(r.Arrays[0].Members)+len(r.Arrays[1].Members)) {
		t.Fatalf("%d perfdata items for 2 arrays: %q", len(tokens), tokens)
	}
	perf := parsePerf(t, tokens)
	// the prefix array read nothing: 0 reads/s, no share of nothing
	if v := perf["vg-nvme/prefix nvme0n1 reads"]; v[0] != "0" {
		t.Errorf("idle prefix reads %q", v)
	}
	if v := perf["vg-nvme/prefix nvme0n1 share"]; v[0] != "U" {
		t.Errorf("idle prefix share %q, want U", v)
	}
	a := r.Arrays[0]
	shares := 0.0
	for _, m := range a.Members {
		reads, share := perf["vg-hdd/tables "+m.Disk+" reads"], perf["vg-hdd/tables "+m.Disk+" share"]
		if reads[1] != "" || reads[2] != ";;;0" || share[1] != "%" || share[2] != ";;;0;100" {
			t.Errorf("%s: units/thresholds %q %q", m.Disk, reads, share)
		}
		got, err := strconv.ParseFloat(reads[0], 64)
		if err != nil || math.Abs(got-m.Rates.ReadsPerS) > 0.005 {
			t.Errorf("%s reads %q, report %.3f", m.Disk, reads[0], m.Rates.ReadsPerS)
		}
		pct, err := strconv.ParseFloat(share[0], 64)
		if err != nil || math.Abs(pct-100*m.Share) > 0.005 {
			t.Errorf("%s share %q, report %.4f", m.Disk, share[0], m.Share)
		}
		await, util := perf["vg-hdd/tables "+m.Disk+" r_await"], perf["vg-hdd/tables "+m.Disk+" util"]
		if util[1] != "%" || util[2] != ";;;0;100" || await[2] != ";;;0" {
			t.Errorf("%s: units/thresholds %q %q", m.Disk, await, util)
		}
		if m.Rates.ReadsPerS > 0 {
			ms, err := strconv.ParseFloat(await[0], 64)
			if err != nil || await[1] != "ms" || math.Abs(ms-m.Rates.RAwaitMS) > 0.005 {
				t.Errorf("%s r_await %q, report %.3f ms", m.Disk, await, m.Rates.RAwaitMS)
			}
		} else if await[0] != "U" {
			t.Errorf("%s read nothing: r_await %q, want U", m.Disk, await)
		}
		if u, err := strconv.ParseFloat(util[0], 64); err != nil || math.Abs(u-m.Rates.UtilPercent) > 0.005 {
			t.Errorf("%s util %q, report %.3f", m.Disk, util, m.Rates.UtilPercent)
		}
		if m.Flag == FlagIdle && got > 0.5 {
			t.Errorf("idle %s reads %g/s", m.Disk, got)
		}
		shares += pct
	}
	if math.Abs(shares-100) > 0.05 {
		t.Errorf("shares add up to %.2f%%", shares)
	}
}

func TestPerfdataUndeterminedWithoutRates(t *testing.T) {
	// one saved sample and a member without a disk: nothing measured
	r := checkTree(t, captured(t, "raid5-missing-member-boot"), "vg-hdd/tables")
	_, tokens := statusLine(t, r)
	perf := parsePerf(t, tokens)
	if len(perf) != 24 {
		t.Fatalf("%d items: %q", len(perf), tokens)
	}
	for label, v := range perf {
		if v[0] != "U" {
			t.Errorf("%s = %s, want U (no rates)", label, v[0])
		}
	}
	if _, ok := perf["vg-hdd/tables missing:tables_rimage_2 reads"]; !ok {
		t.Errorf("no item for the missing member: %q", tokens)
	}
}

func TestPerfdataQuotesLabelsAndKeepsOneBar(t *testing.T) {
	r := Report{Status: Warning, Summary: "lvs said a|b", Arrays: []ArrayResult{{
		Array: Array{Name: "vg=x/it's"}, Intervals: 1, ReadsPerS: 12.5,
		Members: []MemberResult{
			{Member: Member{Disk: "sda"}, Rates: Rates{ReadsPerS: 12.5}, Share: 1, Flag: FlagOK},
			{Member: Member{Missing: true, Images: []string{"it_rimage_1"}}, Flag: FlagMissing},
		},
	}}}
	status, tokens := statusLine(t, r)
	if status != "WARNING: lvs said a/b" {
		t.Errorf("status part %q", status)
	}
	perf := parsePerf(t, tokens)
	if v := perf["vg_x/it_s sda reads"]; v[0] != "12.5" {
		t.Errorf("reads %q in %q", v, tokens)
	}
	if v := perf["vg_x/it_s sda share"]; v[0] != "100" || v[1] != "%" {
		t.Errorf("share %q in %q", v, tokens)
	}
	if v := perf["vg_x/it_s missing:it_rimage_1 reads"]; v[0] != "U" {
		t.Errorf("missing member %q in %q", v, tokens)
	}

	// no arrays: no perfdata, no " | "
	var b bytes.Buffer
	none := Evaluate(nil, nil, DefaultThresholds())
	if err := none.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "|") || !strings.HasPrefix(b.String(), "UNKNOWN: no RAID arrays") {
		t.Errorf("no arrays: %q", b.String())
	}
}
