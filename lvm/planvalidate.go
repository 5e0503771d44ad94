package lvm

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tbhost/tbhost/internal/blockdev"
)

// Limits of a plan file. A plan is input to a tool that can destroy data:
// every field is checked against the rules MakePlan follows before apply
// looks at the machine (see validate).
const (
	// MaxPlanBytes bounds a plan file (a plan of 64 HDDs is about 40 KB).
	MaxPlanBytes = 4 << 20
	// MaxNameLen is lvm2's NAME_LEN (lib/misc/lvm-string.h) minus its NUL.
	MaxNameLen = 127
	maxText    = 4096
	maxDevices = MaxRaid5DataStripes + 1 + MaxRaid0Stripes
)

// lvmNameChars are the characters lvm2 allows in VG and LV names
// (lib/misc/lvm-string.c _validate_name: isalnum, '.', '_', '-', '+').
var lvmNameChars = regexp.MustCompile(`^[A-Za-z0-9._+-]+$`)

// lvReservedPrefixes and lvReservedStrings are lvm2 2.03.16's
// apply_lvname_restrictions (lib/misc/lvm-string.c): lvcreate refuses LV
// names starting with or containing them (they name sub-LVs).
var (
	lvReservedPrefixes = []string{"pvmove", "snapshot"}
	lvReservedStrings  = []string{"_cdata", "_cmeta", "_corig", "_cpool", "_cvol", "_wcorig", "_mimage", "_mlog",
		"_rimage", "_rmeta", "_tdata", "_tmeta", "_vdata", "_imeta", "_iorig", "_pmspare", "_vorigin"}
)

// devPathChars are the characters of the /dev paths tbhost plans: kernel
// names and udev's /dev/disk/by-id links (udev escapes anything else as
// \xNN).
var devPathChars = regexp.MustCompile(`^[A-Za-z0-9._+:@=,#%~\\/-]+$`)

