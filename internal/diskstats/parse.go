package diskstats

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/procfs/blockdevice"
)

// Sample is one reading of /proc/diskstats.
type Sample struct {
	Time    time.Time
	Devices map[string]blockdevice.IOStats // by kernel name (sda, dm-3, md0)
}

// Limits of a line: the kernel prints 14 fields (before 4.18), 18 (4.18),
// 20 (5.5 and later); a device name is at most DISK_NAME_LEN (32) bytes,
// longer ones are allowed up to maxName for device-mapper style names.
const (
	minFields = 14
	maxFields = 20
	maxName   = 255
)

// ErrSyntax marks diskstats text that is not what the kernel writes.
var ErrSyntax = errors.New("not /proc/diskstats syntax")

// Parse parses the text of /proc/diskstats (or a saved copy). Every line
// must have 14 to 20 fields (more are ignored, for kernels yet to come):
// major and minor numbers, a device name of visible ASCII without "/", and
// decimal counters (a CR before the newline, as a copy through Windows
// leaves it, is allowed). A device named twice, or no device at all, is an
// error: the kernel writes neither. Errors give the line number.
func Parse(b []byte) (Sample, error) {
	s := Sample{Devices: map[string]blockdevice.IOStats{}}
	for n := 1; len(b) > 0; n++ {
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		line = bytes.TrimSuffix(line, []byte("\r")) // a saved copy may have CRLF ends
		var f [maxFields][]byte
		k := 0
		for _, w := range bytes.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' }) {
			if k < maxFields {
				f[k] = w
			}
			k++
		}
		if k == 0 {
			continue
		}
		if k < minFields {
			return s, fmt.Errorf("line %d: %d fields, want at least %d: %w", n, k, minFields, ErrSyntax)
		}
		if k > maxFields {
			k = maxFields
		}
		for i := 0; i < 2; i++ {
			if _, err := strconv.ParseUint(string(f[i]), 10, 32); err != nil {
				return s, fmt.Errorf("line %d: device number %q: %w", n, f[i], ErrSyntax)
			}
		}
		name := string(f[2])
		if err := checkName(name); err != nil {
			return s, fmt.Errorf("line %d: %w", n, err)
		}
		if _, dup := s.Devices[name]; dup {
			return s, fmt.Errorf("line %d: device %s listed twice: %w", n, name, ErrSyntax)
		}
		var v [maxFields - 3]uint64
		for i := 3; i < k; i++ {
			x, err := strconv.ParseUint(string(f[i]), 10, 64)
			if err != nil {
				return s, fmt.Errorf("line %d (%s): field %d %q is no counter: %w", n, name, i+1, f[i], ErrSyntax)
			}
			v[i-3] = x
		}
		s.Devices[name] = blockdevice.IOStats{
			ReadIOs: v[0], ReadMerges: v[1], ReadSectors: v[2], ReadTicks: v[3],
			WriteIOs: v[4], WriteMerges: v[5], WriteSectors: v[6], WriteTicks: v[7],
			IOsInProgress: v[8], IOsTotalTicks: v[9], WeightedIOTicks: v[10],
			DiscardIOs: v[11], DiscardMerges: v[12], DiscardSectors: v[13], DiscardTicks: v[14],
			FlushRequestsCompleted: v[15], TimeSpentFlushing: v[16],
		}
	}
	if len(s.Devices) == 0 {
		return s, fmt.Errorf("no device lines: %w", ErrSyntax)
	}
	return s, nil
}

func checkName(name string) error {
	if len(name) > maxName {
		return fmt.Errorf("device name of %d bytes: %w", len(name), ErrSyntax)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c >= 0x7f || c == '/' {
			return fmt.Errorf("device name %q: byte %#x: %w", name, c, ErrSyntax)
		}
	}
	return nil
}
