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

// integrityRecalc reads `dmsetup status` lines of dm-integrity targets
// ("NAME: START LEN integrity MISMATCHES PROVIDED RECALC", the kernel's
// dm-integrity.rst: RECALC is the recalculation's position in sectors, "-"
// when there is none) and returns how many images are still being
// re-initialised (RECALC below PROVIDED) and the lowest progress among them
// in percent (100 when none is). An error when no integrity line is there.
func integrityRecalc(status string) (running int, lowest float64, err error) {
	lowest, n := 100.0, 0
	for _, line := range strings.Split(strings.TrimSpace(status), "\n") {
		f := strings.Fields(line)
		if len(f) < 7 || f[3] != "integrity" {
			continue
		}
		n++
		if f[6] == "-" {
			continue
		}
		provided, err1 := strconv.ParseInt(f[5], 10, 64)
		at, err2 := strconv.ParseInt(f[6], 10, 64)
		if err1 != nil || err2 != nil || provided <= 0 {
			return 0, 0, fmt.Errorf("integrity status %q: provided sectors %q, recalculation at %q", line, f[5], f[6])
		}
		if at < provided {
			running++
			lowest = min(lowest, 100*float64(at)/float64(provided))
		}
	}
	if n == 0 {
		return 0, 0, fmt.Errorf("no dm-integrity status line in %q", status)
	}
	return running, lowest, nil
}

func TestIntegrityRecalc(t *testing.T) {
	for _, c := range []struct {
		in      string
		running int
		lowest  float64
		ok      bool
	}{
		{"vg--hdd-tables_rimage_0: 0 483328 integrity 0 483328 120832\nvg--hdd-tables_rimage_1: 0 483328 integrity 0 483328 483328\n" +
			"vg--hdd-tables_rimage_2: 0 483328 integrity 0 483328 241664\nvg--hdd-tables_rmeta_0: 0 8192 linear\n", 2, 25, true},
		{"vg--hdd-tables_rimage_0: 0 483328 integrity 0 483328 -\nvg--hdd-tables_rimage_1: 0 483328 integrity 0 483328 483328\n", 0, 100, true},
		{"vg--hdd-tables_rmeta_0: 0 8192 linear\n", 0, 0, false},
		{"", 0, 0, false},
		{"vg--hdd-tables_rimage_0: 0 483328 integrity 0 x 12\n", 0, 0, false},
	} {
		running, lowest, err := integrityRecalc(c.in)
		if (err == nil) != c.ok || (c.ok && (running != c.running || lowest != c.lowest)) {
			t.Errorf("integrityRecalc(%q) = %d, %v, %v; want %d, %v (ok %v)", c.in, running, lowest, err, c.running, c.lowest, c.ok)
		}
	}
}
