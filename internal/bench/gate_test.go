package bench

import (
	"strings"
	"testing"
)

func TestParseGate(t *testing.T) {
	for s, want := range map[string]Gate{
		"p99<=1.0*old":       {Text: "p99<=1.0*old", Stat: "p99", Factor: 1, Ref: "old"},
		"p99.9 <= 1.1 * old": {Text: "p99.9 <= 1.1 * old", Stat: "p99.9", Factor: 1.1, Ref: "old"},
		"p50<old":            {Text: "p50<old", Stat: "p50", Strict: true, Factor: 1, Ref: "old"},
		"max<=250ms":         {Text: "max<=250ms", Stat: "max", Abs: 250},
		"mean<=1.5s":         {Text: "mean<=1.5s", Stat: "mean", Abs: 1500},
	} {
		g, err := ParseGate(s)
		if err != nil || g != want {
			t.Errorf("%q: %+v %v, want %+v", s, g, err, want)
		}
	}
	for _, bad := range []string{"", "p98<=old", "p99>=old", "p99<=", "p99<=0ms", "p99<=-1*old", "p99<=0*old", "p99<=1.0*Old", "p99<=x y", "p99<=1.0*old; rm -rf /"} {
		if _, err := ParseGate(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseTarget(t *testing.T) {
	for s, want := range map[string][2]string{
		"http://127.0.0.1:9090":     {"http://127.0.0.1:9090", "http://127.0.0.1:9090"},
		"old=http://old:9090":       {"old", "http://old:9090"},
		"http://h/standard?fen=a=b": {"http://h/standard?fen=a=b", "http://h/standard?fen=a=b"},
	} {
		n, u, err := ParseTarget(s)
		if err != nil || n != want[0] || u != want[1] {
			t.Errorf("%q: %q %q %v", s, n, u, err)
		}
	}
	if _, _, err := ParseTarget("Old Host=http://x"); err == nil {
		t.Error("a name with a space accepted")
	}
}

// The gate's arithmetic, figures written by hand: new p99 12 ms vs old
// 10 ms fails p99<=1.0*old (limit 10) and passes p99<=1.25*old (limit
// 12.5); p99.9 22 vs 20 passes 1.1*old (limit 22, <=) and fails < 1.1*old.
func TestCheckGates(t *testing.T) {
	runs := []Run{
		{Name: "old", Latency: Latency{Count: 100, P99: 10, P999: 20}},
		{Name: "new", Latency: Latency{Count: 100, P99: 12, P999: 22}},
	}
	for _, c := range []struct {
		gate string
		pass bool
		word string
	}{
		{"p99<=1.0*old", false, "FAILS: p99 new 12.000 ms vs old 10.000 ms (limit 10.000 ms"},
		{"p99<=1.25*old", true, "passes"},
		{"p99.9<=1.1*old", true, "limit 22.000 ms"},
		{"p99.9<1.1*old", false, "FAILS"},
		{"p99<=11ms", false, "p99 new 12.000 ms (limit 11.000 ms)"},
	} {
		g, err := ParseGate(c.gate)
		if err != nil {
			t.Fatal(err)
		}
		res, err := CheckGates([]Gate{g}, runs)
		if err != nil {
			t.Fatal(err)
		}
		last := res[len(res)-1]
		if last.Target != "new" || last.Pass != c.pass || !strings.Contains(last.Message, c.word) {
			t.Errorf("%s: %+v", c.gate, res)
		}
	}
	// a relative gate skips its reference; an absolute one checks every target
	abs, _ := ParseGate("p99<=11ms")
	if res, _ := CheckGates([]Gate{abs}, runs); len(res) != 2 || !res[0].Pass || res[1].Pass {
		t.Errorf("absolute gate on both: %+v", res)
	}
	typo, _ := ParseGate("p99<=1.0*olld")
	if _, err := CheckGates([]Gate{typo}, runs); err == nil || !strings.Contains(err.Error(), "olld") {
		t.Errorf("a gate naming no target: %v", err)
	}
	empty := []Run{{Name: "old", Latency: Latency{Count: 100, P99: 10}}, {Name: "new"}}
	rel, _ := ParseGate("p99<=1.0*old")
	if res, _ := CheckGates([]Gate{rel}, empty); len(res) != 1 || res[0].Pass {
		t.Errorf("a target without measured requests passed: %+v", res)
	}
}
