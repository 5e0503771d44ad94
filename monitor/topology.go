// Package monitor watches the per-disk read activity of each RAID array
// (LVM RAID, with or without dm-integrity, and Linux md) and judges it:
// a member disk that reads far less or far more than its siblings, a
// missing member, an unhealthy or syncing array, integrity mismatches.
//
// The pieces: topology (array -> image -> disk, from /sys/block and LVM's
// report), sampling (/proc/diskstats through internal/diskstats, bounded
// and validated, behind a Source so tests replay sequences), rates with
// iostat's formulas (also internal/diskstats), the
// skew detector, and the outputs (check report, Prometheus exporter,
// textfile, a watch table).
package monitor

import (
	"context"
	"errors"
	"fmt"
	"github.com/tbhost/tbhost/internal/blockdev"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tbhost/tbhost/integrity"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/sysread"
	"github.com/tbhost/tbhost/lvm"
)

// Array is one RAID array and the disks under it.
type Array struct {
	Name   string `json:"name"`   // vg/lv (vg-hdd/tables) or the md device (md0)
	Kind   string `json:"kind"`   // "lvm" or "md"
	Level  string `json:"level"`  // raid5, raid0, ... ("" when unknown)
	Device string `json:"device"` // kernel name of the array device (dm-24, md0); "" when not active
	// Images is how many images (legs) the array has, parity included.
	Images  int      `json:"images"`
	Members []Member `json:"members"`
	// Problems are health and topology findings, known before any sampling.
	Problems []Problem `json:"problems"`
	// Syncing is true while a resync/recovery runs (reads are then not the
	// workload's, so skew is not judged); SyncProgress is 0..1 or -1.
	Syncing      bool    `json:"syncing"`
	SyncAction   string  `json:"sync_action"`
	SyncProgress float64 `json:"sync_progress"`
	// IntegrityMismatches is the array's total, -1 when it has no integrity layer.
	IntegrityMismatches int64 `json:"integrity_mismatches"`
	// Degraded: the array runs without a member (missing PV, partial LV,
	// faulty or missing md member).
	Degraded bool `json:"degraded"`
}

// Member is one disk of an array.
type Member struct {
	Disk string `json:"disk"` // kernel name whose /proc/diskstats line is read (sda, sda1, nvme0n1); "" when missing
	ID   string `json:"id"`   // stable id from /dev/disk/by-id, "" when none
	// Serial is the disk's serial (udev, sysfs or VPD page 0x80), "" when
	// unknown; reports name a slow disk by it.
	Serial string `json:"serial,omitempty"`
	// Images are the array's images (legs) on this disk; empty for a PV of the
	// array's VG that holds no image of it (the array does not use the disk).
	Images  []string `json:"images"`
	Missing bool     `json:"missing"` // an image whose disk is gone
	// IntegrityMismatches on this member's images, -1 when unknown.
	IntegrityMismatches int64 `json:"integrity_mismatches"`
	// partID is a partition member's own by-id name (nvme-..._S4GEN...-part4,
	// the name lvm plan gives the PV), "" for a whole disk: --skip takes it.
	partID string
}

// diskMember is the Member for leaf, a disk or a partition (nvme0n1p4): its
// ID names the disk it is on, a partition's own by-id name is kept for --skip.
func diskMember(root string, sb *SysBlock, leaf string) Member {
	m := Member{Disk: leaf, ID: StableID(root, sb.Disk(leaf)), IntegrityMismatches: -1}
	if sb.Disk(leaf) != leaf {
		m.partID = StableID(root, leaf)
	}
	return m
}

// Label is how reports name the member: the disk, or the missing image.
func (m Member) Label() string {
	if m.Disk != "" {
		return m.Disk
	}
	return "missing:" + strings.Join(m.Images, ",")
}

// ImageLabel joins the member's images ("" for an unused PV).
func (m Member) ImageLabel() string { return strings.Join(m.Images, ",") }

