// Package sizes parses and prints byte sizes the way sysadmins write them:
// "201GiB", "5.46T", "512", "100MiB/s". Units without "i" (KB, MB, ...) are
// decimal; K/M/G/T/P alone and KiB/MiB/... are binary, as in LVM and dd.
package sizes

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Common sizes.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
	TiB int64 = 1 << 40
	PiB int64 = 1 << 50
)

var units = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
	"p": 1 << 50, "pib": 1 << 50, "pb": 1e15,
}

// Parse reads a size such as "201GiB", "1.5T", "4096" or "10 MB".
func Parse(s string) (int64, error) {
	in := strings.TrimSpace(s)
	i := strings.IndexFunc(in, func(r rune) bool { return !(unicode.IsDigit(r) || r == '.') })
	num, unit := in, ""
	if i >= 0 {
		num, unit = in[:i], strings.TrimSpace(in[i:])
	}
	if num == "" {
		return 0, fmt.Errorf("size %q: no number (write e.g. 201GiB, 1.5T or 4096)", s)
	}
	mult, ok := units[strings.ToLower(unit)]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (use B, KiB, MiB, GiB, TiB, or KB, MB, GB, TB)", s, unit)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	v := math.Round(f * mult)
	// float64(math.MaxInt64) is 2^63, one past the largest int64: a size
	// that rounds to it or beyond does not fit (int64(2^63) is negative)
	if !(v < math.MaxInt64) || v < 0 {
		return 0, fmt.Errorf("size %q: out of range", s)
	}
	return int64(v), nil
}

// MaxRate is the largest rate ParseRate takes, 1 PiB/s: no disk, array or
// network comes near it, and products of a rate with a count of disks or
// stripes (the timeline's) stay far from int64's range.
const MaxRate = PiB

// ParseRate reads a rate such as "100MiB/s" or "50M" in bytes per second,
// at most MaxRate.
func ParseRate(s string) (int64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "/s"), "ps")
	v, err := Parse(t)
	if err != nil {
		return 0, fmt.Errorf("rate: %w", err)
	}
	if v > MaxRate {
		return 0, fmt.Errorf("rate %q: above %s/s, no disk or network reads that fast", s, Format(MaxRate))
	}
	return v, nil
}

// Format prints n bytes in binary units with up to two decimals: "5.46 TiB".
func Format(n int64) string {
	neg := n < 0
	if neg {
		n = -n
	}
	names := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v := float64(n)
	i := 0
	// move up a unit also when v rounds to 1024 at two decimals
	// (1 TiB less 1 MiB is "1 TiB", not "1024 GiB")
	for v >= 1024-0.005 && i < len(names)-1 {
		v /= 1024
		i++
	}
	var out string
	if i == 0 {
		out = fmt.Sprintf("%d B", n)
	} else {
		out = strconv.FormatFloat(v, 'f', 2, 64)
		out = strings.TrimRight(strings.TrimRight(out, "0"), ".") + " " + names[i]
	}
	if neg {
		return "-" + out
	}
	return out
}

// FormatPair formats two sizes that are compared in one message ("size X,
// planned Y"): when they differ but round to the same text, both carry
// their exact bytes, so the message never reads "5.46 TiB, planned
// 5.46 TiB" (issue 18).
func FormatPair(a, b int64) (string, string) {
	fa, fb := Format(a), Format(b)
	if a != b && fa == fb {
		return fmt.Sprintf("%s (%d bytes)", fa, a), fmt.Sprintf("%s (%d bytes)", fb, b)
	}
	return fa, fb
}