var (
	kernelNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]*$`)
	uuidRE       = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	mountRE      = regexp.MustCompile(`^/[A-Za-z0-9._+/-]*$`)
)

// CheckVGName returns why name is not a VG name lvm2 accepts, or "".
func CheckVGName(name string) string {
	switch {
	case name == "":
		return "empty"
	case len(name) > MaxNameLen:
		return fmt.Sprintf("longer than lvm2's %d characters", MaxNameLen)
	case name[0] == '-':
		return "starts with '-' (lvm would read it as an option)"
	case name == "." || name == "..":
		return "is . or .."
	case !lvmNameChars.MatchString(name):
		return "has characters lvm2 does not allow in names (only A-Z a-z 0-9 + _ . -)"
	}
	return ""
}

// CheckLVName returns why name is not an LV name lvcreate accepts, or "".
func CheckLVName(name string) string {
	if why := CheckVGName(name); why != "" {
		return why
	}
	for _, p := range lvReservedPrefixes {
		if strings.HasPrefix(name, p) {
			return fmt.Sprintf("starts with %q, which lvm2 reserves", p)
		}
	}
	for _, s := range lvReservedStrings {
		if strings.Contains(name, s) {
			return fmt.Sprintf("contains %q, which lvm2 reserves for sub-LVs", s)
		}
	}
	return ""
}

// CheckDevPath returns why p is not a device path tbhost puts on a command
// line, or "": it must be an absolute, clean path under /dev without
// spaces, control characters or a component that looks like an option.
func CheckDevPath(p string) string {
	switch {
	case p == "":
		return "empty"
	case len(p) > maxText:
		return "too long"
	case strings.HasPrefix(p, "-"):
		return "looks like an option, not a device"
	case !strings.HasPrefix(p, "/dev/") || len(p) == len("/dev/"):
		return "not an absolute path under /dev"
	case path.Clean(p) != p:
		return "not a clean path (., .., // or a trailing /)"
	case !devPathChars.MatchString(p):
		return "has spaces, control or other characters no device path has"
	}
	for _, c := range strings.Split(p, "/") {
		if strings.HasPrefix(c, "-") {
			return "has a component that starts with '-'"
		}
	}
	return ""
}

// CheckFilesystem returns why fs is not a filesystem type tbhost makes, or
// "".
func CheckFilesystem(fs string) string {
	if fs != "ext4" && fs != "xfs" {
		return "tbhost makes ext4 or xfs"
	}
	return ""
}

// CheckMountPoint returns why m is not a mount point tbhost writes into an
// fstab line, or "".
func CheckMountPoint(m string) string {
	switch {
	case !mountRE.MatchString(m):
		return "not an absolute path of letters, digits and ._+-/ (fstab separates fields by spaces)"
	case m == "/" || path.Clean(m) != m:
		return "not a clean path other than /"
	case len(m) > maxText:
		return "too long"
	}
	return ""
}

// printable reports whether s is UTF-8 text without control characters (a
// plan's text reaches terminals and logs).
func printable(s string) bool {
	if len(s) > maxText || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

func powerOfTwo(n int64) bool { return n > 0 && n&(n-1) == 0 }

// validate checks every field of a plan read from a file against the rules
// MakePlan follows, so that apply never acts on something lvm plan would
// not have written. Each problem names the field and the fix. It does not
// look at the machine: apply checks the devices again (look, guard).
func (p *Plan) validate() []string {
	var out []string
	bad := func(field, format string, a ...any) {
		out = append(out, field+": "+fmt.Sprintf(format, a...))
	}
	p.validateHeader(bad)
	byID := p.validateDevices(bad)
	inArray := map[string]string{}
	roles := map[string]bool{}
	vgs := map[string]bool{}
	if len(p.Arrays) == 0 || len(p.Arrays) > 2 {
		bad("arrays", "%d arrays: a plan has the tables array and at most one prefix array", len(p.Arrays))
	}
	for i := range p.Arrays {
		a := &p.Arrays[i]
		field := fmt.Sprintf("arrays[%d]", i)
		if roles[a.Role] {
			bad(field+".role", "a second %q array; a plan has one tables and at most one prefix array", a.Role)
		}
		roles[a.Role] = true
		if vgs[a.VG] {
			bad(field+".vg", "VG %q is used by two arrays; each array has its own VG", a.VG)
		}
		vgs[a.VG] = true
		p.validateArray(field, a, byID, inArray, bad)
	}
	for _, d := range p.Devices {
		if _, ok := inArray[d.ID]; !ok && byID[d.ID] != nil {
			bad(fmt.Sprintf("devices (%s)", d.ID), "in no array: every planned device is a PV of one array")
		}
	}
	if p.Summary != nil && len(out) == 0 {
		// the sums; the forecast fields (AddForecast) are informational
		want, got := summarize(p.Arrays), p.Summary
		if want.RawHDD != got.RawHDD || want.TablesUsable != got.TablesUsable || want.PrefixUsable != got.PrefixUsable {
			bad("capacity", "raw_hdd %d, tables_usable %d, prefix_usable %d do not add up to the arrays (%d, %d, %d)",
				got.RawHDD, got.TablesUsable, got.PrefixUsable, want.RawHDD, want.TablesUsable, want.PrefixUsable)
		}
	}
	return out
}

func (p *Plan) validateHeader(bad func(string, string, ...any)) {
	if p.ExtentSize < 1<<20 || p.ExtentSize > 1<<30 || !powerOfTwo(p.ExtentSize) {
		bad("extent_size", "%d: tbhost plans a power of two between 1 MiB and 1 GiB (default %d)", p.ExtentSize, DefaultExtentSize)
	}
	if _, err := time.Parse(time.RFC3339, p.Created); err != nil {
		bad("created", "%q is not an RFC 3339 time", p.Created)
	}
	for field, s := range map[string]string{"host": p.Host, "source": p.Source, "inventory_fingerprint": p.InventoryFingerprint, "sized_for": p.SizedFor} {
		if !printable(s) {
			bad(field, "not printable text (control characters or too long)")
		}
	}
	for i, s := range p.Notes {
		if !printable(s) {
			bad(fmt.Sprintf("notes[%d]", i), "not printable text")
		}
	}
	for i, s := range p.Warnings {
		if !printable(s) {
			bad(fmt.Sprintf("warnings[%d]", i), "not printable text")
		}
	}
}

// validateDevices checks each device on its own and returns them by id.
func (p *Plan) validateDevices(bad func(string, string, ...any)) map[string]*PlanDevice {
	byID := map[string]*PlanDevice{}
	paths := map[string]string{}
	if len(p.Devices) == 0 || len(p.Devices) > maxDevices {
		bad("devices", "%d devices: a plan has 3 to %d", len(p.Devices), maxDevices)
	}
	for i := range p.Devices {
		d := &p.Devices[i]
		field := fmt.Sprintf("devices[%d]", i)
		if why := CheckDevPath(d.ID); why != "" {
			bad(field+".id", "%q: %s; re-plan with tbhost lvm plan", d.ID, why)
		} else if byID[d.ID] != nil {
			bad(field+".id", "%s is listed twice: one PV cannot be two array members", d.ID)
		} else {
			byID[d.ID] = d
		}
		if why := CheckDevPath(d.Path); why != "" {
			bad(field+".path", "%q: %s; re-plan with tbhost lvm plan", d.Path, why)
		} else if prev, ok := paths[d.Path]; ok {
			bad(field+".path", "%s is also the path of %s: one PV cannot be two array members", d.Path, prev)
		} else {
			paths[d.Path] = d.ID
		}
		if !kernelNameRE.MatchString(d.Name) || len(d.Name) > 64 {
			bad(field+".name", "%q is not a kernel device name", d.Name)
		}
		switch {
		case d.Kind == "disk" && d.Partition == 0:
		case d.Kind == "part" && d.Partition > 0 && d.Partition < 1<<16:
		default:
			bad(field+".kind", "%q with partition %d: a disk (partition 0) or a part (partition 1 or more)", d.Kind, d.Partition)
		}
		for f, s := range map[string]string{"model": d.Model, "serial": d.Serial, "wwn": d.WWN} {
			if !printable(s) {
				bad(field+"."+f, "not printable text")
			}
		}
		for j, s := range d.Found {
			if !printable(s) {
				bad(fmt.Sprintf("%s.found[%d]", field, j), "not printable text")
			}
		}
		if d.Size <= PEStart || d.Size > MaxPVBytes {
			bad(field+".size", "%d bytes: a PV is more than %d and at most %d bytes", d.Size, PEStart, int64(MaxPVBytes))
		}
		lbs, pbs := d.LogicalBlockSize, d.PhysicalBlockSize
		switch {
		case lbs == 0 || pbs == 0:
			bad(field+".logical_block_size", "missing (a plan from an older tbhost?): apply checks the block sizes the plan was made for; re-plan with tbhost lvm plan")
		case lbs < 512 || lbs > 65536 || !powerOfTwo(lbs) || pbs < lbs || pbs > 65536 || !powerOfTwo(pbs):
			bad(field+".logical_block_size", "%d/%d (logical/physical): block sizes are powers of two from 512 to 65536, physical at least logical", lbs, pbs)
		}
		if d.Role != blockdev.RoleHDD && d.Role != blockdev.RoleNVMe {
			bad(field+".role", "%q: hdd or nvme", d.Role)
		}
	}
	return byID
}

// validateArray checks one array: names, members, the stripe rule and the
// sizes MakePlan derives from the members.
func (p *Plan) validateArray(field string, a *Array, byID map[string]*PlanDevice, inArray map[string]string, bad func(string, string, ...any)) {
	if why := CheckVGName(a.VG); why != "" {
		bad(field+".vg", "%q %s; use a name of A-Z a-z 0-9 + _ . - (tbhost plans vg-hdd and vg-nvme)", a.VG, why)
	}
	if why := CheckLVName(a.LV); why != "" {
		bad(field+".lv", "%q %s; use a name of A-Z a-z 0-9 + _ . - (tbhost plans tables and prefix)", a.LV, why)
	}
	name := a.VG + "/" + a.LV
	var members []*PlanDevice
	for j, id := range a.Devices {
		f := fmt.Sprintf("%s.devices[%d]", field, j)
		d := byID[id]
		switch prev, twice := inArray[id]; {
		case d == nil:
			bad(f, "%q is not one of the plan's devices", id)
			continue
		case twice:
			bad(f, "%s is already a member of %s: one PV cannot be two array members", id, prev)
			continue
		}
		inArray[id] = name
		members = append(members, d)
	}
	n := len(a.Devices)
	wantRole := blockdev.RoleNVMe
	switch {
	case a.Role == "tables" && a.Type == "raid5":
		wantRole = blockdev.RoleHDD
		if n < 3 || n > MaxRaid5DataStripes+1 {
			bad(field+".devices", "raid5 over %d devices: tbhost builds it over 3 to %d HDDs", n, MaxRaid5DataStripes+1)
		}
		if a.Stripes != n || a.DataStripes != n-1 {
			bad(field+".stripes", "raid5 over %d PVs with stripes %d and data_stripes %d: it must be stripes %d, data_stripes %d (lvcreate --stripes %d): a smaller --stripes leaves disks unused, the misbuild tbhost exists to prevent",
				n, a.Stripes, a.DataStripes, n, n-1, n-1)
		}
		p.validateIntegrity(field, a, members, bad)
	case a.Role == "prefix" && a.Type == "raid0":
		if n < 2 || n > MaxRaid0Stripes {
			bad(field+".devices", "raid0 over %d devices: 2 to %d (one device is a linear LV)", n, MaxRaid0Stripes)
		}
		if a.Stripes != n || a.DataStripes != n {
			bad(field+".stripes", "raid0 over %d PVs with stripes %d and data_stripes %d: both must be %d", n, a.Stripes, a.DataStripes, n)
		}
	case a.Role == "prefix" && a.Type == "linear":
		if n != 1 || a.Stripes != 1 || a.DataStripes != 1 {
			bad(field+".devices", "a linear LV is on exactly one device with stripes 1 and data_stripes 1 (has %d devices, stripes %d, data_stripes %d)", n, a.Stripes, a.DataStripes)
		}
	default:
		bad(field+".type", "role %q with type %q: tbhost plans the tables array as raid5 and the prefix array as raid0 (or linear on one device)", a.Role, a.Type)
		return
	}
	if a.Type != "raid5" && (a.Integrity != Integrity{} || a.Layout != nil) {
		bad(field+".integrity", "a %s array has no integrity and no per_device layout", a.Type)
	}
	lbs := int64(0)
	for _, d := range members {
		if d.Role != wantRole {
			bad(field+".devices", "%s has role %q: a %s array is built on %s devices only", d.ID, d.Role, a.Type, wantRole)
		}
		if lbs == 0 {
			lbs = d.LogicalBlockSize
		} else if d.LogicalBlockSize != lbs {
			bad(field+".devices", "mixes logical block sizes (%d and %d): LVM refuses such a VG", lbs, d.LogicalBlockSize)
		}
	}
	if len(members) != n || n == 0 {
		return // the sizes below need every member
	}
	p.validateSizes(field, a, members, bad)
	if fs := a.Filesystem; fs != nil {
		validateFilesystem(field+".filesystem", fs, bad)
	}
}

func (p *Plan) validateIntegrity(field string, a *Array, members []*PlanDevice, bad func(string, string, ...any)) {
	in := a.Integrity
	if !in.Enabled {
		bad(field+".integrity.enabled", "false: tbhost builds the tables array with dm-integrity on every image")
	}
	if in.Mode != "journal" && in.Mode != "bitmap" {
		bad(field+".integrity.mode", "%q: journal or bitmap", in.Mode)
	}
	if !printable(in.Why) {
		bad(field+".integrity.why", "not printable text")
	}
	switch in.BlockSize {
	case 512, 1024, 2048, 4096:
	default:
		bad(field+".integrity.blocksize", "%d: dm-integrity takes 512, 1024, 2048 or 4096", in.BlockSize)
		return
	}
	for _, d := range members {
		if int64(in.BlockSize) < d.LogicalBlockSize {
			bad(field+".integrity.blocksize", "%d on %s: less than its %d-byte logical blocks", in.BlockSize, d.ID, d.LogicalBlockSize)
			return
		}
		if (d.LogicalBlockSize >= 4096 || d.PhysicalBlockSize >= 4096) && in.BlockSize != 4096 {
			bad(field+".integrity.blocksize", "%d on %s (%d/%d-byte blocks): lvcreate uses 4096 on 4Kn and 512e disks", in.BlockSize, d.ID, d.LogicalBlockSize, d.PhysicalBlockSize)
			return
		}
	}
}

// vgFree is the extents of a VG over members.
func vgFree(members []*PlanDevice, extentSize int64) int64 {
	var n int64
	for _, d := range members {
		n += PVExtents(d.Size, extentSize)
	}
	return n
}

// validateSizes recomputes the extents from the members' sizes.
func (p *Plan) validateSizes(field string, a *Array, members []*PlanDevice, bad func(string, string, ...any)) {
	if p.ExtentSize < 1<<20 || !powerOfTwo(p.ExtentSize) {
		return // said once, for extent_size
	}
	minExt, raw := int64(-1), int64(0)
	for _, d := range members {
		if d.Size <= PEStart || d.Size > MaxPVBytes {
			return // said for the device
		}
		raw += d.Size
		if e := PVExtents(d.Size, p.ExtentSize); minExt < 0 || e < minExt {
			minExt = e
		}
	}
	if a.Raw != raw {
		bad(field+".raw", "%d bytes, but the devices hold %d", a.Raw, raw)
	}
	n := int64(len(members))
	switch a.Type {
	case "raid5":
		l, err := SizeRaid5(minExt, p.ExtentSize, true)
		if err != nil {
			bad(field+".devices", "%v", err)
			return
		}
		if a.RequestedSize < 0 {
			bad(field+".requested_size", "%d: a size above 0, or absent for all of the VG", a.RequestedSize)
			return
		}
		if a.RequestedSize > 0 {
			if l, err = SizeRaid5For(a.RequestedSize, minExt, p.ExtentSize, len(members)-1, true); err != nil {
				bad(field+".requested_size", "%d: %v", a.RequestedSize, err)
				return
			}
		}
		if a.Layout == nil || *a.Layout != l {
			bad(field+".per_device", "%+v, but on these devices lvm2 2.03.16 makes %+v: re-plan", a.Layout, l)
		}
		if want := int64(a.DataStripes) * l.ImageExtents; a.Extents != want || a.DataStripes != len(members)-1 {
			bad(field+".extents", "%d: %d HDDs of %d bytes hold exactly %d extents as raid5 with integrity (the sizes must match the disks)", a.Extents, n, members[0].Size, int64(len(members)-1)*l.ImageExtents)
			return
		}
		if free := vgFree(members, p.ExtentSize) - int64(len(members))*(l.ImageExtents+l.RmetaExtents+l.ImetaExtents); a.VGFreeExtents != 0 && a.VGFreeExtents != free {
			bad(field+".vg_free_extents", "%d, but this layout leaves %d extents of the VG free", a.VGFreeExtents, free)
		}
	default:
		if a.RequestedSize != 0 {
			bad(field+".requested_size", "%d: only the raid5 tables array has one (the %s LV's size is its extents)", a.RequestedSize, a.Type)
		}
		if a.Extents <= 0 || a.Extents > minExt*n || a.Extents%n != 0 {
			bad(field+".extents", "%d: a %s LV over %d devices of %d extents each has a multiple of %d extents, at most %d", a.Extents, a.Type, n, minExt, n, minExt*n)
			return
		}
		if free := vgFree(members, p.ExtentSize) - a.Extents; a.VGFreeExtents != 0 && a.VGFreeExtents != free {
			bad(field+".vg_free_extents", "%d, but %d extents of the VG's %d stay free", a.VGFreeExtents, free, vgFree(members, p.ExtentSize))
		}
	}
	if a.Size != a.Extents*p.ExtentSize {
		bad(field+".size", "%d bytes, but %d extents of %d bytes are %d", a.Size, a.Extents, p.ExtentSize, a.Extents*p.ExtentSize)
	}
}

func validateFilesystem(field string, fs *Filesystem, bad func(string, string, ...any)) {
	if why := CheckFilesystem(fs.Type); why != "" {
		bad(field+".type", "%q: %s", fs.Type, why)
		return
	}
	if !uuidRE.MatchString(fs.UUID) {
		bad(field+".uuid", "%q is not a lower-case UUID", fs.UUID)
		return
	}
	if why := CheckMountPoint(fs.Mount); why != "" {
		bad(field+".mount", "%q: %s", fs.Mount, why)
		return
	}
	if want := newFS(fs.Type, fs.Mount, "", fs.UUID).Fstab; fs.Fstab != want {
		bad(field+".fstab", "%q is not the line tbhost derives (%q)", fs.Fstab, want)
	}
}
