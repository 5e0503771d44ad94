package lvm

// This file is the first half of `tbhost lvm replace`: it finds out from
// `lvs -a` (and the inventory: is the old disk still there?) which of the
// three cases a member replacement is in, and builds the commands for that
// case, with an estimate of each long step. replacerun.go runs them.
//
// What lvm2 2.03.16 allows (from its source at tag
// v2_03_16): repair and replace with integrity still on, for an active LV
// that is fully in sync; an inactive raid+integrity LV with a missing PV
// cannot be activated in any mode until integrity is removed; integrity can
// be added again only when no PV is missing. So integrity is removed in
// case c only, and redundancy is never removed by tbhost (the rebuild is
// the only time the array runs without it).

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/sizes"
	"github.com/tbhost/tbhost/internal/timeline"
)

// ReplaceCase is which situation a member replacement is in.
type ReplaceCase string

// The three cases of issue 14.
const (
	// CasePresent (a): the old disk is still there (failing, or the
	// operator wants it out): lvconvert --replace.
	CasePresent ReplaceCase = "a-present"
	// CaseVanished (b): the old disk vanished while the array ran: the LV
	// is active and degraded: lvconvert --repair onto the new disk.
	CaseVanished ReplaceCase = "b-vanished"
	// CaseMissingAtBoot (c): the old disk was missing at activation: the
	// LV is inactive. Integrity off, activate degraded, repair, integrity on.
	CaseMissingAtBoot ReplaceCase = "c-missing-at-boot"
)

// OldMissing is what --old takes for a member whose disk is gone.
const OldMissing = "missing"

// Situation is what DetectReplace found: the case, why, and the facts the
// commands and estimates need.
type Situation struct {
	Case  ReplaceCase `json:"case"`
	Why   []string    `json:"why"`
	VG    string      `json:"vg"`
	LV    string      `json:"lv"`
	Image string      `json:"image"` // the image being replaced: tables_rimage_2
	// OldPV is the old disk's PV as lvs names it (/dev/sdc), "[unknown]"
	// when it is gone.
	OldPV string `json:"old_pv"`
	// Members are the PVs of the other images (in image order).
	Members     []string `json:"members"`
	Images      int      `json:"images"`
	DataStripes int      `json:"data_stripes"`
	Extents     int64    `json:"extents"` // the LV's
	ExtentSize  int64    `json:"extent_size"`
	// ImageExtents/ImageBytes: one image's data (what the new disk holds).
	ImageExtents int64 `json:"image_extents"`
	ImageBytes   int64 `json:"image_bytes"`
	// Integrity as the array had it when tbhost first looked (case c
	// removes it and adds it back with these).
	Integrity          bool   `json:"integrity"`
	IntegrityMode      string `json:"integrity_mode,omitempty"`
	IntegrityBlockSize int    `json:"integrity_block_size,omitempty"`
	// RefreshNeeded: case a, but the kernel already ejected the old disk
	// (health "refresh needed" or the image is partial): --repair instead
	// of --replace.
	RefreshNeeded bool `json:"refresh_needed,omitempty"`
	// LogicalBlockSize of the other members (0 when the inventory did not
	// say): the new disk must match it.
	LogicalBlockSize int64 `json:"logical_block_size,omitempty"`
}

// Array is the LV as "vg/lv".
func (s *Situation) Array() string { return s.VG + "/" + s.LV }

// NeededExtents is what the new PV must hold: the image, its rmeta and
// (with integrity) its integrity metadata, as lvm2 2.03.16 sizes it.
func (s *Situation) NeededExtents() int64 {
	n := s.ImageExtents + RmetaExtents
	if s.Integrity {
		n += IntegrityMetaExtents(s.ImageExtents, s.ExtentSize)
	}
	return n
}

