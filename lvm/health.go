package lvm

// This file is the one model of array health: it judges an LV and its
// images from the fields of LVM's report (lv_health_status, the health
// character of lv_attr, raid_sync_action, sync_percent,
// integritymismatches, raid_mismatch_count, devices, stripes) and returns
// typed findings. Every consumer (lvm status, integrity status and scrub, monitor,
// the playbooks) decides on the Code and the Severity, never on the text:
// the text is for people and may be reworded.

import (
	"fmt"
	"strings"

	"github.com/tbhost/tbhost/internal/sizes"
	"github.com/tbhost/tbhost/internal/timeline"
)

// Severity is a Nagios status; its value is the plugin exit code. It is the
// one status type of the module: monitor, the playbooks and the lab use it.
type Severity int

// The Nagios statuses, valued as their exit codes.
const (
	OK       Severity = 0
	Warning  Severity = 1
	Critical Severity = 2
	Unknown  Severity = 3
)

// String is the Nagios name: OK, WARNING, CRITICAL or UNKNOWN.
func (s Severity) String() string {
	switch s {
	case OK:
		return "OK"
	case Warning:
		return "WARNING"
	case Critical:
		return "CRITICAL"
	default:
		return "UNKNOWN"
	}
}

// ExitCode is the Nagios plugin exit code of s (3 for anything out of range).
func (s Severity) ExitCode() int {
	if s < OK || s > Unknown {
		return int(Unknown)
	}
	return int(s)
}

// ParseSeverity reads a Nagios status name (OK, WARNING, CRITICAL, UNKNOWN;
// case-insensitive).
func ParseSeverity(name string) (Severity, bool) {
	switch strings.ToUpper(strings.TrimSpace(name)) {
	case "OK":
		return OK, true
	case "WARNING":
		return Warning, true
	case "CRITICAL":
		return Critical, true
	case "UNKNOWN":
		return Unknown, true
	}
	return Unknown, false
}

// SeverityOfExitCode maps a Nagios plugin exit code to its status (anything
// but 0-2 is UNKNOWN).
func SeverityOfExitCode(code int) Severity {
	if code < 0 || code > 2 {
		return Unknown
	}
	return Severity(code)
}

// Rank orders severities for "the worst one" like monitoring-plugins'
// max_state_alt: OK < UNKNOWN < WARNING < CRITICAL.
func (s Severity) Rank() int {
	switch s {
	case OK:
		return 0
	case Warning:
		return 2
	case Critical:
		return 3
	}
	return 1
}

// Worse returns the more serious of a and b.
func Worse(a, b Severity) Severity {
	if b.Rank() > a.Rank() {
		return b
	}
	return a
}

// MarshalText writes the Nagios name (JSON: "WARNING").
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a Nagios name.
func (s *Severity) UnmarshalText(b []byte) error {
	v, ok := ParseSeverity(string(b))
	if !ok {
		return fmt.Errorf("severity %q: want OK, WARNING, CRITICAL or UNKNOWN", b)
	}
	*s = v
	return nil
}

// Code names a kind of finding. The values are an API (JSON, alerts,
// scripts): they never change meaning; new ones may be added.
type Code string

