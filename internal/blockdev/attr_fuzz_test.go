package blockdev

import (
	"bytes"
	"encoding/hex"
	"os"
	"slices"
	"strings"
	"testing"
)

// FuzzSysfsAttrs feeds one byte string to every parser of sysfs and udev
// content in Read: VPD pages 0x80 (serial) and 0x83 (NAA WWN), the udev
// database and the scheduler line. Properties: no panic; a serial is taken
// from inside the page; a WWN is "0x" and the hex of at least 8 bytes that
// occur in the page; udev keys and values hold no newline and there are no
// more properties than lines; the scheduler is the bracketed (or only) word and among those offered;
// MemTotal is whole KiB within range, and only from a MemTotal line.
func FuzzSysfsAttrs(f *testing.F) {
	for _, p := range []string{
		"testdata/lab-guest-real/sys/block/sda/device/vpd_pg80",
		"testdata/lab-guest-real/sys/block/sda/device/vpd_pg83",
	} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte{0, 0x80, 0, 8, 'Z', 'A', 'D', '0', 'A', '1', 'B', '1'})
	f.Add([]byte{0, 0x83, 0, 12, 1, 3, 0, 8, 0x50, 0, 0xc5, 0, 0xa1, 0xb2, 0xc3, 0x01})
	f.Add([]byte{0, 0x83, 0xff, 0xff, 1, 3, 0, 0xff})
	f.Add([]byte("E:ID_SERIAL_SHORT=ZAD0A1B1\nE:ID_WWN=0x5000c500a1b2c301\nS:disk/by-id/wwn-0x5000c500a1b2c301\n"))
	f.Add([]byte("mq-deadline [none] kyber bfq"))
	f.Add([]byte("MemTotal:       65747416 kB\nMemFree:  1 kB\n"))
	f.Add([]byte("MemTotal: 99999999999999999999 kB\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if s := vpd80Serial(b); len(s) > len(b) || s != "" && !bytes.Contains(b, []byte(strings.TrimSpace(s))) {
			t.Fatalf("serial %q not from the page", s)
		}
		if w := vpd83NAA(b); w != "" {
			raw, err := hex.DecodeString(strings.TrimPrefix(w, "0x"))
			if !strings.HasPrefix(w, "0x") || err != nil || len(raw) < 8 || !bytes.Contains(b, raw) {
				t.Fatalf("WWN %q not from the page", w)
			}
		}
		u := parseUdev(b)
		if len(u) > bytes.Count(b, []byte("\n"))+1 {
			t.Fatalf("%d udev properties from %d lines", len(u), bytes.Count(b, []byte("\n"))+1)
		}
		for k, v := range u {
			if strings.ContainsRune(k, '\n') || strings.ContainsRune(v, '\n') {
				t.Fatalf("newline in udev property %q=%q", k, v)
			}
		}
		if n, err := parseMemTotal(b); err == nil && (n < 0 || n > maxMemKiB<<10 || n%1024 != 0 || (n > 0 && !bytes.Contains(b, []byte("MemTotal:")))) {
			t.Fatalf("MemTotal %d bytes from %q", n, b)
		} else if err != nil && n != 0 {
			t.Fatalf("MemTotal %d with error %v", n, err)
		}
		line := string(b)
		cur, avail := schedulers(line)
		if cur != "" && !strings.Contains(line, "["+cur+"]") && !(len(strings.Fields(line)) == 1 && cur == strings.TrimSpace(line)) {
			t.Fatalf("scheduler %q neither a bracketed word nor the only word of %q", cur, line)
		}
		if len(avail) != len(strings.Fields(line)) || (cur != "" && !slices.Contains(avail, cur)) {
			t.Fatalf("schedulers %q (current %q) from %q", avail, cur, line)
		}
	})
}