// DetectReplace judges which case replacing old (a device of the array, or
// OldMissing) of vg/lv is, from `lvs -a` of the VG (all), the VG's extent
// size and the inventory (nil: the old disk's presence is judged from lvs
// alone). It refuses what no case covers: two members gone, an old disk
// that holds no image, an inactive LV whose disks are all there.
func DetectReplace(all []LV, extentSize int64, inv *blockdev.Inventory, vg, lv, old string) (*Situation, error) {
	name := vg + "/" + lv
	refuse := func(format string, a ...any) error {
		return &RefusedError{What: "lvm replace refused (nothing was run)", Problems: []string{fmt.Sprintf(format, a...)}}
	}
	top, ok := Find(all, vg, lv)
	if !ok {
		return nil, refuse("%s does not exist (lvm lvs -a %s shows no such LV)", name, vg)
	}
	if !strings.HasPrefix(top.SegType(), "raid") || top.SegType() == "raid0" || len(top.Segments) != 1 {
		return nil, refuse("%s is %s in %d segments: tbhost replaces members of a one-segment raid5 (the tables array) only", name, top.SegType(), len(top.Segments))
	}
	if extentSize <= 0 {
		return nil, refuse("VG %s: extent size %d is not known", vg, extentSize)
	}
	images := SubLVs(all, top, "rimage")
	seg := top.Segments[0]
	s := &Situation{VG: vg, LV: lv, Images: len(images), ExtentSize: extentSize, Extents: top.Size / extentSize,
		DataStripes: seg.DataStripes}
	if s.DataStripes == 0 {
		s.DataStripes = seg.Stripes - parityDevices(seg.Type)
	}
	if len(images) < 3 || len(images) != seg.Stripes {
		return nil, refuse("%s: %d rimage sub-LVs for %d stripes in the report: not the shape tbhost built (read lvs -a %s)", name, len(images), seg.Stripes, vg)
	}
	var missing []string
	var onOld []string
	oldPath := old
	if old != OldMissing && inv != nil {
		if d := inv.Find(old); d != nil {
			oldPath = d.Path
		}
	}
	with := 0
	for _, img := range images {
		if img.SegType() == "integrity" {
			with++
		}
		devs := PhysicalDevices(all, img)
		gone := len(devs) == 0 || OnMissingPV(all, img)
		if gone {
			missing = append(missing, img.Name)
		}
		if old != OldMissing && !gone && samePV(devs, oldPath, old, inv) {
			onOld = append(onOld, img.Name)
			continue
		}
		if !gone && len(devs) > 0 {
			s.Members = append(s.Members, devs[0])
		}
		if s.ImageExtents == 0 || img.Size/extentSize < s.ImageExtents {
			s.ImageExtents = img.Size / extentSize
		}
	}
	s.ImageBytes = s.ImageExtents * extentSize
	s.Integrity = with == len(images)
	if with > 0 && with < len(images) {
		return nil, refuse("%s: only %d of %d images have integrity (an interrupted lvconvert --raidintegrity?): finish it by hand first (lvconvert --raidintegrity y %s), or resume the replace that started it", name, with, len(images), name)
	}
	if s.Integrity {
		s.IntegrityMode, s.IntegrityBlockSize = top.IntegrityMode, top.IntegrityBlockSize
	}
	if inv != nil {
		for _, m := range s.Members {
			if d := inv.Find(m); d != nil && d.LogicalBlockSize > 0 {
				s.LogicalBlockSize = d.LogicalBlockSize
				break
			}
		}
	}
	if len(missing) > 1 {
		return nil, refuse("%s: %d members are gone (%s): a RAID 5 survives one; tbhost cannot rebuild it. Bring the disks back (cables, controller) before anything else", name, len(missing), strings.Join(missing, ", "))
	}
	if old == OldMissing {
		if len(missing) == 0 {
			return nil, refuse("%s: no image lies on a missing PV (lvs shows none on [unknown]): name the disk to replace with --old DEV", name)
		}
		s.Image, s.OldPV = missing[0], "[unknown]"
		if top.Active() {
			s.Case = CaseVanished
			s.Why = append(s.Why, fmt.Sprintf("%s is active (attr %s) and %s lies on a missing PV ([unknown], health %q): the disk vanished while the array ran", name, top.Attr, s.Image, top.Health),
				"repair onto the new disk while it stays active: do not deactivate or reboot (that makes it case c)")
		} else {
			s.Case = CaseMissingAtBoot
			s.Why = append(s.Why, fmt.Sprintf("%s is not active (attr %s) and %s lies on a missing PV: the disk was missing at activation", name, top.Attr, s.Image),
				"lvm2 2.03.16 refuses to activate raid+integrity with a member missing in any mode: integrity is removed first, the tables come back degraded and readable, then the repair, then integrity again")
			if !s.Integrity {
				s.Why = append(s.Why, "the array has no integrity layer: it is activated degraded, repaired, and integrity is not added (it was not there)")
			}
		}
		return s, nil
	}
	if len(onOld) == 0 {
		if inv != nil && inv.Find(old) == nil && len(missing) == 1 {
			return nil, refuse("%s is not on this host any more and %s lies on a missing PV: run with --old missing", old, missing[0])
		}
		return nil, refuse("%s holds no image of %s (its members: %s); name the member to replace (lvm status shows the disk under each image)", old, name, strings.Join(s.Members, ", "))
	}
	if len(onOld) > 1 {
		return nil, refuse("%s holds %d images of %s (%s): tbhost replaces one image per disk", old, len(onOld), name, strings.Join(onOld, ", "))
	}
	if len(missing) == 1 {
		return nil, refuse("%s: %s lies on a missing PV: replace that one first (--old missing); a RAID 5 cannot lose %s as well", name, missing[0], old)
	}
	if !top.Active() {
		return nil, refuse("%s is not active (attr %s) though every disk is there: activate it first (lvm lvchange -ay %s); --replace needs an active LV", name, top.Attr, name)
	}
	s.Image, s.OldPV, s.Case = onOld[0], oldPath, CasePresent
	s.Why = append(s.Why, fmt.Sprintf("%s is present and holds %s of %s (active, attr %s): replace it while it still serves reads", oldPath, s.Image, name, top.Attr))
	if img, ok := Find(all, vg, s.Image); ok && (top.Health == "refresh needed" || img.Health != "" || (len(top.Attr) >= 9 && top.Attr[8] == 'r')) {
		s.RefreshNeeded = true
		s.Why = append(s.Why, fmt.Sprintf("the kernel already failed %s (health %q, image health %q): lvconvert --repair instead of --replace", s.Image, top.Health, img.Health))
	}
	return s, nil
}