// Finding codes. Names follow lvs fields and lvmraid(7).
const (
	// CodeRAIDDegraded: the LV is partial (lv_health_status "partial" or
	// lv_attr health 'p'): a PV is missing and the array runs degraded.
	CodeRAIDDegraded Code = "raid-degraded"
	// CodeImageMissing: an image's extents lie on a PV LVM cannot find
	// (devices "[unknown]"), or on no device at all.
	CodeImageMissing Code = "image-missing"
	// CodeImageSpansDisks: an image lies on more than one PV.
	CodeImageSpansDisks Code = "image-spans-disks"
	// CodeLVInactive: lv_attr state (char 5) is not 'a': no data can be read.
	CodeLVInactive Code = "lv-inactive"
	// CodeRefreshNeeded: lv_health_status "refresh needed" or lv_attr 'r'.
	CodeRefreshNeeded Code = "refresh-needed"
	// CodeRepairNeeded: lv_health_status "repair needed".
	CodeRepairNeeded Code = "repair-needed"
	// CodeMismatchesExist: lv_health_status "mismatches exist" or lv_attr 'm'.
	CodeMismatchesExist Code = "mismatches-exist"
	// CodeWritemostly: lv_health_status "writemostly".
	CodeWritemostly Code = "writemostly"
	// CodeLVFailed: lv_health_status "failed".
	CodeLVFailed Code = "lv-failed"
	// CodeMetadataReadOnly: lv_health_status "metadata_read_only".
	CodeMetadataReadOnly Code = "metadata-read-only"
	// CodeHealthUnknown: lv_health_status "unknown" (LVM cannot tell).
	CodeHealthUnknown Code = "health-unknown"
	// CodeHealthUnrecognized: an lv_health_status value tbhost does not
	// know, or an lv_attr health character it does not know: not OK.
	CodeHealthUnrecognized Code = "health-unrecognized"
	// CodeValueUnrecognized: a counter health is judged on
	// (integritymismatches, raid_mismatch_count, sync_percent) that tbhost
	// cannot read (not a count, not a percent, empty where an active LV
	// reports it): it cannot judge the LV, which is not OK. monitor also
	// gives it (UNKNOWN) to a redundant md array whose md/degraded or
	// md/raid_disks is missing.
	CodeValueUnrecognized Code = "value-unrecognized"
	// CodeIntegrityMismatches: dm-integrity counted blocks whose checksum
	// did not match (integritymismatches > 0).
	CodeIntegrityMismatches Code = "integrity-mismatches"
	// CodeRAIDMismatches: raid_mismatch_count > 0 after a check.
	CodeRAIDMismatches Code = "raid-mismatches"
	// CodeSyncInProgress: an initial sync or resync runs (sync_percent < 100).
	CodeSyncInProgress Code = "sync-in-progress"
	// CodeRebuilding: raid_sync_action "recover": an image is being rebuilt.
	CodeRebuilding Code = "rebuilding"
	// CodeCheckInProgress: raid_sync_action "check" (a scrub; reads are not
	// the workload's, but redundancy is intact).
	CodeCheckInProgress Code = "check-in-progress"
	// CodeNotSynced: sync_percent < 100 while no sync runs (idle, frozen).
	CodeNotSynced Code = "not-synced"
	// CodeIntegrityAbsent: a RAID LV without dm-integrity on any image.
	CodeIntegrityAbsent Code = "integrity-absent"
	// CodeIntegrityPartial: only some images have dm-integrity.
	CodeIntegrityPartial Code = "integrity-partial"
	// CodeNoImages: the report lists no _rimage_N sub-LVs of a RAID LV.
	CodeNoImages Code = "no-images"
	// CodeLVNotFound: the LV asked for does not exist.
	CodeLVNotFound Code = "lv-not-found"
	// CodeNoRAIDLV: there is no RAID LV at all. No longer a finding:
	// lvm status returns ErrNoRAIDLV (exit 3, nothing to work on); the
	// code stays reserved with its meaning.
	CodeNoRAIDLV Code = "no-raid-lv"
	// CodePlanMismatch: the array differs from the reviewed plan.
	CodePlanMismatch Code = "plan-mismatch"
	// CodePVUnused: a PV of the array's VG holds no image of it.
	CodePVUnused Code = "pv-unused"
	// CodeMemberIdle, CodeMemberSkewed, CodeMemberGone: monitor's read
	// activity findings (from /proc/diskstats, not from LVM).
	CodeMemberIdle   Code = "member-idle"
	CodeMemberSkewed Code = "member-skewed"
	CodeMemberGone   Code = "member-gone"
	// CodeMemberSlow: a member whose read latency stays far above its
	// siblings' under the same traffic (fail-slow; monitor, issue 20).
	CodeMemberSlow Code = "member-slow"
	// CodeMemberFaulty: an md member marked faulty (md's dev-*/state).
	CodeMemberFaulty Code = "member-faulty"
	// CodeArrayState: an md array_state that is not clean or active.
	CodeArrayState Code = "array-state"
	// CodeNoTraffic: too little traffic to judge skew (monitor --no-traffic).
	CodeNoTraffic Code = "no-traffic"
	// CodeNoSamples: fewer than two samples, no rates.
	CodeNoSamples Code = "no-samples"
	// CodeLVMUnreadable: LVM's report could not be read or parsed, so
	// health cannot be judged (monitor check: UNKNOWN). Also an array whose
	// report contradicts itself (AssessArray): its devices column names a
	// sub-LV the report leaves out, or it lists fewer or more images than
	// the array's stripes. lvm2 lists an image on a missing PV (devices
	// "[unknown]", health partial), it never leaves it out: such a report
	// is stale or edited, and tbhost cannot judge the array from it.
	CodeLVMUnreadable Code = "lvm-unreadable"

	// Disk replacement (issue 14).

	// CodeSMART: smartctl reports a member disk failing or wearing
	// (assessment FAILED, reallocated/pending/uncorrectable sectors, NVMe
	// media errors or critical warning): WARNING, plan its replacement.
	CodeSMART Code = "smart"

	// CodeIntegrityReinit: dm-integrity is (re-)initialising an image's
	// checksums (its sync_percent < 100, e.g. after `lvconvert
	// --raidintegrity y`): the blocks above its point are not checked yet.
	// WARNING; a state that passes (Progress).
	CodeIntegrityReinit Code = "integrity-reinitialising"
	// CodeMissingAtBoot: a member was missing at activation and the
	// raid+integrity LV was left inactive (lvm2 2.03.16 activates it in no
	// mode): CRITICAL, `tbhost lvm replace VG/LV --old missing` brings it back.
	CodeMissingAtBoot Code = "missing-at-boot"
)

