package lvm

import (
	"fmt"
	"regexp"
	"strings"
)

// An lvcreate --raidintegrity of lvm2 (2.03.16 and later) builds in steps,
// each committed to the VG metadata: the raid LV, then one linear
// <lv>_rimage_<N>_imeta per image (visible LVs until attached), then it
// activates the bare raid to look for a filesystem's block size, deactivates
// it, and only then inserts the integrity layers (the imeta LVs become
// hidden). Cut anywhere between the raid and the layers (killed, or the
// machine rebooted while lvcreate hung in the kernel: tearing down a raid5
// table during its initial resync can deadlock Linux 6.1, docs/lvm.md), the
// VG holds the raid without integrity and the metadata LVs made so far.
// lvcreate cannot run again while those names and extents are taken, and
// lvremove of the raid alone leaves them behind.

// leftoverIntegrityMeta returns the visible LVs of vg named
// <lv>_rimage_<N>_imeta: integrity metadata lvcreate made for lv's images
// and had not attached (attached ones are hidden).
func leftoverIntegrityMeta(all []LV, vg, lv string) []LV {
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(lv) + `_rimage_[0-9]+_imeta$`)
	var out []LV
	for _, l := range all {
		if l.VG == vg && !l.Hidden && re.MatchString(l.Name) {
			out = append(out, l)
		}
	}
	return out
}

// halfBuiltProblem explains an array an interrupted lvcreate --raidintegrity
// left behind, with the one command that clears it, or returns "" when
// there is none. checks are VerifyArray's for ar (nil when ar's LV does
// not exist). Such an LV is what the plan asked for except its integrity
// layers; any other difference is not this case (the LV was made some other
// way) and stays apply's "another shape" refusal.
func halfBuiltProblem(ar Array, all []LV, checks []Check) string {
	if !ar.Integrity.Enabled {
		return ""
	}
	leftovers := leftoverIntegrityMeta(all, ar.VG, ar.LV)
	name := ar.VG + "/" + ar.LV
	remove := []string{"lvm", "lvremove", "--yes", "--"}
	var metaNames []string
	for _, l := range leftovers {
		metaNames = append(metaNames, l.Name)
	}
	top, exists := Find(all, ar.VG, ar.LV)
	if !exists {
		if len(leftovers) == 0 {
			return ""
		}
		for _, l := range leftovers {
			remove = append(remove, l.FullName())
		}
		return fmt.Sprintf("VG %s holds %s: integrity metadata an lvcreate --raidintegrity of %s made and never attached (it stopped half-way, and %s was removed since); lvcreate cannot make %s while these names and extents are taken. They hold no data: remove them, then apply again\n    run: %s",
			ar.VG, strings.Join(metaNames, ", "), name, name, name, strings.Join(remove, " "))
	}
	for _, c := range checks {
		if c.OK || strings.HasPrefix(c.Name, "integrity") {
			continue
		}
		return "" // another difference: not a half-built lvcreate
	}
	for _, img := range SubLVs(all, top, "rimage") {
		if img.SegType() == "integrity" {
			return "" // layered: lvcreate got past the point this is about
		}
	}
	remove = append(remove, name)
	for _, l := range leftovers {
		remove = append(remove, l.FullName())
	}
	what, them := "no integrity metadata LV yet", "it"
	if len(leftovers) > 0 {
		what = "the integrity metadata LVs it had made for it (" + strings.Join(metaNames, ", ") + "), not attached"
		them = "them"
	}
	text := fmt.Sprintf("LV %s is a %s without integrity, next to %s: an lvcreate --raidintegrity that stopped half-way left it (killed, or the machine was rebooted while lvcreate hung in the kernel; docs/lvm.md). tbhost never reshapes an LV, and lvcreate cannot run again while these exist. Unless something was written to %s since, it holds nothing: remove %s, then apply again",
		name, top.SegType(), what, name, them)
	if top.KernelMajor >= 0 && top.SyncPercent >= 0 && top.SyncPercent < 100 {
		text += fmt.Sprintf(". It is active and its initial sync is at %.2f %%: wait until lvm lvs -o sync_percent %s shows 100 (or reboot) before removing it; tearing down a raid5 table while it syncs can hang Linux 6.1 for good", top.SyncPercent, name)
	}
	return text + "\n    run: " + strings.Join(remove, " ")
}
