// Package smart reads a disk's SMART health from smartmontools' JSON output
// (`smartctl --json -H -A DEV`, smartmontools 7.x): the overall assessment,
// the reallocated, pending and offline-uncorrectable sector counts of ATA
// disks and the media errors and critical warning of NVMe. The output is
// input: every field is optional and checked, and what cannot be read is
// said, never taken as healthy.
package smart

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tbhost/tbhost/internal/execx"
)

// MaxJSONBytes bounds what Parse reads (smartctl -H -A prints a few KiB).
const MaxJSONBytes = 4 << 20

// Health is one disk's SMART state. Counters are -1 when not reported.
type Health struct {
	Device string `json:"device"`
	Model  string `json:"model,omitempty"`
	Serial string `json:"serial,omitempty"`
	// Passed is the overall assessment (smart_status.passed); nil when
	// smartctl did not give one.
	Passed *bool `json:"passed,omitempty"`
	// ATA attributes 5, 197 and 198 (raw values).
	Reallocated int64 `json:"reallocated_sectors"`
	Pending     int64 `json:"pending_sectors"`
	Offline     int64 `json:"offline_uncorrectable"`
	// NVMe health log.
	MediaErrors     int64 `json:"media_errors"`
	CriticalWarning int64 `json:"critical_warning"`
	// ExitStatus is smartctl's exit status bit mask (smartctl(8)).
	ExitStatus int `json:"exit_status"`
	// Messages are smartctl's own error messages.
	Messages []string `json:"messages,omitempty"`
}

type number struct{ v *int64 }

func (n *number) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return nil // not a number: left unknown
	}
	if f < 0 || f > 1<<53 {
		return nil
	}
	v := int64(f)
	n.v = &v
	return nil
}

type report struct {
	Smartctl struct {
		ExitStatus int `json:"exit_status"`
		Messages   []struct {
			String   string `json:"string"`
			Severity string `json:"severity"`
		} `json:"messages"`
	} `json:"smartctl"`
	Device struct {
		Name string `json:"name"`
	} `json:"device"`
	ModelName    string `json:"model_name"`
	SerialNumber string `json:"serial_number"`
	SmartStatus  *struct {
		Passed *bool `json:"passed"`
	} `json:"smart_status"`
	ATA *struct {
		Table []struct {
			ID  int `json:"id"`
			Raw struct {
				Value number `json:"value"`
			} `json:"raw"`
		} `json:"table"`
	} `json:"ata_smart_attributes"`
	NVMe *struct {
		CriticalWarning number `json:"critical_warning"`
		MediaErrors     number `json:"media_errors"`
	} `json:"nvme_smart_health_information_log"`
}

// Parse reads smartctl's JSON.
func Parse(data []byte) (Health, error) {
	h := Health{Reallocated: -1, Pending: -1, Offline: -1, MediaErrors: -1, CriticalWarning: -1}
	if len(data) > MaxJSONBytes {
		return h, fmt.Errorf("smartctl JSON: more than %d bytes", MaxJSONBytes)
	}
	var r report
	if err := json.Unmarshal(data, &r); err != nil {
		return h, fmt.Errorf("smartctl JSON: %w", err)
	}
	h.Device, h.Model, h.Serial, h.ExitStatus = clean(r.Device.Name), clean(r.ModelName), clean(r.SerialNumber), r.Smartctl.ExitStatus
	for _, m := range r.Smartctl.Messages {
		if s := clean(m.String); s != "" && len(h.Messages) < 8 {
			h.Messages = append(h.Messages, s)
		}
	}
	if r.SmartStatus != nil && r.SmartStatus.Passed != nil {
		p := *r.SmartStatus.Passed
		h.Passed = &p
	}
	if r.ATA != nil {
		for _, a := range r.ATA.Table {
			if a.Raw.Value.v == nil {
				continue
			}
			switch a.ID {
			case 5:
				h.Reallocated = *a.Raw.Value.v
			case 197:
				h.Pending = *a.Raw.Value.v
			case 198:
				h.Offline = *a.Raw.Value.v
			}
		}
	}
	if r.NVMe != nil {
		if v := r.NVMe.MediaErrors.v; v != nil {
			h.MediaErrors = *v
		}
		if v := r.NVMe.CriticalWarning.v; v != nil {
			h.CriticalWarning = *v
		}
	}
	return h, nil
}

// clean keeps printable text of a bounded length (the JSON is input and
// ends up in alerts).
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > 200 {
		s = s[:200]
	}
	return strings.TrimSpace(s)
}

// Concerns are what makes h worth a WARNING, in words: the overall
// assessment failed, reallocated/pending/uncorrectable sectors, NVMe media
// errors or a critical warning, smartctl's failing-disk exit bits, or no
// assessment at all. Empty means healthy.
func (h Health) Concerns() []string {
	var out []string
	switch {
	case h.Passed != nil && !*h.Passed:
		out = append(out, "SMART overall-health assessment FAILED")
	case h.Passed == nil:
		out = append(out, "smartctl gave no overall-health assessment"+msgs(h.Messages))
	}
	for _, c := range []struct {
		n    int64
		what string
	}{{h.Reallocated, "reallocated sectors"}, {h.Pending, "pending sectors"}, {h.Offline, "offline uncorrectable sectors"}, {h.MediaErrors, "media errors"}} {
		if c.n > 0 {
			out = append(out, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if h.CriticalWarning > 0 {
		out = append(out, fmt.Sprintf("NVMe critical warning 0x%x", h.CriticalWarning))
	}
	if h.ExitStatus&(1<<3) != 0 && (h.Passed == nil || *h.Passed) {
		out = append(out, "smartctl says the disk is failing (exit status bit 3)")
	}
	if h.ExitStatus&(1<<4) != 0 {
		out = append(out, "a pre-failure attribute is at or below its threshold (exit status bit 4)")
	}
	return out
}

func msgs(m []string) string {
	if len(m) == 0 {
		return ""
	}
	return ": " + strings.Join(m, "; ")
}

// ErrNotInstalled is returned (wrapped) by Read when smartctl is missing.
var ErrNotInstalled = errors.New("smartctl is not installed (apt-get install smartmontools)")

// Argv is the command Read runs for dev.
func Argv(dev string) []string { return []string{"smartctl", "--json", "-H", "-A", dev} }

// Read runs smartctl for dev. smartctl's exit status is a bit mask: the
// failing-disk bits still come with a full JSON report, which is parsed;
// bits 0 and 1 (command line, device open) are errors.
func Read(ctx context.Context, r execx.Runner, dev string) (Health, error) {
	res, err := r.Run(ctx, Argv(dev)...)
	if execx.NotFound(err) {
		return Health{}, fmt.Errorf("%s: %w", dev, ErrNotInstalled)
	}
	code := execx.ExitCode(err)
	if err != nil && (code < 0 || code&3 != 0) {
		return Health{}, fmt.Errorf("smartctl %s: %w", dev, err)
	}
	h, perr := Parse(res.Stdout)
	if perr != nil {
		return h, fmt.Errorf("smartctl %s: %w", dev, perr)
	}
	if h.Device == "" {
		h.Device = dev
	}
	return h, nil
}