// Finding is one judgement on an LV or one of its images.
type Finding struct {
	Code     Code     `json:"code"`
	Severity Severity `json:"severity"`
	// LV is the LV the finding is on, vg/lv: the array or one of its images.
	LV string `json:"lv"`
	// Image is the raid image (tables_rimage_2) when the finding concerns
	// one; "" for the array as a whole.
	Image string `json:"image,omitempty"`
	// Disks are the PVs under Image (or under the array), when known.
	Disks []string `json:"disks,omitempty"`
	// Field is the lvs field that shows it (lv_health_status, lv_attr, ...).
	Field string `json:"field,omitempty"`
	// Value is that field's value ("partial", "rwi-aor-p-", "recover").
	Value string `json:"value,omitempty"`
	// Count is the number behind a count finding (mismatches), 0 otherwise.
	Count int64 `json:"count,omitempty"`
	// Percent is sync_percent for the sync findings, -1 when not known.
	Percent float64 `json:"percent,omitempty"`
	// Text says it for a person, naming the LV. Wording may change: never
	// decide on it.
	Text string `json:"text"`
	// Advice is what to do about it ("" when nothing).
	Advice string `json:"advice,omitempty"`
}

// Progress reports whether f is a state that passes by itself (a sync,
// rebuild or check running) rather than a problem.
func (f Finding) Progress() bool {
	switch f.Code {
	case CodeSyncInProgress, CodeRebuilding, CodeCheckInProgress, CodeIntegrityReinit:
		return true
	}
	return false
}

// Degrading reports whether f means the array runs (or would run) without
// one of its members: partial, or an image on a missing PV.
func (f Finding) Degrading() bool {
	return f.Code == CodeRAIDDegraded || f.Code == CodeImageMissing || f.Code == CodeMissingAtBoot
}

// healthCodes maps the lv_health_status values lvm2 documents to codes and severities.
var healthCodes = map[string]struct {
	code Code
	sev  Severity
}{
	"partial":            {CodeRAIDDegraded, Critical},
	"refresh needed":     {CodeRefreshNeeded, Critical},
	"repair needed":      {CodeRepairNeeded, Critical},
	"failed":             {CodeLVFailed, Critical},
	"mismatches exist":   {CodeMismatchesExist, Warning},
	"writemostly":        {CodeWritemostly, Warning},
	"metadata_read_only": {CodeMetadataReadOnly, Warning},
	"unknown":            {CodeHealthUnknown, Warning},
}

// attrHealthCodes are the other health characters of lv_attr (char 9) that
// lvs(8) documents; anything else is health-unrecognized.
var attrHealthCodes = map[byte]Code{'w': CodeWritemostly, 'X': CodeHealthUnknown, 'F': CodeLVFailed, 'M': CodeMetadataReadOnly}