// LVMReporter is LVM's report: lvm.Client, or FileReport for a snapshot.
type LVMReporter interface {
	LVs(ctx context.Context, names ...string) ([]lvm.LV, error)
	PVs(ctx context.Context, names ...string) ([]lvm.PV, error)
}

// FileReport reads LVM's JSON reports saved as Dir/lvs.json and Dir/pvs.json
// (the layout of the lab's captures and of a host snapshot).
type FileReport struct{ Dir string }

// LVs implements LVMReporter (names are ignored: the snapshot has what it has).
func (f FileReport) LVs(_ context.Context, _ ...string) ([]lvm.LV, error) {
	b, err := sysread.File(filepath.Join(f.Dir, "lvs.json"), sysread.ReportLimit)
	if err != nil {
		return nil, fmt.Errorf("read saved lvs report: %w", err)
	}
	rows, err := lvm.ParseReport(b, "lv")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(f.Dir, "lvs.json"), err)
	}
	return lvm.ParseLVRows(rows)
}

// PVs implements LVMReporter; a missing pvs.json is no error (no PVs known).
func (f FileReport) PVs(_ context.Context, _ ...string) ([]lvm.PV, error) {
	b, err := sysread.File(filepath.Join(f.Dir, "pvs.json"), sysread.ReportLimit)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read saved pvs report: %w", err)
	}
	rows, err := lvm.ParseReport(b, "pv")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(f.Dir, "pvs.json"), err)
	}
	out := make([]lvm.PV, 0, len(rows))
	for _, r := range rows {
		out = append(out, lvm.PV{Name: r["pv_name"], VG: r["vg_name"], UUID: r["pv_uuid"], Size: atoi64(r["pv_size"]),
			Free: atoi64(r["pv_free"]), PEAlloc: atoi64Or(r["pv_pe_alloc_count"], -1)})
	}
	return out, nil
}

// DiscoverOptions says where to look.
type DiscoverOptions struct {
	Root string      // "/" or a fixture/snapshot tree
	LVM  LVMReporter // nil: topology from sysfs alone (no health, no sync state)
	// Names selects arrays: vg/lv, /dev/vg/lv, a dm name, md0 or /dev/md0.
	// None means every array found.
	Names []string
}

// Topology is the arrays found, and notes on what could not be read.
type Topology struct {
	Arrays []Array  `json:"arrays"`
	Notes  []string `json:"notes"`
}

// ErrLVMUnreadable: LVM's report could not be read (lvm failed, is missing
// while LVM arrays exist, or its JSON does not parse): their health is not
// known, and monitor check says UNKNOWN, never OK.
var ErrLVMUnreadable = errors.New("cannot read LVM health")

// Discover finds the arrays and resolves each down to its disks. An LVM
// report that cannot be read is an error wrapping ErrLVMUnreadable, unless
// there is no lvm binary and no LVM array in /sys/block (a host without LVM).
func Discover(ctx context.Context, o DiscoverOptions) (Topology, error) {
	root := o.Root
	if root == "" {
		root = "/"
	}
	sb, err := ReadSysBlock(root)
	if err != nil {
		return Topology{}, err
	}
	var t Topology
	var lvs []lvm.LV
	var pvs []lvm.PV
	haveLVM := false
	if o.LVM != nil {
		lvs, err = o.LVM.LVs(ctx)
		switch {
		case err == nil:
			haveLVM = true
			if pvs, err = o.LVM.PVs(ctx); err != nil {
				t.Notes = append(t.Notes, fmt.Sprintf("pvs failed (%v): unused PVs of a VG are not checked", err))
			}
		case execx.NotFound(err):
			// No lvm binary. Without LVM arrays that is a host without
			// LVM; with them, their health cannot be seen.
			if seen := sysfsLVMArrays(root, sb); len(seen) > 0 {
				return t, fmt.Errorf("%w: lvm is not installed, but /sys/block shows LVM RAID LVs (%s): install lvm2 so their health can be read",
					ErrLVMUnreadable, strings.Join(arrayNames(seen), ", "))
			}
			t.Notes = append(t.Notes, "lvm is not installed and /sys/block shows no LVM RAID LV")
		default:
			return t, fmt.Errorf("%w: %w", ErrLVMUnreadable, err)
		}
	}
	if haveLVM {
		t.Arrays = append(t.Arrays, lvmArrays(root, sb, lvs, pvs)...)
		t.Arrays = append(t.Arrays, unreportedLVMArrays(root, sb, t.Arrays)...)
	} else {
		t.Arrays = append(t.Arrays, sysfsLVMArrays(root, sb)...)
	}
	t.Arrays = append(t.Arrays, mdArrays(root, sb)...)
	if len(o.Names) > 0 {
		sel, err := selectArrays(t.Arrays, o.Names)
		if err != nil {
			return t, err
		}
		t.Arrays = sel
	}
	for ai := range t.Arrays {
		for mi, m := range t.Arrays[ai].Members {
			if m.Disk != "" {
				t.Arrays[ai].Members[mi].Serial = blockdev.SerialUnder(root, sb.Disk(m.Disk))
			}
		}
	}
	return t, nil
}