// samePV reports whether devs (as lvs prints them) name the old disk.
func samePV(devs []string, oldPath, old string, inv *blockdev.Inventory) bool {
	for _, d := range devs {
		if d == oldPath || d == old {
			return true
		}
		if inv != nil {
			if a, b := inv.Find(d), inv.Find(old); a != nil && a == b {
				return true
			}
		}
	}
	return false
}

// Kinds of replace steps.
const (
	RStepIntegrityOff  = "integrity-off"
	RStepActivate      = "activate-degraded"
	RStepPVCreate      = "pvcreate"
	RStepVGExtend      = "vgextend"
	RStepWaitInSync    = "wait-in-sync"
	RStepReplace       = "replace"
	RStepRepair        = "repair"
	RStepWaitRebuild   = "wait-rebuild"
	RStepVGReduce      = "vgreduce"
	RStepIntegrityOn   = "integrity-on"
	RStepWaitIntegrity = "wait-integrity"
)

// ReplaceStep is one step: a command, or a wait for the kernel.
type ReplaceStep struct {
	Kind string  `json:"kind"`
	Argv Command `json:"argv,omitempty"` // nil for the waits
	What string  `json:"what"`
	// Estimate of a long step at this array's size.
	Estimate *timeline.Step `json:"estimate,omitempty"`
}

// ReplacePlan is the steps of one replacement, in order, with what the
// array goes through.
type ReplacePlan struct {
	Situation Situation     `json:"situation"`
	New       string        `json:"new"` // the new disk's path as the commands name it
	Steps     []ReplaceStep `json:"steps"`
	// WithoutRedundancy and WithoutIntegrity are estimated seconds from the
	// first command on (the time a vanished disk was already gone adds to
	// the first), with a text for each.
	WithoutRedundancy     float64 `json:"without_redundancy_seconds"`
	WithoutRedundancyText string  `json:"without_redundancy"`
	WithoutIntegrity      float64 `json:"without_integrity_seconds"`
	WithoutIntegrityText  string  `json:"without_integrity"`
}