// Findings judges the LV's own health fields: lv_health_status, the health
// character of lv_attr, counters tbhost could not read (BadValues),
// integrity mismatches and raid mismatches, in that order. Empty means
// healthy. A sync in progress is not judged here (see AssessArray). Both
// lv_health_status and lv_attr may report the same state: each gives its
// own finding (same Code, different Field).
func (lv LV) Findings() []Finding {
	var out []Finding
	name := lv.FullName()
	add := func(f Finding) {
		f.LV = name
		out = append(out, f)
	}
	if lv.Health != "" {
		if hc, ok := healthCodes[lv.Health]; ok {
			add(Finding{Code: hc.code, Severity: hc.sev, Field: "lv_health_status", Value: lv.Health,
				Text: fmt.Sprintf("%s: health %q", name, lv.Health)})
		} else {
			add(Finding{Code: CodeHealthUnrecognized, Severity: Warning, Field: "lv_health_status", Value: lv.Health,
				Text: fmt.Sprintf("%s: unknown health value %q (treated as not OK)", name, lv.Health)})
		}
	}
	if len(lv.Attr) >= 9 {
		f := Finding{Field: "lv_attr", Value: lv.Attr}
		switch c := lv.Attr[8]; c {
		case '-':
			f.Code = ""
		case 'p':
			f.Code, f.Severity = CodeRAIDDegraded, Critical
			f.Text = fmt.Sprintf("%s: attr %s: partial (a PV is missing)", name, lv.Attr)
		case 'r':
			f.Code, f.Severity = CodeRefreshNeeded, Critical
			f.Text = fmt.Sprintf("%s: attr %s: refresh needed", name, lv.Attr)
		case 'm':
			f.Code, f.Severity = CodeMismatchesExist, Warning
			f.Text = fmt.Sprintf("%s: attr %s: mismatches exist", name, lv.Attr)
		default: // lvs(8): (w)ritemostly, (X) unknown; thin: (F)ailed, (M)etadata read only
			f.Code, f.Severity = attrHealthCodes[c], Warning
			if f.Code == "" {
				f.Code = CodeHealthUnrecognized
			}
			f.Text = fmt.Sprintf("%s: attr %s: volume health %q", name, lv.Attr, string(c))
		}
		if f.Code != "" {
			add(f)
		}
	}
	for _, b := range lv.BadValues {
		add(Finding{Code: CodeValueUnrecognized, Severity: Warning, Field: b.Field, Value: b.Value,
			Text: fmt.Sprintf("lvs reported %s=%q for %s: %s; tbhost cannot judge it", b.Field, b.Value, name, b.Why)})
	}
	if lv.IntegrityMismatches > 0 {
		add(Finding{Code: CodeIntegrityMismatches, Severity: Warning, Field: "integritymismatches",
			Value: fmt.Sprint(lv.IntegrityMismatches), Count: lv.IntegrityMismatches,
			Text: fmt.Sprintf("%s: %d integrity mismatches", name, lv.IntegrityMismatches)})
	}
	if lv.RaidMismatchCount > 0 {
		add(Finding{Code: CodeRAIDMismatches, Severity: Warning, Field: "raid_mismatch_count",
			Value: fmt.Sprint(lv.RaidMismatchCount), Count: lv.RaidMismatchCount,
			Text: fmt.Sprintf("%s: raid_mismatch_count %d", name, lv.RaidMismatchCount)})
	}
	return out
}

// Active reports whether lv_attr says the LV is active (char 5 'a').
// An attr too short to tell counts as active (nothing to judge).
func (lv LV) Active() bool { return len(lv.Attr) < 5 || lv.Attr[4] == 'a' }

// OnMissingPV reports whether the LV's extents lie, through its sub-LVs, on
// a PV LVM cannot find (the devices column says "[unknown]").
func OnMissingPV(all []LV, lv LV) bool {
	visited := map[string]bool{} // each sub-LV once: a crafted report may reference one many times
	var walk func(LV, int) bool
	walk = func(l LV, depth int) bool {
		if depth > 16 || visited[l.Name] {
			return false
		}
		visited[l.Name] = true
		for _, s := range l.Segments {
			for _, e := range s.Devices {
				if e.Name == "[unknown]" {
					return true
				}
				if !e.IsDevice() {
					if sub, ok := Find(all, l.VG, e.Name); ok && walk(sub, depth+1) {
						return true
					}
				}
			}
		}
		return false
	}
	return walk(lv, 0)
}

// lostDisk reports whether img's PV is gone: its extents lie on a PV LVM
// cannot find ("[unknown]"), or on no PV at all. An image whose sub-LVs
// the report leaves out is not judged so: reportConsistency says the
// report cannot be judged, never "replace the disk".
func lostDisk(all []LV, img LV) bool {
	if OnMissingPV(all, img) {
		return true
	}
	return len(PhysicalDevices(all, img)) == 0 && len(unlistedSubLVs(all, img)) == 0
}