func selectArrays(all []Array, names []string) ([]Array, error) {
	var out []Array
	for _, n := range names {
		want := normalizeName(n)
		found := false
		for _, a := range all {
			if a.Name == want || a.Device == want {
				out = append(out, a)
				found = true
				break
			}
		}
		if !found {
			var have []string
			for _, a := range all {
				have = append(have, a.Name)
			}
			if len(have) == 0 {
				return nil, fmt.Errorf("no array %q: no RAID arrays found at all (LVM RAID LVs or md devices)", n)
			}
			return nil, fmt.Errorf("no array %q; arrays found: %s", n, strings.Join(have, ", "))
		}
	}
	return out, nil
}

// normalizeName maps /dev/vg/lv, /dev/mapper/vg--lv and /dev/md0 to the names Discover uses.
func normalizeName(n string) string {
	switch {
	case strings.HasPrefix(n, "/dev/mapper/"):
		if vg, lv, ok := SplitDMName(strings.TrimPrefix(n, "/dev/mapper/")); ok {
			return vg + "/" + lv
		}
	case strings.HasPrefix(n, "/dev/"):
		return strings.TrimPrefix(n, "/dev/")
	case !strings.Contains(n, "/"):
		if vg, lv, ok := SplitDMName(n); ok && strings.Contains(n, "--") {
			return vg + "/" + lv
		}
	}
	return n
}

