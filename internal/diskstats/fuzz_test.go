package diskstats

import (
	"bytes"
	"fmt"
	"os"
	"testing"
)

// FuzzParse: any input either parses into devices whose every field
// round-trips through the kernel's line format, or fails with ErrSyntax;
// never a panic, and the result is never larger than the input allows.
func FuzzParse(f *testing.F) {
	for _, p := range []string{labCapture(f) + "diskstats.0", "../../integrity/testdata/diskstats/t0/proc/diskstats"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(oldSda0 + oldSda1[:len(oldSda1)-1]))
	f.Add([]byte(labSdc0 + labSdc1))
	f.Add([]byte("8 0 sda 4294967295 0 0 4294967295 0 0 0 0 0 4294967295 18446744073709551615\n"))
	f.Add([]byte("\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(b)
		if err != nil {
			return
		}
		if len(s.Devices) == 0 || len(s.Devices) > bytes.Count(b, []byte("\n"))+1 {
			t.Fatalf("%d devices from %d lines", len(s.Devices), bytes.Count(b, []byte("\n"))+1)
		}
		// round trip: print every device the way the kernel does, parse again
		var out bytes.Buffer
		for name, d := range s.Devices {
			fmt.Fprintf(&out, "8 0 %s %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d\n", name,
				d.ReadIOs, d.ReadMerges, d.ReadSectors, d.ReadTicks, d.WriteIOs, d.WriteMerges, d.WriteSectors, d.WriteTicks,
				d.IOsInProgress, d.IOsTotalTicks, d.WeightedIOTicks, d.DiscardIOs, d.DiscardMerges, d.DiscardSectors, d.DiscardTicks,
				d.FlushRequestsCompleted, d.TimeSpentFlushing)
		}
		again, err := Parse(out.Bytes())
		if err != nil {
			t.Fatalf("re-parse of %q: %v", out.Bytes(), err)
		}
		for name, d := range s.Devices {
			if again.Devices[name] != d {
				t.Fatalf("%s: %+v became %+v", name, d, again.Devices[name])
			}
		}
		// rates between any two devices' counters are finite and %util <= 100
		for _, a := range s.Devices {
			for _, c := range s.Devices {
				if r, ok := Compute(a, c, 5); ok && (r.UtilPercent > 100 || r.UtilPercent < 0 || r.RAwaitMS < 0 || r.ReadsPerS < 0) {
					t.Fatalf("rates %+v", r)
				}
			}
			break
		}
	})
}