// ImageHealth is one raid image of an array and its findings.
type ImageHealth struct {
	LV    LV
	Disks []string // the PVs under it, in order (none when missing)
	// Missing: its PV is gone (or it lies on no PV).
	Missing  bool
	Findings []Finding
}

// ArrayHealth is the judgement of one RAID LV from an `lvs -a` report.
type ArrayHealth struct {
	LV LV
	// Findings on the array itself: its own health fields, activation and
	// sync state. Image findings are in Images.
	Findings []Finding
	Images   []ImageHealth
}

// AssessArray judges a RAID LV and its images from an `lvs -a` report of
// its whole VG.
func AssessArray(all []LV, top LV) ArrayHealth {
	h := ArrayHealth{LV: top, Findings: top.Findings()}
	name := top.FullName()
	images := SubLVs(all, top, "rimage")
	missingImages := 0
	for _, img := range images {
		if lostDisk(all, img) {
			missingImages++
		}
	}
	if !top.Active() {
		f := Finding{Code: CodeLVInactive, Severity: Critical, LV: name,
			Field: "lv_attr", Value: top.Attr,
			Text:   fmt.Sprintf("%s is not active (attr %s)", name, top.Attr),
			Advice: "lvchange -ay " + name}
		if missingImages > 0 {
			f.Advice = ReplaceAdvice(name)
		}
		h.Findings = append(h.Findings, f)
		if missingImages == 1 {
			h.Findings = append(h.Findings, Finding{Code: CodeMissingAtBoot, Severity: Critical, LV: name, Field: "lv_attr", Value: top.Attr,
				Text: fmt.Sprintf("%s was not activated: a member was missing at boot, and lvm2 2.03.16 activates raid+integrity with a member missing in no mode (vgchange -ay --activationmode degraded is refused); the tables are offline. Bring the disk back, or replace it: %s",
					name, ReplaceAdvice(name)),
				Advice: ReplaceAdvice(name)})
		}
	}
	h.Findings = append(h.Findings, reportConsistency(all, top, images)...)
	if f, ok := syncFinding(top); ok {
		if f.Code == CodeRebuilding || f.Code == CodeSyncInProgress {
			f.Text += eta(f.Percent, imageBytes(images), timeline.DefaultHDDRate)
			if f.Code == CodeRebuilding {
				f.Advice = "wait for the rebuild; if tbhost lvm replace was interrupted, run it again with the same arguments: it continues"
			}
		}
		h.Findings = append(h.Findings, f)
	}
	if f, ok := reinitFinding(top, images); ok {
		h.Findings = append(h.Findings, f)
	}
	for _, img := range images {
		ih := ImageHealth{LV: img, Disks: PhysicalDevices(all, img), Findings: img.Findings()}
		for i := range ih.Findings {
			ih.Findings[i].Image, ih.Findings[i].Disks = img.Name, ih.Disks
		}
		if lostDisk(all, img) {
			ih.Missing = true
			state := "the array runs degraded"
			if !top.Active() { // missing at boot: nothing runs, the tables are offline
				state = "the array is not active"
			}
			ih.Findings = append(ih.Findings, Finding{Code: CodeImageMissing, Severity: Critical,
				LV: img.FullName(), Image: img.Name, Disks: ih.Disks, Field: "devices", Value: "[unknown]",
				Text:   fmt.Sprintf("%s has lost its disk (lvs shows its PV as [unknown]): %s; replace the disk: %s", img.Name, state, ReplaceAdvice(name)),
				Advice: ReplaceAdvice(name)})
		}
		if len(ih.Disks) > 1 {
			ih.Findings = append(ih.Findings, Finding{Code: CodeImageSpansDisks, Severity: Warning,
				LV: img.FullName(), Image: img.Name, Disks: ih.Disks, Field: "devices", Count: int64(len(ih.Disks)),
				Text: fmt.Sprintf("%s spans %d devices (%s): reads are unbalanced", img.Name, len(ih.Disks), strings.Join(ih.Disks, ", "))})
		}
		h.Images = append(h.Images, ih)
	}
	return h
}

