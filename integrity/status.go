package integrity

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tbhost/tbhost/lvm"
)

// ImageStatus is one RAID image's integrity layer.
type ImageStatus struct {
	Name       string   `json:"name"` // tables_rimage_0
	Disks      []string `json:"disks"`
	Mismatches int64    `json:"integrity_mismatches"` // -1: no integrity layer
	SegType    string   `json:"segtype"`
	Health     string   `json:"health"`
	KernelDev  string   `json:"kernel_device,omitempty"` // dm-3
	Problems   []string `json:"problems,omitempty"`
}

// ArrayStatus is one RAID LV with its images.
type ArrayStatus struct {
	LV                  string        `json:"lv"` // vg/lv
	UUID                string        `json:"uuid"`
	SegType             string        `json:"segtype"`
	Attr                string        `json:"attr"`
	Size                int64         `json:"size"`
	IntegrityMode       string        `json:"integrity_mode"`
	IntegrityBlockSize  int           `json:"integrity_block_size"`
	IntegrityMismatches int64         `json:"integrity_mismatches"`
	RaidMismatchCount   int64         `json:"raid_mismatch_count"`
	SyncAction          string        `json:"sync_action"`
	SyncPercent         float64       `json:"sync_percent"`
	Health              string        `json:"health"`
	Images              []ImageStatus `json:"images"`
	Notes               []string      `json:"notes,omitempty"`
	Problems            []string      `json:"problems,omitempty"`
	// Findings are the problems with their codes (Problems are their texts).
	Findings []lvm.Finding `json:"findings,omitempty"`
	OK       bool          `json:"ok"`
}

// ErrNoIntegrityLV is returned (wrapped) by Status asked for every RAID LV
// with dm-integrity (no names) when there is none: nothing to work on
// (exit 3), not a problem found on an array.
var ErrNoIntegrityLV = errors.New("no RAID LV with dm-integrity")

// LVMError is Status failing to get a usable report from LVM: lvm missing
// or failing, a snapshot's report missing or not a file, an answer that is
// not LVM's JSON (lvm.ErrBadReport). Status could not run (exit 3); it
// judged nothing.
type LVMError struct{ Err error }

func (e *LVMError) Error() string { return "integrity status: " + e.Err.Error() }

func (e *LVMError) Unwrap() error { return e.Err }