func lvmArrays(root string, sb *SysBlock, all []lvm.LV, pvs []lvm.PV) []Array {
	var out []Array
	onPV := extentDisks(sb, all)
	for _, lv := range all {
		if lv.Hidden || !strings.HasPrefix(lv.SegType(), "raid") {
			continue
		}
		h := lvm.AssessArray(all, lv)
		a := Array{Name: lv.FullName(), Kind: "lvm", Level: lv.SegType(), SyncProgress: -1,
			IntegrityMismatches: lv.IntegrityMismatches}
		if k, ok := sb.ByDMName(DMName(lv.VG, lv.Name)); ok {
			a.Device = k
		}
		a.Images = len(h.Images)
		byDisk := map[string]int{}
		var spans []string
		for _, ih := range h.Images {
			img := ih.LV
			var leaves []string
			if k, ok := sb.ByDMName(DMName(img.VG, img.Name)); ok {
				leaves = sb.Leaves(k)
			}
			if len(leaves) == 0 && a.Device == "" { // not active: LVM's view of where it lives
				for _, d := range ih.Disks {
					leaves = append(leaves, pvKernelName(sb, d))
				}
			}
			if len(leaves) == 0 || ih.Missing {
				a.Members = append(a.Members, Member{Images: []string{img.Name}, Missing: true, IntegrityMismatches: img.IntegrityMismatches})
				a.Degraded = true
				a.Problems = append(a.Problems, Problem{Severity: Critical, Code: lvm.CodeImageMissing, Text: fmt.Sprintf("%s: image %s has no disk (PV missing or failed); replace it: %s", a.Name, img.Name, lvm.ReplaceAdvice(a.Name))})
				continue
			}
			if len(leaves) > 1 {
				spans = append(spans, fmt.Sprintf("%s on %s", img.Name, strings.Join(leaves, "+")))
			}
			for _, leaf := range leaves {
				i, ok := byDisk[leaf]
				if !ok {
					i = len(a.Members)
					byDisk[leaf] = i
					a.Members = append(a.Members, diskMember(root, sb, leaf))
				}
				m := &a.Members[i]
				m.Images = append(m.Images, img.Name)
				if img.IntegrityMismatches >= 0 {
					m.IntegrityMismatches = max(m.IntegrityMismatches, 0) + img.IntegrityMismatches
				}
			}
		}
		if len(spans) > 0 {
			a.Problems = append(a.Problems, Problem{Severity: Warning, Code: lvm.CodeImageSpansDisks, Text: fmt.Sprintf(
				"%s: %s stripes over %d images and %d of them span several disks (%s): reads do not spread over every disk (created without --stripes?)",
				a.Name, a.Level, len(h.Images), len(spans), strings.Join(spans, ", "))})
		}
		var unused []string
		for _, pv := range pvs {
			if pv.VG != lv.VG || pv.Name == "" || strings.HasPrefix(pv.Name, "[") {
				continue
			}
			k := pvKernelName(sb, pv.Name)
			if _, used := byDisk[k]; used || pvAllocated(pv, k, sb, onPV, missingImage(a)) {
				continue // an image of this array, or holds another LV
			}
			byDisk[k] = len(a.Members)
			a.Members = append(a.Members, diskMember(root, sb, k))
			unused = append(unused, k)
		}
		// an array whose report leaves out images it names (lvm-unreadable,
		// below) may well use these PVs: that is not judged from it
		if len(unused) > 0 && !lvm.HasCode(h.Findings, lvm.CodeLVMUnreadable) {
			a.Problems = append(a.Problems, Problem{Severity: Warning, Code: lvm.CodePVUnused, Text: fmt.Sprintf(
				"%s: %d PV(s) of VG %s hold no image of it (%s): the array does not use every disk (created without --stripes?)",
				a.Name, len(unused), lv.VG, strings.Join(unused, ", "))})
		}
		if a.Device == "" || lvm.HasCode(h.Findings, lvm.CodeLVInactive) {
			text := fmt.Sprintf("%s: not active (no device-mapper device %s); activate it with: vgchange -ay %s", a.Name, DMName(lv.VG, lv.Name), lv.VG)
			if lvm.HasCode(h.Findings, lvm.CodeMissingAtBoot) {
				// lvm2 2.03.16 refuses vgchange -ay (any --activationmode) for it
				text = fmt.Sprintf("%s: not active: a member was missing at boot and lvm2 activates raid+integrity with a member missing in no mode (vgchange -ay is refused); bring the disk back, or: %s", a.Name, lvm.ReplaceAdvice(a.Name))
			}
			a.Problems = append(a.Problems, Problem{Severity: Critical, Code: lvm.CodeLVInactive, Text: text})
		}
		a.Problems = append(a.Problems, lvHealth(a.Name, lv, h.Findings)...)
		a.Problems = append(a.Problems, integrityMismatches(lv, h)...)
		if lvm.HasCode(h.Findings, lvm.CodeRAIDDegraded) {
			a.Degraded = true
		}
		if f, ok := h.Sync(); ok {
			a.SyncAction, a.SyncProgress = lv.SyncAction, f.Percent/100
			a.Syncing = f.Code != lvm.CodeCheckInProgress
			if a.Syncing {
				text := fmt.Sprintf("%s: %s in progress, %.1f%% done (skew is not judged meanwhile)", a.Name, orDefault(lv.SyncAction, "sync"), f.Percent)
				if f.Code == lvm.CodeIntegrityReinit || f.Code == lvm.CodeRebuilding {
					text = f.Text + " (skew is not judged meanwhile)"
				}
				a.Problems = append(a.Problems, Problem{Severity: f.Severity, Code: f.Code, Text: text})
			}
		}
		out = append(out, a)
	}
	return out
}

