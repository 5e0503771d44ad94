package integrity

import (
	"context"
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
	OK                  bool          `json:"ok"`
}

// Status reads the integrity state of RAID LVs. Names are VGs or VG/LV
// pairs; none means every RAID LV with dm-integrity. A named LV without an
// integrity layer is reported with a problem.
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
		return nil, fmt.Errorf("integrity status: %w", err)
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
		what := "any VG"
		if len(names) > 0 {
			what = strings.Join(names, ", ")
		}
		return nil, fmt.Errorf("no RAID LV with dm-integrity in %s (create one with lvcreate --type raid5 --raidintegrity y, or add it with lvconvert --raidintegrity y VG/LV)", what)
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

// ArrayStatusOf judges one RAID LV from an `lvs -a` report.
func ArrayStatusOf(all []lvm.LV, top lvm.LV) ArrayStatus {
	s := ArrayStatus{
		LV: top.FullName(), UUID: top.UUID, SegType: top.SegType(), Attr: top.Attr, Size: top.Size,
		IntegrityMode: top.IntegrityMode, IntegrityBlockSize: top.IntegrityBlockSize,
		IntegrityMismatches: top.IntegrityMismatches, RaidMismatchCount: top.RaidMismatchCount,
		SyncAction: top.SyncAction, SyncPercent: top.SyncPercent, Health: top.Health,
	}
	for _, p := range top.Problems() {
		if top.IntegrityMismatches > 0 && strings.HasSuffix(p, "integrity mismatches") {
			continue // reported per image below, naming the disk
		}
		s.Problems = append(s.Problems, p)
	}
	var sum int64
	withIntegrity := 0
	for _, img := range lvm.SubLVs(all, top, "rimage") {
		is := ImageStatus{Name: img.Name, Disks: lvm.PhysicalDevices(all, img), Mismatches: img.IntegrityMismatches, SegType: img.SegType(), Health: img.Health}
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
		if img.SegType() == "integrity" {
			withIntegrity++
		}
		if img.IntegrityMismatches > 0 {
			sum += img.IntegrityMismatches
			is.Problems = append(is.Problems, fmt.Sprintf("%s %s: %d integrity mismatches (dm-integrity caught corrupt blocks read from this disk: check its SMART log and cabling; run tbhost integrity scrub %s to read every block)",
				img.FullName(), on, img.IntegrityMismatches, top.FullName()))
		}
		for _, p := range img.Problems() {
			if !strings.HasSuffix(p, "integrity mismatches") {
				is.Problems = append(is.Problems, p+" ("+on+")")
			}
		}
		s.Problems = append(s.Problems, is.Problems...)
		s.Images = append(s.Images, is)
	}
	if top.IntegrityMismatches > 0 && sum == 0 {
		s.Problems = append(s.Problems, fmt.Sprintf("%s: %d integrity mismatches on the array, none attributed to an image", top.FullName(), top.IntegrityMismatches))
	}
	switch {
	case len(s.Images) == 0:
		s.Problems = append(s.Problems, fmt.Sprintf("%s: no rimage sub-LVs in the report", top.FullName()))
	case withIntegrity == 0:
		s.Problems = append(s.Problems, fmt.Sprintf("%s: no dm-integrity layer (add one: lvconvert --raidintegrity y %s)", top.FullName(), top.FullName()))
	case withIntegrity < len(s.Images):
		s.Problems = append(s.Problems, fmt.Sprintf("%s: only %d of %d images have dm-integrity", top.FullName(), withIntegrity, len(s.Images)))
	}
	if len(top.Attr) >= 5 && top.Attr[4] != 'a' { // lv_attr char 5: state, 'a' active
		s.Problems = append(s.Problems, fmt.Sprintf("%s: not active (lvchange -ay %s)", top.FullName(), top.FullName()))
	}
	if s.SyncPercent >= 0 && s.SyncPercent < 100 {
		s.Notes = append(s.Notes, fmt.Sprintf("sync action %q at %.2f%%", s.SyncAction, s.SyncPercent))
	}
	s.OK = len(s.Problems) == 0
	return s
}
