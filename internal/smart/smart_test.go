package smart

import (
	"os"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/execx"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseFixtures(t *testing.T) {
	for _, tc := range []struct {
		file     string
		concerns []string
		realloc  int64
	}{
		{"ata-healthy.json", nil, 0},
		{"nvme-healthy.json", nil, -1},
		{"ata-reallocated-pending.json", []string{"184 reallocated sectors", "16 pending sectors", "16 offline uncorrectable sectors"}, 184},
		{"ata-failed.json", []string{"assessment FAILED", "3864 reallocated sectors"}, 3864},
	} {
		h, err := Parse(fixture(t, tc.file))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if h.Reallocated != tc.realloc || h.Device == "" || h.Serial == "" {
			t.Errorf("%s: %+v", tc.file, h)
		}
		got := strings.Join(h.Concerns(), "; ")
		if len(tc.concerns) == 0 && got != "" {
			t.Errorf("%s: healthy disk with concerns %q", tc.file, got)
		}
		for _, c := range tc.concerns {
			if !strings.Contains(got, c) {
				t.Errorf("%s: concerns %q lack %q", tc.file, got, c)
			}
		}
	}
}

// smartctl's exit status is a bit mask: a failing disk (bit 3) still
// prints its report, which Read parses; a device it cannot open is an error.
func TestReadExitBits(t *testing.T) {
	r := execx.NewRecorded()
	r.On(execx.Reply{Stdout: string(fixture(t, "ata-failed.json")), ExitCode: 72}, Argv("/dev/sdc")...)
	r.On(execx.Reply{Stdout: string(fixture(t, "open-failed.json")), ExitCode: 2}, Argv("/dev/sdz")...)
	h, err := Read(t.Context(), r, "/dev/sdc")
	if err != nil || h.Passed == nil || *h.Passed {
		t.Errorf("failing disk: %+v %v", h, err)
	}
	if _, err := Read(t.Context(), r, "/dev/sdz"); err == nil {
		t.Error("a device smartctl cannot open read as healthy")
	}
}

func TestNoAssessmentIsAConcern(t *testing.T) {
	h, err := Parse([]byte(`{"smartctl":{"exit_status":4,"messages":[{"string":"SMART support is: Unavailable","severity":"information"}]},"device":{"name":"/dev/sdb"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c := h.Concerns(); len(c) != 1 || !strings.Contains(c[0], "no overall-health assessment: SMART support is: Unavailable") {
		t.Errorf("%q", c)
	}
}

// FuzzParse: smartctl's output is input. Parse never panics, counters are
// -1 or non-negative, texts are bounded and printable.
func FuzzParse(f *testing.F) {
	for _, n := range []string{"ata-healthy.json", "ata-reallocated-pending.json", "ata-failed.json", "nvme-healthy.json", "open-failed.json"} {
		f.Add(fixture(f, n))
	}
	f.Add([]byte(`{"ata_smart_attributes":{"table":[{"id":5,"raw":{"value":-3}},{"id":197,"raw":{"value":1e300}}]},"serial_number":"a\nb"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := Parse(data)
		if err != nil {
			return
		}
		for _, n := range []int64{h.Reallocated, h.Pending, h.Offline, h.MediaErrors, h.CriticalWarning} {
			if n < -1 {
				t.Fatalf("counter %d", n)
			}
		}
		for _, s := range append([]string{h.Device, h.Model, h.Serial}, h.Messages...) {
			if len(s) > 200 || strings.ContainsAny(s, "\n\r\x00") {
				t.Fatalf("text %q", s)
			}
		}
		if len(h.Messages) > 8 {
			t.Fatalf("%d messages", len(h.Messages))
		}
		_ = h.Concerns()
	})
}