// reportConsistency checks the array's own row against the sub-LVs the
// report lists (images: SubLVs(all, top, "rimage")). lvm2 lists every
// sub-LV of a RAID LV, an image on a missing PV too (devices "[unknown]",
// health partial): a devices entry naming a sub-LV the report leaves out,
// or a number of images other than the array's stripes, is a report that
// contradicts itself (stale, edited, or cut short). The array cannot be
// judged from it: an lvm-unreadable finding (UNKNOWN) naming the array and
// the absent sub-LV, never OK.
func reportConsistency(all []LV, top LV, images []LV) []Finding {
	name := top.FullName()
	advice := fmt.Sprintf("compare with lvs -a -o +devices %s on the host; a snapshot: take it again (tbhost inventory --snapshot)", top.VG)
	var out []Finding
	for _, u := range unlistedSubLVs(all, top) {
		out = append(out, Finding{Code: CodeLVMUnreadable, Severity: Unknown, LV: name, Image: u.Name,
			Field: "devices", Value: u.Entry,
			Text: fmt.Sprintf("%s: the devices column of %s names %q, which the lvs report does not list: the report is inconsistent (lvm2 lists an image on a missing disk as partial, it does not leave it out), so tbhost cannot judge the array",
				name, u.In, u.Name),
			Advice: advice})
	}
	if len(out) > 0 || len(top.Segments) == 0 || !strings.HasPrefix(top.SegType(), "raid") {
		return out
	}
	if s := top.Segments[0]; s.Stripes > 0 && s.Stripes != len(images) {
		var names []string
		for _, img := range images {
			names = append(names, img.Name)
		}
		out = append(out, Finding{Code: CodeLVMUnreadable, Severity: Unknown, LV: name,
			Field: "stripes", Value: fmt.Sprint(s.Stripes), Count: int64(len(images)),
			Text: fmt.Sprintf("%s: the report lists %d rimage sub-LVs (%s) but the array has %d stripes: the report is inconsistent, so tbhost cannot judge the array",
				name, len(images), strings.Join(names, ", "), s.Stripes),
			Advice: advice})
	}
	return out
}

// unlisted is a devices entry naming a sub-LV that the report does not list.
type unlisted struct {
	Name  string // the sub-LV named (tables_rimage_2)
	Entry string // the devices entry (tables_rimage_2(0))
	In    string // the LV whose devices column names it (tables)
}

// unlistedSubLVs follows lv's segments down through its sub-LVs, as
// PhysicalDevices does, and returns the devices entries that name a sub-LV
// the report does not list (a PV path and "[unknown]" are not sub-LVs).
func unlistedSubLVs(all []LV, lv LV) []unlisted {
	var out []unlisted
	said := map[string]bool{}
	walkDevices(all, lv, func(in LV, e Extent, listed bool) {
		if listed || e.IsDevice() || e.Name == "[unknown]" || said[e.Name] {
			return
		}
		said[e.Name] = true
		out = append(out, unlisted{Name: e.Name, Entry: fmt.Sprintf("%s(%d)", e.Name, e.Start), In: in.Name})
	})
	return out
}

// ReplaceAdvice is the command that replaces a gone member of vg/lv.
func ReplaceAdvice(name string) string {
	return fmt.Sprintf("tbhost lvm replace --dry-run %s --old missing --new /dev/NEWDISK (then without --dry-run; docs/lvm.md)", name)
}

func imageBytes(images []LV) int64 {
	var n int64
	for _, img := range images {
		n = max(n, img.Size)
	}
	return n
}

// eta words the time left of a sync at pct of bytes at rate (a forecast at
// the default rate: lvs gives no rate).
func eta(pct float64, bytes, rate int64) string {
	if bytes <= 0 || rate <= 0 || pct < 0 || pct >= 100 {
		return ""
	}
	left := (100 - pct) / 100 * float64(bytes) / float64(rate)
	return fmt.Sprintf(" (ETA about %s at %s/s per disk)", timeline.Human(left), sizes.Format(rate))
}

// reinitFinding: an integrity image whose sync_percent is below 100 while
// the array itself is in sync: dm-integrity is recalculating checksums
// (after lvconvert --raidintegrity y). Percent is the slowest image's.
func reinitFinding(top LV, images []LV) (Finding, bool) {
	if top.SyncPercent >= 0 && top.SyncPercent < 100 {
		return Finding{}, false // the initial sync or a rebuild says it
	}
	low, n := 100.0, 0
	for _, img := range images {
		if img.SegType() == "integrity" && img.SyncPercent >= 0 && img.SyncPercent < 100 {
			low = min(low, img.SyncPercent)
			n++
		}
	}
	if n == 0 {
		return Finding{}, false
	}
	name := top.FullName()
	return Finding{Code: CodeIntegrityReinit, Severity: Warning, LV: name, Field: "sync_percent", Value: fmt.Sprintf("%.2f", low), Percent: low, Count: int64(n),
		Text: fmt.Sprintf("%s: dm-integrity re-initialising %d images, %.2f%% done%s; blocks above that point are not checked yet",
			name, n, low, eta(low, imageBytes(images), timeline.DefaultIntegrityRate)),
		Advice: "wait; if tbhost lvm replace was interrupted, run it again with the same arguments: it continues"}, true
}