// lvHealth words the array's own health findings (lvm.AssessArray's, from
// lv_health_status, lv_attr, raid_mismatch_count, and the report's
// consistency: an image the array names that the report leaves out) for
// monitor, with
// their severities: a partial LV is said once, and lv_attr only adds what
// lv_health_status did not say.
func lvHealth(name string, lv lvm.LV, fs []lvm.Finding) []Problem {
	var p []Problem
	add := func(f lvm.Finding, text string) {
		p = append(p, Problem{Severity: f.Severity, Code: f.Code, Text: text})
	}
	said := map[lvm.Code]bool{}
	for _, f := range fs {
		if f.Code == lvm.CodeRAIDDegraded {
			state := "the array runs degraded"
			if !lv.Active() { // missing at boot: nothing runs (the not-active finding says what to do)
				state = "the array is not active"
			}
			add(f, fmt.Sprintf("%s: partial: a PV is missing (lv_attr %s); %s", name, lv.Attr, state))
			said[f.Code] = true
			break
		}
	}
	partial := said[lvm.CodeRAIDDegraded]
	for _, f := range fs {
		switch {
		case f.Code == lvm.CodeRAIDDegraded:
		case f.Field == "lv_health_status" && !partial:
			switch f.Code {
			case lvm.CodeRefreshNeeded, lvm.CodeRepairNeeded, lvm.CodeLVFailed, lvm.CodeMismatchesExist, lvm.CodeWritemostly:
				add(f, fmt.Sprintf("%s: lv_health_status %q", name, f.Value))
			default:
				add(f, fmt.Sprintf("%s: unknown lv_health_status %q (treated as not OK)", name, f.Value))
			}
			said[f.Code] = true
		case f.Field == "lv_attr" && !partial && f.Code != lvm.CodeLVInactive:
			switch {
			case said[f.Code] && (f.Code == lvm.CodeRefreshNeeded || f.Code == lvm.CodeMismatchesExist):
			case f.Code == lvm.CodeRefreshNeeded:
				add(f, fmt.Sprintf("%s: lv_attr %s: refresh needed", name, lv.Attr))
			case f.Code == lvm.CodeMismatchesExist:
				add(f, fmt.Sprintf("%s: lv_attr %s: mismatches exist", name, lv.Attr))
			default:
				add(f, fmt.Sprintf("%s: lv_attr %s: volume health %q", name, lv.Attr, lv.Attr[8:9]))
			}
		case f.Code == lvm.CodeRAIDMismatches:
			add(f, fmt.Sprintf("%s: raid_mismatch_count %d after the last check", name, f.Count))
		case f.Code == lvm.CodeValueUnrecognized, f.Code == lvm.CodeLVMUnreadable: // a counter, or a report that contradicts itself
			p = append(p, unjudgeable(f))
		}
	}
	return p
}

// unjudgeable is a counter LVM reported in a form tbhost cannot read: the
// array's health cannot be judged from it, UNKNOWN (not OK, not a finding
// on the disks either).
func unjudgeable(f lvm.Finding) Problem {
	return Problem{Severity: Unknown, Code: f.Code, Text: f.Text}
}

