package bench

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A Gate is one cutover condition of bench replay: a latency statistic of
// every target must stay under a limit, either relative to another target
// ("p99<=1.0*old": the new host no worse than the old on the tail) or
// absolute ("p99.9<=250ms").
type Gate struct {
	Text   string  `json:"gate"`
	Stat   string  `json:"stat"` // p50, p90, p99, p99.9, max, mean
	Strict bool    `json:"strict"`
	Factor float64 `json:"factor,omitempty"`    // relative: limit = Factor x the reference's statistic
	Ref    string  `json:"reference,omitempty"` // relative: the target compared with
	Abs    float64 `json:"limit_ms,omitempty"`  // absolute limit in ms
}

// GateResult is a gate checked on one target.
type GateResult struct {
	Gate    string  `json:"gate"`
	Target  string  `json:"target"`
	Stat    string  `json:"stat"`
	ValueMs float64 `json:"value_ms"`
	LimitMs float64 `json:"limit_ms"`
	Ref     string  `json:"reference,omitempty"`
	RefMs   float64 `json:"reference_ms,omitempty"`
	Pass    bool    `json:"pass"`
	Message string  `json:"message"`
}

var (
	gateRE       = regexp.MustCompile(`^(p50|p90|p99|p99\.9|max|mean)\s*(<=|<)\s*(.+)$`)
	relativeRE   = regexp.MustCompile(`^(?:([0-9]+(?:\.[0-9]+)?)\s*\*\s*)?([a-z][a-z0-9_-]*)$`)
	targetNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)
)

// ParseGate reads a --gate: STAT OP LIMIT, where STAT is p50, p90, p99,
// p99.9, max or mean, OP is <= or <, and LIMIT is FACTOR*NAME (a target
// named with --target NAME=URL; FACTOR defaults to 1) or a duration.
func ParseGate(s string) (Gate, error) {
	text := strings.TrimSpace(s)
	m := gateRE.FindStringSubmatch(text)
	if m == nil {
		return Gate{}, fmt.Errorf("--gate %q: want STAT<=LIMIT, e.g. 'p99<=1.0*old', 'p99.9<=1.1*old' or 'p99<=50ms' (STAT: p50, p90, p99, p99.9, max, mean)", s)
	}
	g := Gate{Text: text, Stat: m[1], Strict: m[2] == "<"}
	limit := strings.TrimSpace(m[3])
	if d, err := time.ParseDuration(limit); err == nil {
		if d <= 0 {
			return Gate{}, fmt.Errorf("--gate %q: the limit must be above 0", s)
		}
		g.Abs = float64(d) / float64(time.Millisecond)
		return g, nil
	}
	r := relativeRE.FindStringSubmatch(limit)
	if r == nil {
		return Gate{}, fmt.Errorf("--gate %q: %q is neither a duration (50ms) nor FACTOR*TARGET (1.1*old)", s, limit)
	}
	g.Factor, g.Ref = 1, r[2]
	if r[1] != "" {
		f, err := strconv.ParseFloat(r[1], 64)
		if err != nil || f <= 0 || f > 1000 {
			return Gate{}, fmt.Errorf("--gate %q: factor %q: want a number above 0", s, r[1])
		}
		g.Factor = f
	}
	return g, nil
}

// ParseTarget reads a --target: URL, or NAME=URL to name it for --gate
// (NAME: lower-case letters, digits, - and _, starting with a letter).
func ParseTarget(s string) (name, url string, err error) {
	if n, u, ok := strings.Cut(s, "="); ok && !strings.Contains(n, "/") && !strings.Contains(n, ":") {
		if !targetNameRE.MatchString(n) {
			return "", "", fmt.Errorf("--target %q: name %q: use lower-case letters, digits, - and _ (e.g. old=http://old-host:9090)", s, n)
		}
		return n, u, nil
	}
	return s, s, nil
}

func statOf(l Latency, stat string) float64 {
	switch stat {
	case "p50":
		return l.P50
	case "p90":
		return l.P90
	case "p99":
		return l.P99
	case "p99.9":
		return l.P999
	case "max":
		return l.Max
	default:
		return l.Mean
	}
}

// CheckGates checks every gate on every run: a relative gate on every run
// other than its reference, an absolute one on all. A gate whose reference
// is not a target is an error (a typo must not pass the cutover).
func CheckGates(gates []Gate, runs []Run) ([]GateResult, error) {
	byName := map[string]Run{}
	var names []string
	for _, r := range runs {
		byName[r.Name] = r
		names = append(names, r.Name)
	}
	var out []GateResult
	for _, g := range gates {
		var ref Run
		if g.Ref != "" {
			var ok bool
			if ref, ok = byName[g.Ref]; !ok {
				return nil, fmt.Errorf("--gate %q: no target named %q (targets: %s; name one with --target %s=URL)", g.Text, g.Ref, strings.Join(names, ", "), g.Ref)
			}
			if len(runs) < 2 {
				return nil, fmt.Errorf("--gate %q compares targets: give at least two --target", g.Text)
			}
		}
		for _, r := range runs {
			if g.Ref != "" && r.Name == g.Ref {
				continue
			}
			res := GateResult{Gate: g.Text, Target: r.Name, Stat: g.Stat, ValueMs: statOf(r.Latency, g.Stat)}
			if g.Ref != "" {
				res.Ref, res.RefMs = g.Ref, statOf(ref.Latency, g.Stat)
				res.LimitMs = g.Factor * res.RefMs
			} else {
				res.LimitMs = g.Abs
			}
			switch {
			case r.Latency.Count == 0 || (g.Ref != "" && ref.Latency.Count == 0):
				res.Pass = false
				res.Message = fmt.Sprintf("%s: %s of %s cannot be judged: no measured requests", g.Text, g.Stat, r.Name)
			case g.Strict:
				res.Pass = res.ValueMs < res.LimitMs
			default:
				res.Pass = res.ValueMs <= res.LimitMs
			}
			if res.Message == "" {
				verdict := "passes"
				if !res.Pass {
					verdict = "FAILS"
				}
				if g.Ref != "" {
					res.Message = fmt.Sprintf("%s %s: %s %s %.3f ms vs %s %.3f ms (limit %.3f ms = %g x %s)",
						g.Text, verdict, g.Stat, r.Name, res.ValueMs, g.Ref, res.RefMs, res.LimitMs, g.Factor, g.Ref)
				} else {
					res.Message = fmt.Sprintf("%s %s: %s %s %.3f ms (limit %.3f ms)", g.Text, verdict, g.Stat, r.Name, res.ValueMs, res.LimitMs)
				}
			}
			out = append(out, res)
		}
	}
	return out, nil
}

// Delayed answers every request after d: bench serve --delay, a stand-in
// for a slower host when a cutover gate is tried out.
func Delayed(h http.Handler, d time.Duration) http.Handler {
	if d <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(d):
			h.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
	})
}