// Status reads the integrity state of RAID LVs. Names are VGs or VG/LV
// pairs; none means every RAID LV with dm-integrity. A named LV without an
// integrity layer is reported with a problem. Errors: *LVMError when LVM
// gave no usable report, ErrNoIntegrityLV when there is nothing to judge.
func Status(ctx context.Context, c lvm.Client, names ...string) ([]ArrayStatus, error) {
	// `lvs -a VG/LV` reports that LV alone, without its hidden sub-LVs
	// (seen with lvm2 2.03.16 in the lab): ask for whole VGs, then pick.
	var vgs []string
	explicitLV := map[string]bool{}
	wholeVG := map[string]bool{}
	for _, n := range names {
		n = strings.TrimPrefix(n, "/dev/")
		vg, _, isLV := strings.Cut(n, "/")
		if isLV {
			explicitLV[n] = true
		} else {
			wholeVG[vg] = true
		}
		if !contains(vgs, vg) {
			vgs = append(vgs, vg)
		}
	}
	all, err := c.LVs(ctx, vgs...)
	if err != nil {
		return nil, &LVMError{Err: err}
	}
	var out []ArrayStatus
	for _, lv := range all {
		if lv.Hidden || !strings.HasPrefix(lv.SegType(), "raid") {
			continue
		}
		if len(names) > 0 && !explicitLV[lv.FullName()] && !wholeVG[lv.VG] {
			continue
		}
		if !hasIntegrity(all, lv) && !explicitLV[lv.FullName()] {
			continue
		}
		out = append(out, ArrayStatusOf(all, lv))
	}
	for n := range explicitLV {
		vg, name, _ := strings.Cut(n, "/")
		if _, ok := lvm.Find(all, vg, name); !ok {
			return nil, fmt.Errorf("integrity status: %s: no such LV (lvs -a %s lists what there is)", n, vg)
		}
	}
	if len(out) == 0 {
		const how = "create one with lvcreate --type raid5 --raidintegrity y, or add it with lvconvert --raidintegrity y VG/LV"
		if len(names) == 0 {
			return nil, fmt.Errorf("%w in any VG (%s)", ErrNoIntegrityLV, how)
		}
		// VGs named that hold none: the names are refused (exit 1), as a
		// named LV that does not exist
		return nil, fmt.Errorf("no RAID LV with dm-integrity in %s (%s)", strings.Join(names, ", "), how)
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func hasIntegrity(all []lvm.LV, top lvm.LV) bool {
	if top.IntegrityMode != "" {
		return true
	}
	for _, img := range lvm.SubLVs(all, top, "rimage") {
		if img.SegType() == "integrity" {
			return true
		}
	}
	return false
}

// ArrayStatusOf judges one RAID LV from an `lvs -a` report: the findings
// of lvm.AssessArray (decided there, on codes) in integrity's words, per
// image and naming the disk, plus whether every image has dm-integrity.
func ArrayStatusOf(all []lvm.LV, top lvm.LV) ArrayStatus {
	return ArrayStatusFrom(top, lvm.AssessArray(all, top))
}

// ArrayStatusFrom is ArrayStatusOf for a caller that has assessed the
// array already: h is lvm.AssessArray(all, top).
func ArrayStatusFrom(top lvm.LV, h lvm.ArrayHealth) ArrayStatus {
	s := ArrayStatus{
		LV: top.FullName(), UUID: top.UUID, SegType: top.SegType(), Attr: top.Attr, Size: top.Size,
		IntegrityMode: top.IntegrityMode, IntegrityBlockSize: top.IntegrityBlockSize,
		IntegrityMismatches: top.IntegrityMismatches, RaidMismatchCount: top.RaidMismatchCount,
		SyncAction: top.SyncAction, SyncPercent: top.SyncPercent, Health: top.Health,
	}
	var inactive []lvm.Finding
	for _, f := range h.Findings {
		switch f.Code {
		case lvm.CodeIntegrityMismatches:
			continue // reported per image below, naming the disk
		case lvm.CodeLVInactive:
			f.Text = fmt.Sprintf("%s: not active (lvchange -ay %s)", top.FullName(), top.FullName())
			if lvm.HasCode(h.Findings, lvm.CodeMissingAtBoot) {
				f.Text = fmt.Sprintf("%s: not active, a member was missing at boot (lvchange -ay is refused for raid+integrity): %s", top.FullName(), lvm.ReplaceAdvice(top.FullName()))
			}
			inactive = append(inactive, f) // said last
			continue
		case lvm.CodeSyncInProgress, lvm.CodeCheckInProgress, lvm.CodeNotSynced:
			s.Notes = append(s.Notes, fmt.Sprintf("sync action %q at %.2f%%", s.SyncAction, s.SyncPercent))
			continue
		case lvm.CodeRebuilding, lvm.CodeIntegrityReinit:
			s.Notes = append(s.Notes, f.Text) // with the ETA
			continue
		}
		s.problem(f)
	}
	var sum int64
	for _, ih := range h.Images {
		img := ih.LV
		is := ImageStatus{Name: img.Name, Disks: ih.Disks, Mismatches: img.IntegrityMismatches, SegType: img.SegType(), Health: img.Health}
		if is.Disks == nil {
			is.Disks = []string{}
		}
		if img.KernelMinor >= 0 && img.KernelMajor >= 0 {
			is.KernelDev = fmt.Sprintf("dm-%d", img.KernelMinor)
		}
		on := "on " + strings.Join(is.Disks, "+")
		if len(is.Disks) == 0 {
			on = "on an unknown disk"
		}
		var own []lvm.Finding
		for _, f := range ih.Findings {
			switch f.Code {
			case lvm.CodeImageSpansDisks:
				continue // lvm status names the image
			case lvm.CodeImageMissing:
				// kept, partial array or not: it names the image that lost
				// its disk and carries the advice (tbhost lvm replace) that
				// lvm status and monitor check give too (docs/lvm.md); the
				// array's partial findings alone do not say what to do
			case lvm.CodeIntegrityMismatches:
				sum += f.Count
				f.Advice = fmt.Sprintf("dm-integrity caught corrupt blocks read from this disk: check its SMART log and cabling; run tbhost integrity scrub %s to read every block", top.FullName())
				f.Text = fmt.Sprintf("%s %s: %d integrity mismatches (%s)", img.FullName(), on, f.Count, f.Advice)
				is.Problems = append(is.Problems, f.Text)
				s.Findings = append(s.Findings, f)
				continue
			}
			f.Text += " (" + on + ")"
			own = append(own, f)
		}
		for _, f := range own {
			is.Problems = append(is.Problems, f.Text)
			s.Findings = append(s.Findings, f)
		}
		s.Images = append(s.Images, is)
	}
	if top.IntegrityMismatches > 0 && sum == 0 {
		s.problem(lvm.Finding{Code: lvm.CodeIntegrityMismatches, Severity: lvm.Warning, LV: top.FullName(),
			Field: "integritymismatches", Count: top.IntegrityMismatches,
			Text: fmt.Sprintf("%s: %d integrity mismatches on the array, none attributed to an image", top.FullName(), top.IntegrityMismatches)})
	}
	for _, f := range lvm.IntegrityCoverage(h) {
		s.problem(f)
	}
	for _, f := range inactive {
		s.problem(f)
	}
	s.Problems = lvm.Texts(s.Findings)
	s.OK = len(s.Findings) == 0
	return s
}

// problem records a finding on the array.
func (s *ArrayStatus) problem(f lvm.Finding) { s.Findings = append(s.Findings, f) }