// integrityMismatches are `tbhost integrity status`'s findings on mismatches:
// per image, naming the disk, or on the array when no image owns them; and
// an image's counter tbhost cannot read. h is the array's assessment.
func integrityMismatches(lv lvm.LV, h lvm.ArrayHealth) []Problem {
	var p []Problem
	for _, f := range integrity.ArrayStatusFrom(lv, h).Findings {
		switch {
		case f.Code == lvm.CodeIntegrityMismatches:
			p = append(p, Problem{Severity: f.Severity, Code: f.Code, Text: f.Text})
		case f.Code == lvm.CodeValueUnrecognized && f.LV != lv.FullName(): // an image's (the array's own: lvHealth)
			p = append(p, unjudgeable(f))
		}
	}
	return p
}

// unreportedLVMArrays are the LVM RAID LVs /sys/block shows that LVM's
// report does not list (a filtered or foreign VG, a stale or edited
// snapshot): found from sysfs, with an UNKNOWN finding since their health
// cannot be read.
func unreportedLVMArrays(root string, sb *SysBlock, reported []Array) []Array {
	known := map[string]bool{}
	for _, a := range reported {
		known[a.Name] = true
	}
	var out []Array
	for _, a := range sysfsLVMArrays(root, sb) {
		if known[a.Name] {
			continue
		}
		a.Problems = append(a.Problems, Problem{Severity: Unknown, Code: lvm.CodeLVMUnreadable,
			Text: fmt.Sprintf("%s: device-mapper RAID device %s is not in LVM's report: its health cannot be read (lvs -a %s)", a.Name, a.Device, strings.SplitN(a.Name, "/", 2)[0])})
		out = append(out, a)
	}
	return out
}

func arrayNames(as []Array) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Name)
	}
	return out
}

// extentDisks are the kernel names of the PVs that the devices columns of
// the lvs report place extents on (any LV, any VG).
func extentDisks(sb *SysBlock, all []lvm.LV) map[string]bool {
	out := map[string]bool{}
	for _, l := range all {
		for _, s := range l.Segments {
			for _, e := range s.Devices {
				if e.IsDevice() {
					out[pvKernelName(sb, e.Name)] = true
				}
			}
		}
	}
	return out
}

// missingImage reports whether one of a's images has no disk.
func missingImage(a Array) bool {
	for _, m := range a.Members {
		if m.Missing {
			return true
		}
	}
	return false
}

// pvAllocated reports whether pv (kernel name k) holds extents. pvs's
// pv_pe_alloc_count says so when the report has it (lvm always gives it
// live); an old-style or recorded report without it (PEAlloc -1) is not
// read as "none": the PV holds extents when the lvs report places any on
// it (onPV, from extentDisks), or when its disk is gone from /sys/block
// while an image of the array has no disk (lvs says [unknown] where pvs
// still names the PV by path): that disk is the missing image's, not an
// unused one, and must not be listed a second time.
func pvAllocated(pv lvm.PV, k string, sb *SysBlock, onPV map[string]bool, arrayMissesImage bool) bool {
	if pv.PEAlloc >= 0 {
		return pv.PEAlloc > 0
	}
	if onPV[k] {
		return true
	}
	_, present := sb.Devs[k]
	return !present && arrayMissesImage
}

// pvKernelName maps a PV path (/dev/sda, /dev/sda1, /dev/mapper/x) to a kernel name.
func pvKernelName(sb *SysBlock, path string) string {
	if strings.HasPrefix(path, "/dev/mapper/") {
		if k, ok := sb.ByDMName(strings.TrimPrefix(path, "/dev/mapper/")); ok {
			return k
		}
	}
	return filepath.Base(path)
}