// BuildReplacePlan derives the commands for s onto newPath at rates r
// (timeline.Defaults when zero). Every lvm command ends its options with
// "--" before VG names and device paths (as lvm apply's).
func BuildReplacePlan(s *Situation, newPath string, r timeline.Rates) ReplacePlan {
	if r.HDD <= 0 {
		r.HDD = timeline.DefaultHDDRate
	}
	if r.Integrity <= 0 {
		r.Integrity = timeline.DefaultIntegrityRate
	}
	name := s.Array()
	p := ReplacePlan{Situation: *s, New: newPath}
	add := func(kind, what string, argv ...string) *ReplaceStep {
		p.Steps = append(p.Steps, ReplaceStep{Kind: kind, What: what, Argv: argv})
		return &p.Steps[len(p.Steps)-1]
	}
	est := func(name, what string, bytes, rate int64) *timeline.Step {
		sec := float64(bytes) / float64(rate)
		return &timeline.Step{Name: name, What: what, Bytes: bytes, Rate: rate, Seconds: sec, Human: timeline.Human(sec)}
	}
	rebuild := est("rebuild", fmt.Sprintf("rebuild of %s onto %s: %s written at one HDD's rate", s.Image, newPath, sizes.Format(s.ImageBytes)), s.ImageBytes, r.HDD)
	reinit := est("integrity-reinit", fmt.Sprintf("dm-integrity re-initialisation of all %d images (%s each, in parallel)", s.Images, sizes.Format(s.ImageBytes)), s.ImageBytes, r.Integrity)
	if s.Case == CaseMissingAtBoot && s.Integrity {
		add(RStepIntegrityOff, fmt.Sprintf("remove integrity from every image (lvm2 2.03.16 activates nothing else); mode %s and block size %d are restored at the end", s.IntegrityMode, s.IntegrityBlockSize),
			"lvm", "lvconvert", "--yes", "--raidintegrity", "n", "--", name)
	}
	if s.Case == CaseMissingAtBoot {
		add(RStepActivate, "activate degraded: the tables are readable again (no redundancy until the rebuild ends)",
			"lvm", "lvchange", "--activate", "y", "--activationmode", "degraded", "--", name)
	}
	add(RStepPVCreate, "make the new disk a PV", "lvm", "pvcreate", "--", newPath)
	add(RStepVGExtend, "add it to "+s.VG, "lvm", "vgextend", "--", s.VG, newPath)
	switch {
	case s.Case == CasePresent && !s.RefreshNeeded:
		p.Steps = append(p.Steps, ReplaceStep{Kind: RStepWaitInSync, What: name + " must be 100% in sync before --replace (lvm2 refuses otherwise)"})
		add(RStepReplace, fmt.Sprintf("move %s from %s to %s (lvm2 builds a new integrity layer on it)", s.Image, s.OldPV, newPath),
			"lvm", "lvconvert", "--yes", "--replace", s.OldPV, "--", name, newPath)
	default:
		add(RStepRepair, fmt.Sprintf("rebuild %s on %s", s.Image, newPath), "lvm", "lvconvert", "--yes", "--repair", "--", name, newPath)
	}
	p.Steps = append(p.Steps, ReplaceStep{Kind: RStepWaitRebuild, What: "wait until the rebuild reaches 100%", Estimate: rebuild})
	if s.Case == CasePresent && !s.RefreshNeeded {
		add(RStepVGReduce, "take the old disk out of "+s.VG, "lvm", "vgreduce", "--", s.VG, s.OldPV)
	} else {
		add(RStepVGReduce, "drop the missing PV from "+s.VG+" (without --force: it refuses while an LV is partial)", "lvm", "vgreduce", "--removemissing", "--", s.VG)
	}
	if s.Case == CaseMissingAtBoot && s.Integrity {
		add(RStepIntegrityOn, fmt.Sprintf("add integrity again (%s, block size %d): every image is re-initialised in the background", s.IntegrityMode, s.IntegrityBlockSize),
			"lvm", "lvconvert", "--yes", "--raidintegrity", "y", "--raidintegritymode", s.IntegrityMode,
			"--raidintegrityblocksize", strconv.Itoa(s.IntegrityBlockSize), "--", name)
		p.Steps = append(p.Steps, ReplaceStep{Kind: RStepWaitIntegrity, What: "wait until every image's integrity re-initialisation reaches 100%", Estimate: reinit})
	}
	p.WithoutRedundancy = rebuild.Seconds
	switch s.Case {
	case CasePresent:
		p.WithoutRedundancyText = fmt.Sprintf("%s (the rebuild of %s; the old disk leaves the array at the replace)", rebuild.Human, s.Image)
		p.WithoutIntegrityText = "none: integrity stays on every image (the new image gets its own layer)"
	case CaseVanished:
		p.WithoutRedundancyText = fmt.Sprintf("%s from now (the rebuild), plus the time since the disk vanished", rebuild.Human)
		p.WithoutIntegrityText = "none: integrity stays on every image (the new image gets its own layer)"
	case CaseMissingAtBoot:
		p.WithoutRedundancyText = fmt.Sprintf("%s from the activation (the rebuild), plus the time since boot the array was offline", rebuild.Human)
		if s.Integrity {
			p.WithoutIntegrity = rebuild.Seconds + reinit.Seconds
			p.WithoutIntegrityText = fmt.Sprintf("%s: from the integrity removal through the rebuild (%s) and the re-initialisation (%s; blocks above its point are not checked yet)",
				timeline.Human(p.WithoutIntegrity), rebuild.Human, reinit.Human)
		} else {
			p.WithoutIntegrityText = "the array has no integrity layer"
		}
	}
	return p
}