// syncFinding is the sync state of a RAID LV when sync_percent < 100.
func syncFinding(lv LV) (Finding, bool) {
	if lv.SyncPercent < 0 || lv.SyncPercent >= 100 {
		return Finding{}, false
	}
	f := Finding{LV: lv.FullName(), Field: "raid_sync_action", Value: lv.SyncAction, Percent: lv.SyncPercent,
		Text: fmt.Sprintf("%s: sync action %q at %.2f%%", lv.FullName(), lv.SyncAction, lv.SyncPercent)}
	switch lv.SyncAction {
	case "check":
		f.Code, f.Severity = CodeCheckInProgress, OK
	case "recover":
		f.Code, f.Severity = CodeRebuilding, Warning
	case "idle", "frozen":
		f.Code, f.Severity = CodeNotSynced, Warning
	default: // resync, repair, reshape, "" (lvm2 before the sync starts)
		f.Code, f.Severity = CodeSyncInProgress, Warning
	}
	return f, true
}

// All returns the array's findings, then each image's.
func (h ArrayHealth) All() []Finding {
	out := append([]Finding(nil), h.Findings...)
	for _, img := range h.Images {
		out = append(out, img.Findings...)
	}
	return out
}

// Degraded returns the first finding saying the array runs without a
// member (partial LV, image on a missing PV).
func (h ArrayHealth) Degraded() (Finding, bool) {
	for _, f := range h.All() {
		if f.Degrading() {
			return f, true
		}
	}
	return Finding{}, false
}

// Sync returns the array's sync-state finding, if a sync is not complete.
func (h ArrayHealth) Sync() (Finding, bool) {
	for _, f := range h.Findings {
		if ProgressCode(f.Code) {
			return f, true
		}
	}
	return Finding{}, false
}

// ProgressCode reports whether a finding with code c says how far a sync,
// rebuild, check or integrity re-initialisation has come: its text changes
// as the work advances, so two looks give two texts of one finding.
func ProgressCode(c Code) bool {
	switch c {
	case CodeSyncInProgress, CodeRebuilding, CodeCheckInProgress, CodeNotSynced, CodeIntegrityReinit:
		return true
	}
	return false
}

// Worst is the most serious severity among the findings (OK when none).
func (h ArrayHealth) Worst() Severity {
	s := OK
	for _, f := range h.All() {
		s = Worse(s, f.Severity)
	}
	return s
}

// IntegrityCoverage judges whether every image of a RAID LV has a
// dm-integrity layer: no-images, integrity-absent or integrity-partial.
func IntegrityCoverage(h ArrayHealth) []Finding {
	name := h.LV.FullName()
	with := 0
	for _, img := range h.Images {
		if img.LV.SegType() == "integrity" {
			with++
		}
	}
	switch {
	case len(h.Images) == 0:
		return []Finding{{Code: CodeNoImages, Severity: Warning, LV: name,
			Text: fmt.Sprintf("%s: no rimage sub-LVs in the report", name)}}
	case with == 0:
		return []Finding{{Code: CodeIntegrityAbsent, Severity: Warning, LV: name,
			Text:   fmt.Sprintf("%s: no dm-integrity layer (add one: lvconvert --raidintegrity y %s)", name, name),
			Advice: "lvconvert --raidintegrity y " + name}}
	case with < len(h.Images):
		return []Finding{{Code: CodeIntegrityPartial, Severity: Warning, LV: name, Count: int64(with),
			Text: fmt.Sprintf("%s: only %d of %d images have dm-integrity", name, with, len(h.Images))}}
	}
	return nil
}

// HasCode reports whether any finding has one of the codes.
func HasCode(fs []Finding, codes ...Code) bool {
	for _, f := range fs {
		for _, c := range codes {
			if f.Code == c {
				return true
			}
		}
	}
	return false
}

// Texts returns the findings' texts, in order.
func Texts(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Text)
	}
	return out
}