// sysfsLVMArrays finds LVM RAID LVs without LVM's report: a dm device whose
// slaves include "<its name>_rimage_N" devices.
func sysfsLVMArrays(root string, sb *SysBlock) []Array {
	var out []Array
	names := make([]string, 0, len(sb.Devs))
	for n := range sb.Devs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, k := range names {
		d := sb.Devs[k]
		if d.DMName == "" {
			continue
		}
		vg, lv, ok := SplitDMName(d.DMName)
		if !ok {
			continue
		}
		prefix := d.DMName + "_rimage_"
		a := Array{Name: vg + "/" + lv, Kind: "lvm", Device: k, SyncProgress: -1, IntegrityMismatches: -1}
		byDisk := map[string]int{}
		var imgs []string
		for _, s := range d.Slaves {
			sd, ok := sb.Devs[s]
			if !ok || !strings.HasPrefix(sd.DMName, prefix) || strings.ContainsAny(strings.TrimPrefix(sd.DMName, prefix), "_") {
				continue
			}
			imgs = append(imgs, s)
		}
		sort.Slice(imgs, func(i, j int) bool {
			return atoiOr(strings.TrimPrefix(sb.Devs[imgs[i]].DMName, prefix), 0) < atoiOr(strings.TrimPrefix(sb.Devs[imgs[j]].DMName, prefix), 0)
		})
		for _, s := range imgs {
			_, img, _ := SplitDMName(sb.Devs[s].DMName)
			a.Images++
			leaves := sb.Leaves(s)
			if len(leaves) == 0 {
				a.Members = append(a.Members, Member{Images: []string{img}, Missing: true, IntegrityMismatches: -1})
				a.Degraded = true
				a.Problems = append(a.Problems, Problem{Severity: Critical, Code: lvm.CodeImageMissing, Text: fmt.Sprintf("%s: image %s sits on no disk (error target: PV missing?)", a.Name, img)})
				continue
			}
			for _, leaf := range leaves {
				i, ok := byDisk[leaf]
				if !ok {
					i = len(a.Members)
					byDisk[leaf] = i
					a.Members = append(a.Members, diskMember(root, sb, leaf))
				}
				a.Members[i].Images = append(a.Members[i].Images, img)
			}
		}
		if a.Images > 0 {
			out = append(out, a)
		}
	}
	return out
}

func mdArrays(root string, sb *SysBlock) []Array {
	var out []Array
	names := make([]string, 0)
	for n := range sb.Devs {
		if strings.HasPrefix(n, "md") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		md, ok := sb.readMD(n)
		if !ok {
			continue
		}
		a := Array{Name: n, Kind: "md", Level: md.Level, Device: n, Images: md.RaidDisks, SyncProgress: -1, IntegrityMismatches: -1}
		slaves := sb.Devs[n].Slaves
		for _, s := range slaves {
			state := md.Members[s]
			if mdFlag(state, "spare") && !mdFlag(state, "in_sync") {
				continue // a hot spare reads nothing until a rebuild; not a member to compare
			}
			for _, leaf := range sb.Leaves(s) {
				m := diskMember(root, sb, leaf)
				m.Images = []string{s}
				a.Members = append(a.Members, m)
			}
			if mdFlag(state, "faulty") {
				a.Problems = append(a.Problems, Problem{Severity: Critical, Code: lvm.CodeMemberFaulty, Text: fmt.Sprintf("%s: member %s is faulty", n, s)})
				a.Degraded = true
			}
		}
		a.Problems = append(a.Problems, mdUnjudgeable(n, md)...)
		if missing, why := mdMissing(md); missing > 0 {
			a.Degraded = true
			a.Problems = append(a.Problems, Problem{Severity: Critical, Code: lvm.CodeRAIDDegraded, Text: fmt.Sprintf("%s: degraded: %d of %d devices missing%s", n, missing, md.RaidDisks, why)})
			for i := 0; i < missing; i++ {
				a.Members = append(a.Members, Member{Images: []string{fmt.Sprintf("slot%d", md.RaidDisks-missing+i)}, Missing: true, IntegrityMismatches: -1})
			}
		}
		if md.ArrayState != "" && md.ArrayState != "clean" && md.ArrayState != "active" && md.ArrayState != "active-idle" && md.ArrayState != "write-pending" {
			a.Problems = append(a.Problems, Problem{Severity: Critical, Code: lvm.CodeArrayState, Text: fmt.Sprintf("%s: array_state %s", n, md.ArrayState)})
		}
		switch md.SyncAction {
		case "", "idle", "frozen":
		case "check":
			a.SyncAction, a.SyncProgress = md.SyncAction, md.SyncProgress
		default:
			a.Syncing, a.SyncAction, a.SyncProgress = true, md.SyncAction, md.SyncProgress
			code := lvm.CodeSyncInProgress
			if md.SyncAction == "recover" {
				code = lvm.CodeRebuilding
			}
			a.Problems = append(a.Problems, Problem{Severity: Warning, Code: code, Text: fmt.Sprintf("%s: %s in progress, %.1f%% done (skew is not judged meanwhile)", n, md.SyncAction, 100*max(md.SyncProgress, 0))})
		}
		if md.MismatchCnt > 0 && md.SyncAction != "check" {
			a.Problems = append(a.Problems, Problem{Severity: Warning, Code: lvm.CodeRAIDMismatches, Text: fmt.Sprintf("%s: mismatch_cnt %d after the last check", n, md.MismatchCnt)})
		}
		out = append(out, a)
	}
	return out
}

