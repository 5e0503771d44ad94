package lab

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// lowestSync is the lowest sync_percent in lvs --noheadings output: of the
// LV itself (one "PCT [ACTION]" line, as `lvs -o sync_percent,raid_sync_action
// VG/LV` prints it) or, when the lines name LVs ("NAME PCT"), of the
// images [LV_rimage_N] alone (the integrity layers whose re-initialisation
// the percent tracks). An error when there is no percent to read.
func lowestSync(out string) (float64, error) {
	low, n := 100.0, 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var pct string
		name := f[0]
		switch {
		case strings.HasPrefix(name, "["): // a sub-LV: only the images count
			if !strings.Contains(name, "_rimage_") || strings.HasSuffix(name, "_imeta]") || strings.HasSuffix(name, "_iorig]") || len(f) < 2 {
				continue
			}
			pct = f[1]
		case len(f) <= 2:
			if _, err := strconv.ParseFloat(name, 64); err != nil {
				continue // "tables 100.00": the LV itself, not an image
			}
			pct = name
		default:
			continue
		}
		v, err := strconv.ParseFloat(pct, 64)
		if err != nil {
			return 0, fmt.Errorf("sync_percent %q in %q: %w", pct, line, err)
		}
		low, n = min(low, v), n+1
	}
	if n == 0 {
		return 0, fmt.Errorf("no sync_percent in %q", out)
	}
	return low, nil
}

func TestLowestSync(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"  22.11    recover\n", 22.11, true},
		{"  100.00   idle", 100, true},
		{`  tables                  100.00
  [tables_rimage_0]       100.00
  [tables_rimage_0_imeta]
  [tables_rimage_0_iorig]
  [tables_rimage_1]       37.50
  [tables_rimage_2]       12.25
  [tables_rmeta_0]
`, 12.25, true},
		{"  tables  100.00\n  [tables_rmeta_0]\n", 0, false},
		{"", 0, false},
		{"  [tables_rimage_0]  x.y\n", 0, false},
	} {
		got, err := lowestSync(c.in)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("lowestSync(%q) = %v, %v; want %v (ok %v)", c.in, got, err, c.want, c.ok)
		}
	}
}