// Commands are the plan's command lines, in order (waits excluded).
func (p ReplacePlan) Commands() []Command {
	var out []Command
	for _, s := range p.Steps {
		if s.Argv != nil {
			out = append(out, s.Argv)
		}
	}
	return out
}

// GuardNewDisk applies lvm apply's guards (GuardDevice) to the new disk
// and the replacement's own: large enough for the image with its metadata,
// the members' logical block size, no larger than the integrity block
// size, and not a member already. pv is the new disk's PV now (nil when it
// is none). It returns the refusals and the notes.
func GuardNewDisk(s *Situation, d *blockdev.Device, pv *PV) (problems, notes []string) {
	id := d.Ref()
	if p, n := GuardDevice(d, id, pv, s.VG, false, fmt.Sprintf("wipe it first (wipefs --all %s; for a PV: pvremove), or use another disk", d.Path)); p != "" {
		problems = append(problems, p)
	} else if n != "" {
		notes = append(notes, n)
	}
	for _, m := range s.Members {
		if m == d.Path {
			problems = append(problems, fmt.Sprintf("%s (%s) already holds an image of %s: the new disk must be another one", d.Name, id, s.Array()))
		}
	}
	if pv != nil && pv.VG == s.VG && pv.PEAlloc > 0 {
		problems = append(problems, fmt.Sprintf("%s (%s) is a PV of %s with %d extents in use: not a blank disk", d.Name, id, s.VG, pv.PEAlloc))
	}
	need := s.NeededExtents()
	if have := PVExtents(d.Size, s.ExtentSize); have < need {
		problems = append(problems, fmt.Sprintf("%s (%s) is too small: %s gives %d extents, %s needs %d (image %d + rmeta %d + integrity metadata %d): use a disk of at least %s",
			d.Name, id, sizes.Format(d.Size), have, s.Image, need, s.ImageExtents, RmetaExtents, need-s.ImageExtents-RmetaExtents, sizes.Format(need*s.ExtentSize+PEStart)))
	}
	if s.LogicalBlockSize > 0 && d.LogicalBlockSize != s.LogicalBlockSize {
		problems = append(problems, fmt.Sprintf("%s (%s) has %d-byte logical blocks, the other members %d: lvm2 refuses mixed logical block sizes under integrity; use a %s disk",
			d.Name, id, d.LogicalBlockSize, s.LogicalBlockSize, blockFormatName(s.LogicalBlockSize)))
	}
	if s.IntegrityBlockSize > 0 && d.LogicalBlockSize > int64(s.IntegrityBlockSize) {
		problems = append(problems, fmt.Sprintf("%s (%s) has %d-byte logical blocks, larger than the array's integrity block size %d: dm-integrity cannot run on it",
			d.Name, id, d.LogicalBlockSize, s.IntegrityBlockSize))
	}
	return problems, notes
}

func blockFormatName(lbs int64) string {
	if lbs == 4096 {
		return "4Kn"
	}
	return "512n or 512e"
}
