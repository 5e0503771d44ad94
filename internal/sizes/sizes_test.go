package sizes

import "testing"

func TestParse(t *testing.T) {
	cases := map[string]int64{
		"4096": 4096, "201GiB": 201 * GiB, "201G": 201 * GiB, "1.5T": TiB + TiB/2,
		"10 MB": 10_000_000, "512b": 512, "6TB": 6_000_000_000_000, "64k": 64 * KiB,
	}
	for in, want := range cases {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	// 8192 PiB is 2^63 bytes: one past the largest int64, it must not wrap
	// to a negative size (prefix plan --capacity 8192PiB said "--9223372036854775808 B")
	for _, bad := range []string{"", "GiB", "12 parsecs", "-5G", "1.2.3G", "8192PiB", "8192P", "9223372036854775807", "1e30"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) must fail", bad)
		}
	}
}

func TestParseRate(t *testing.T) {
	got, err := ParseRate("100MiB/s")
	if err != nil || got != 100*MiB {
		t.Errorf("got %d, %v", got, err)
	}
	if got, err := ParseRate("1PiB/s"); err != nil || got != PiB {
		t.Errorf("1PiB/s: %d, %v", got, err)
	}
	// lvm plan --hdd-rate 9000000000000000000 printed the scrub at
	// "-1.16 EiB/s" (6 disks x the rate overflowed int64) and took "-0s"
	for _, bad := range []string{"9000000000000000000", "2PiB/s", "1025TiB/s"} {
		if got, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) = %d, must fail", bad, got)
		}
	}
}

func TestFormat(t *testing.T) {
	cases := map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1 KiB", 6001175126016: "5.46 TiB",
		201 * GiB: "201 GiB", -2 * MiB: "-2 MiB",
		// rounding to two decimals never prints 1024 of a unit
		MiB - 1: "1 MiB", TiB - MiB: "1 TiB", 1023*GiB + GiB/256: "1023 GiB", 1023*GiB + GiB/100: "1023.01 GiB",
	}
	for in, want := range cases {
		if got := Format(in); got != want {
			t.Errorf("Format(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestFormatPairShowsBytesWhenTheRoundedFiguresAgree(t *testing.T) {
	a, b := FormatPair(6001175126016, 6001175126016-512*1024)
	if a == b || a != "5.46 TiB (6001175126016 bytes)" || b != "5.46 TiB (6001174601728 bytes)" {
		t.Errorf("%q, %q", a, b)
	}
	if a, b := FormatPair(1<<30, 2<<30); a != "1 GiB" || b != "2 GiB" {
		t.Errorf("distinct figures keep their short form: %q, %q", a, b)
	}
	if a, b := FormatPair(1<<30, 1<<30); a != b || a != "1 GiB" {
		t.Errorf("equal sizes: %q, %q", a, b)
	}
}