// mdRedundant reports whether an md level keeps redundancy: the kernel
// gives these (and only these) md/degraded, sync_action and mismatch_cnt;
// raid0, linear and containers have none.
func mdRedundant(level string) bool {
	switch level {
	case "raid1", "raid4", "raid5", "raid6", "raid10":
		return true
	}
	return false
}

// mdUnjudgeable: a redundant array whose md/degraded or md/raid_disks is
// missing (or empty) cannot be judged: a real kernel has both, so the tree
// is cut short, and reading the absence as "0 missing" would say OK.
func mdUnjudgeable(name string, md mdInfo) []Problem {
	if !mdRedundant(md.Level) {
		return nil
	}
	var p []Problem
	for _, attr := range []struct {
		file string
		have bool
	}{{"raid_disks", md.RaidDisks >= 0}, {"degraded", md.HasDegraded}} {
		if !attr.have {
			p = append(p, Problem{Severity: Unknown, Code: lvm.CodeValueUnrecognized, Text: fmt.Sprintf(
				"%s: %s is missing or empty: the kernel has it for every %s array, so tbhost cannot tell whether %s is degraded (see /proc/mdstat; a snapshot: take it again)",
				name, filepath.Join(md.Dir, attr.file), md.Level, name)})
		}
	}
	return p
}

// mdMissing is how many devices a redundant md array runs without: what
// md/degraded says, or raid_disks less the members in sync (md/dev-*/state
// in_sync, not faulty) when that is more; why says so when md/degraded
// says less. A spare being rebuilt is not in sync.
func mdMissing(md mdInfo) (missing int, why string) {
	missing = md.Degraded
	if !mdRedundant(md.Level) || md.RaidDisks < 0 {
		return missing, ""
	}
	inSync := 0
	for _, state := range md.Members {
		if mdFlag(state, "in_sync") && !mdFlag(state, "faulty") {
			inSync++
		}
	}
	if short := md.RaidDisks - inSync; short > missing {
		says := fmt.Sprintf("md/degraded says %d", md.Degraded)
		if !md.HasDegraded {
			says = "no md/degraded"
		}
		return short, fmt.Sprintf(" (%d members in sync of raid_disks %d; %s)", inSync, md.RaidDisks, says)
	}
	return missing, ""
}

// mdFlag reports whether an md member's state (a comma-separated list of
// flags in /sys/block/mdX/md/dev-Y/state, e.g. "faulty,write_error") has flag.
func mdFlag(state, flag string) bool {
	for _, f := range strings.Split(state, ",") {
		if strings.TrimSpace(f) == flag {
			return true
		}
	}
	return false
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func atoi64(s string) int64 { return atoi64Or(s, 0) }

func atoi64Or(s string, def int64) int64 {
	var n int64
	if _, err := fmt.Sscan(strings.TrimSpace(s), &n); err != nil {
		return def
	}
	return n
}
