package lvm

import (
	"crypto/rand"
	"fmt"
	"github.com/tbhost/tbhost/internal/capacity"
	"github.com/tbhost/tbhost/internal/timeline"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/sizes"
	"gopkg.in/yaml.v3"
)

// PlanVersion is the version of the plan file format.
const PlanVersion = 1

// Plan is a reviewed, saved description of the arrays to build and of the
// exact commands that build them. `tbhost lvm apply` runs exactly this.
type Plan struct {
	Version int    `json:"version" yaml:"version"`
	Created string `json:"created" yaml:"created"`
	Host    string `json:"host" yaml:"host"`
	// Source is where the inventory came from: "/" or a snapshot directory.
	Source string `json:"source" yaml:"source"`
	// InventoryFingerprint identifies the disks seen at planning time.
	InventoryFingerprint string `json:"inventory_fingerprint" yaml:"inventory_fingerprint"`
	// SizedFor is the LVM version whose sizing rules the extent counts follow.
	SizedFor   string        `json:"sized_for" yaml:"sized_for"`
	ExtentSize int64         `json:"extent_size" yaml:"extent_size"`
	Devices    []PlanDevice  `json:"devices" yaml:"devices"`
	Arrays     []Array       `json:"arrays" yaml:"arrays"`
	Commands   []Command     `json:"commands" yaml:"commands"`
	Notes      []string      `json:"notes,omitempty" yaml:"notes,omitempty"`
	Warnings   []string      `json:"warnings,omitempty" yaml:"warnings,omitempty"`
	Summary    *PlanCapacity `json:"capacity,omitempty" yaml:"capacity,omitempty"`
	// Timeline forecasts the long steps (AddForecast); informational.
	Timeline *timeline.Timeline `json:"timeline,omitempty" yaml:"timeline,omitempty"`
}

// PlanCapacity sums up the arrays.
type PlanCapacity struct {
	RawHDD       int64 `json:"raw_hdd" yaml:"raw_hdd"`
	TablesUsable int64 `json:"tables_usable" yaml:"tables_usable"`
	PrefixUsable int64 `json:"prefix_usable" yaml:"prefix_usable"`
	// Set, Filesystems and Fits come from AddForecast: the full 3-7 set,
	// what the filesystems tbhost makes hold, and whether the set fits.
	Set         *capacity.TableSet   `json:"set,omitempty" yaml:"set,omitempty"`
	Filesystems []FilesystemCapacity `json:"filesystems,omitempty" yaml:"filesystems,omitempty"`
	Fits        []capacity.Fit       `json:"fits,omitempty" yaml:"fits,omitempty"`
}

// PlanDevice is a device as seen at planning time. Apply finds it again by
// its stable id (or serial) and refuses if serial or size changed.
type PlanDevice struct {
	ID                string   `json:"id" yaml:"id"`     // /dev/disk/by-id/... (or /dev/sdX when the host has no by-id links)
	Path              string   `json:"path" yaml:"path"` // what the commands name: the id when there is one
	Name              string   `json:"name" yaml:"name"` // kernel name at planning time (informational)
	Kind              string   `json:"kind" yaml:"kind"` // disk or part
	Partition         int      `json:"partition,omitempty" yaml:"partition,omitempty"`
	Model             string   `json:"model,omitempty" yaml:"model,omitempty"`
	Serial            string   `json:"serial" yaml:"serial"` // of the disk (for a partition: its disk's)
	WWN               string   `json:"wwn,omitempty" yaml:"wwn,omitempty"`
	Size              int64    `json:"size" yaml:"size"`
	LogicalBlockSize  int64    `json:"logical_block_size" yaml:"logical_block_size"`
	PhysicalBlockSize int64    `json:"physical_block_size" yaml:"physical_block_size"`
	Role              string   `json:"role" yaml:"role"` // hdd or nvme
	Wipe              bool     `json:"wipe,omitempty" yaml:"wipe,omitempty"`
	Found             []string `json:"found,omitempty" yaml:"found,omitempty"` // what was on it at planning time
}

// Integrity settings of an array.
type Integrity struct {
	Enabled   bool   `json:"enabled" yaml:"enabled"`
	Mode      string `json:"mode,omitempty" yaml:"mode,omitempty"`
	BlockSize int    `json:"blocksize,omitempty" yaml:"blocksize,omitempty"`
	Why       string `json:"why,omitempty" yaml:"why,omitempty"`
}

// Filesystem is an optional filesystem on an array's LV.
type Filesystem struct {
	Type  string `json:"type" yaml:"type"` // ext4 or xfs
	Mount string `json:"mount" yaml:"mount"`
	UUID  string `json:"uuid" yaml:"uuid"`
	Fstab string `json:"fstab" yaml:"fstab"`
}

// Array is one VG with its one LV.
type Array struct {
	Role        string       `json:"role" yaml:"role"` // tables or prefix
	VG          string       `json:"vg" yaml:"vg"`
	LV          string       `json:"lv" yaml:"lv"`
	Type        string       `json:"type" yaml:"type"`       // raid5, raid0, linear
	Stripes     int          `json:"stripes" yaml:"stripes"` // devices in the stripe, parity included
	DataStripes int          `json:"data_stripes" yaml:"data_stripes"`
	Devices     []string     `json:"devices" yaml:"devices"` // PlanDevice ids, in image order
	Extents     int64        `json:"extents" yaml:"extents"` // the LV's extents (lvcreate --extents)
	Size        int64        `json:"size" yaml:"size"`       // usable bytes of the LV
	Raw         int64        `json:"raw" yaml:"raw"`         // bytes of the devices
	Layout      *Raid5Layout `json:"per_device,omitempty" yaml:"per_device,omitempty"`
	// RequestedSize is lvm plan --tables-size (bytes as asked; Extents is
	// it rounded up to whole extents per data stripe); 0: all of the VG.
	RequestedSize int64 `json:"requested_size,omitempty" yaml:"requested_size,omitempty"`
	// VGFreeExtents are the VG's extents lvcreate leaves free (the spare
	// extent of each PV, and what --tables-size / --prefix-size left out).
	// 0 in plans written before tbhost reported it.
	VGFreeExtents int64       `json:"vg_free_extents" yaml:"vg_free_extents"`
	Integrity     Integrity   `json:"integrity" yaml:"integrity"`
	Filesystem    *Filesystem `json:"filesystem,omitempty" yaml:"filesystem,omitempty"`
}

// DevPath is the LV's device node.
func (a Array) DevPath() string { return "/dev/" + a.VG + "/" + a.LV }

// PlanOptions are `tbhost lvm plan`'s choices.
type PlanOptions struct {
	HDDs  []string // --hdd: devices for the RAID 5 (default: every non-system rotational disk)
	NVMes []string // --nvme: devices for the RAID 0 (default: free NVMe disks and partitions)
	Wipe  []string // --wipe: devices whose content may be destroyed

	PrefixSize         int64  // bytes of vg-nvme/prefix; 0 = all
	TablesSize         int64  // bytes of vg-hdd/tables (--tables-size); 0 = all the VG holds
	IntegrityMode      string // journal (default) or bitmap
	IntegrityBlockSize int    // 0 = what lvcreate will use for these disks
	NoNVMe             bool   // plan the HDD array only
	AllowSizeMismatch  bool   // accept HDDs of different sizes (capacity is lost)

	TablesFS, TablesMount string // optional filesystem on vg-hdd/tables
	PrefixFS, PrefixMount string // optional filesystem on vg-nvme/prefix

	HDDVG, TablesLV, NVMeVG, PrefixLV string // names (defaults vg-hdd, tables, vg-nvme, prefix)
	ExtentSize                        int64

	Now  time.Time
	UUID func() string // for filesystem UUIDs (tests pass a fixed one)
}

func (o *PlanOptions) defaults() {
	if o.HDDVG == "" {
		o.HDDVG = "vg-hdd"
	}
	if o.TablesLV == "" {
		o.TablesLV = "tables"
	}
	if o.NVMeVG == "" {
		o.NVMeVG = "vg-nvme"
	}
	if o.PrefixLV == "" {
		o.PrefixLV = "prefix"
	}
	if o.ExtentSize == 0 {
		o.ExtentSize = DefaultExtentSize
	}
	if o.IntegrityMode == "" {
		o.IntegrityMode = "journal"
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.UUID == nil {
		o.UUID = randomUUID
	}
}

// RefusedError lists every reason a plan (or an apply) was refused.
type RefusedError struct {
	What     string
	Problems []string
}

func (e *RefusedError) Error() string {
	if len(e.Problems) == 1 {
		return e.What + ": " + e.Problems[0]
	}
	return e.What + ":\n  - " + strings.Join(e.Problems, "\n  - ")
}

// MakePlan plans the arrays for inv: it checks the options, picks and
// checks the devices, plans the RAID 5 over the HDDs and the RAID 0 over the
// NVMe devices, and only when nothing was refused records the devices,
// derives the commands and sums up the capacity.
func MakePlan(inv *blockdev.Inventory, opts PlanOptions) (*Plan, error) {
	opts.defaults()
	var problems []string
	refuse := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }

	checkPlanOptions(opts, refuse)
	wipe := wipeSet(inv, opts.Wipe, refuse)
	hdds := pick(inv, opts.HDDs, "--hdd", blockdev.RoleHDD, refuse)
	var nvmes []*blockdev.Device
	if !opts.NoNVMe {
		nvmes = pick(inv, opts.NVMes, "--nvme", blockdev.RoleNVMe, refuse)
	}
	planned := append(append([]*blockdev.Device{}, hdds...), nvmes...)
	checkPlannedDevices(inv, planned, wipe, opts, refuse)

	p := newPlan(inv, opts, planned)
	problems = append(problems, planTablesArray(p, hdds, opts)...)
	problems = append(problems, planPrefixArray(p, nvmes, opts)...)
	if len(problems) > 0 {
		return nil, &RefusedError{What: "lvm plan refused", Problems: problems}
	}
	addPlanDevices(p, inv, planned, wipe, opts)
	p.Commands = BuildCommands(p)
	p.Summary = summarize(p.Arrays)
	// apply reads the plan back through the same rules: never write a plan
	// it would refuse (odd names, sizes or devices end here, not in apply)
	if ps := p.validate(); len(ps) > 0 {
		return nil, &RefusedError{What: "lvm plan refused", Problems: ps}
	}
	return p, nil
}

// checkPlanOptions refuses option values lvcreate or tbhost do not accept.
func checkPlanOptions(opts PlanOptions, refuse func(string, ...any)) {
	if opts.IntegrityMode != "journal" && opts.IntegrityMode != "bitmap" {
		refuse("--integrity-mode %q: use journal or bitmap", opts.IntegrityMode)
	}
	switch opts.IntegrityBlockSize {
	case 0, 512, 1024, 2048, 4096:
	default:
		refuse("--integrity-blocksize %d: dm-integrity accepts 512, 1024, 2048 or 4096", opts.IntegrityBlockSize)
	}
	for _, fs := range []string{opts.TablesFS, opts.PrefixFS} {
		if why := CheckFilesystem(fs); fs != "" && why != "" {
			refuse("filesystem %q: %s", fs, why)
		}
	}
	for _, m := range [][2]string{{"--tables-mount", opts.TablesMount}, {"--prefix-mount", opts.PrefixMount}} {
		if why := CheckMountPoint(m[1]); m[1] != "" && why != "" {
			refuse("%s %q: %s", m[0], m[1], why)
		}
	}
	for _, n := range []string{opts.HDDVG, opts.NVMeVG} {
		if why := CheckVGName(n); why != "" {
			refuse("VG name %q: %s", n, why)
		}
	}
	for _, n := range []string{opts.TablesLV, opts.PrefixLV} {
		if why := CheckLVName(n); why != "" {
			refuse("LV name %q: %s", n, why)
		}
	}
}

// wipeSet resolves --wipe to kernel names.
func wipeSet(inv *blockdev.Inventory, refs []string, refuse func(string, ...any)) map[string]bool {
	wipe := map[string]bool{}
	for _, ref := range refs {
		d := inv.Find(ref)
		if d == nil {
			refuse("--wipe %s: no such device (see tbhost inventory)", ref)
			continue
		}
		wipe[d.Name] = true
	}
	return wipe
}

// checkPlannedDevices refuses a device named twice, a partition next to its
// own disk, devices that cannot be used at all, and --wipe of a device that
// is not in the plan.
func checkPlannedDevices(inv *blockdev.Inventory, planned []*blockdev.Device, wipe map[string]bool, opts PlanOptions, refuse func(string, ...any)) {
	seen := map[string]string{}
	for _, d := range planned {
		if prev, ok := seen[d.Name]; ok {
			refuse("%s is named twice (%s)", d.Name, prev)
		}
		seen[d.Name] = d.Ref()
		for _, p := range checkUsable(d, inv, wipe[d.Name], opts) {
			refuse("%s", p)
		}
		if d.Kind == "part" {
			if _, ok := seen[d.Parent]; ok {
				refuse("%s and its disk %s are both in the plan", d.Name, d.Parent)
			}
		}
	}
	for name := range wipe {
		if _, ok := seen[name]; !ok {
			refuse("--wipe %s: the device is not in the plan (name it with --hdd or --nvme too)", name)
		}
	}
}

// newPlan is the plan's header, with the warnings about what could not be
// seen while planning.
func newPlan(inv *blockdev.Inventory, opts PlanOptions, planned []*blockdev.Device) *Plan {
	p := &Plan{
		Version: PlanVersion, Created: opts.Now.UTC().Format(time.RFC3339), Host: hostName(inv), Source: inv.Root,
		InventoryFingerprint: inv.Fingerprint, SizedFor: "lvm2 2.03.16 (Debian 12)", ExtentSize: opts.ExtentSize,
	}
	if !inv.PVsKnown {
		p.Warnings = append(p.Warnings, "LVM PV membership was not known when planning (lvm not run); apply checks it again")
	}
	for _, d := range planned {
		if d.ProbeError != "" {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s: %s; apply checks it again", d.Name, d.ProbeError))
		}
	}
	return p
}

// planTablesArray plans the RAID 5 + integrity over the HDDs.
func planTablesArray(p *Plan, hdds []*blockdev.Device, opts PlanOptions) []string {
	if len(hdds) == 0 && len(opts.HDDs) == 0 {
		return []string{"no HDDs for the tables array: no non-system rotational disk found; name them with --hdd"}
	}
	switch {
	case len(hdds) < 3:
		return []string{fmt.Sprintf("RAID 5 needs at least 3 HDDs, found %d (%s); name them with --hdd", len(hdds), names(hdds))}
	case len(hdds)-1 > MaxRaid5DataStripes:
		return []string{fmt.Sprintf("RAID 5 over %d HDDs: LVM allows at most %d data stripes (%d devices)", len(hdds), MaxRaid5DataStripes, MaxRaid5DataStripes+1)}
	}
	a, ps := planRaid5(hdds, opts, p)
	if a != nil {
		p.Arrays = append(p.Arrays, *a)
	}
	return ps
}

// planPrefixArray plans the RAID 0 (or linear LV) over the NVMe devices.
func planPrefixArray(p *Plan, nvmes []*blockdev.Device, opts PlanOptions) []string {
	switch {
	case opts.NoNVMe:
		return nil
	case len(nvmes) == 0:
		p.Notes = append(p.Notes, "no free NVMe disk or partition found: no prefix array planned (name devices with --nvme)")
		return nil
	case len(nvmes) > MaxRaid0Stripes:
		return []string{fmt.Sprintf("RAID 0 over %d devices: LVM allows at most %d stripes", len(nvmes), MaxRaid0Stripes)}
	}
	a, ps := planRaid0(nvmes, opts, p)
	if a != nil {
		p.Arrays = append(p.Arrays, *a)
	}
	return ps
}

// addPlanDevices records the planned devices as seen now, warning about
// data apply will refuse and about devices without a by-id link.
func addPlanDevices(p *Plan, inv *blockdev.Inventory, planned []*blockdev.Device, wipe map[string]bool, opts PlanOptions) {
	for _, d := range planned {
		pd := planDevice(inv, d, wipe[d.Name])
		p.Devices = append(p.Devices, pd)
		if len(pd.Found) > 0 && !pd.Wipe && !(d.PV != nil && (d.PV.VG == opts.HDDVG || d.PV.VG == opts.NVMeVG)) {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s holds data (%s): apply will refuse it; if that may be destroyed, re-plan with --wipe %s",
				d.Name, strings.Join(pd.Found, "; "), d.Name))
		}
		if d.StableID == "" {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s has no /dev/disk/by-id link: the commands name it %s, and apply checks its serial %q before using that name",
				d.Name, d.Path, d.Serial))
		}
	}
}

// summarize sums up the arrays' capacity.
func summarize(arrays []Array) *PlanCapacity {
	s := &PlanCapacity{}
	for _, a := range arrays {
		switch a.Role {
		case "tables":
			s.RawHDD, s.TablesUsable = a.Raw, a.Size
		case "prefix":
			s.PrefixUsable = a.Size
		}
	}
	return s
}

// pick resolves the named devices, or chooses the defaults for role.
func pick(inv *blockdev.Inventory, refs []string, flag, role string, refuse func(string, ...any)) []*blockdev.Device {
	var out []*blockdev.Device
	if len(refs) > 0 {
		for _, r := range refs {
			d := inv.Find(r)
			if d == nil {
				refuse("%s %s: no such device on %s (see tbhost inventory for names and ids)", flag, r, hostName(inv))
				continue
			}
			// said here, in the flag's words: otherwise the default set of the
			// other flag (every HDD) also has it ("sda is named twice"), or the
			// plan's validation refuses it as a member of the wrong array
			if m := mediaRole(d); m != role {
				if role == blockdev.RoleNVMe {
					refuse("%s %s: %s is a rotational disk (an HDD); %s takes the flash devices of the prefix store (NVMe, or another SSD), HDDs go with --hdd", flag, r, d.Name, flag)
				} else {
					refuse("%s %s: %s is not rotational (NVMe or SSD); %s takes the rotational disks of the tables array, flash devices go with --nvme", flag, r, d.Name, flag)
				}
				continue
			}
			out = append(out, d)
		}
		return out
	}
	for _, d := range inv.Disks {
		switch role {
		case blockdev.RoleHDD:
			if d.Role == blockdev.RoleHDD {
				out = append(out, d)
			}
		case blockdev.RoleNVMe:
			// whole NVMe disks that are free, and free partitions on NVMe disks (system or not)
			if d.Transport != "nvme" {
				continue
			}
			if d.Role == blockdev.RoleNVMe && len(d.Partitions) == 0 && free(d) {
				out = append(out, d)
				continue
			}
			for _, p := range d.Partitions {
				if p.Role == blockdev.RoleNVMe && free(p) {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

func hostName(inv *blockdev.Inventory) string {
	if inv.Hostname != "" {
		return inv.Hostname
	}
	return "this host"
}

// free: nothing uses it and nothing is on it.
func free(d *blockdev.Device) bool {
	return len(d.Busy()) == 0 && len(d.Content()) == 0 && d.ProbeError == ""
}

// checkUsable lists why d cannot be in the plan at all (the guards on
// content are applied again, with the wipe flag, by apply).
func checkUsable(d *blockdev.Device, inv *blockdev.Inventory, wipe bool, opts PlanOptions) []string {
	var out []string
	if d.Kind == "disk" && d.Role == blockdev.RoleSystem {
		out = append(out, fmt.Sprintf("%s is the system disk (%s): tbhost never uses it whole; give a free partition of it instead", d.Name, d.RoleWhy))
		return out
	}
	if busy := d.Busy(); len(busy) > 0 {
		out = append(out, fmt.Sprintf("%s is in use: %s; stop using it first (umount, swapoff, remove the holder), or leave it out by naming the devices with --hdd/--nvme", d.Name, strings.Join(busy, "; ")))
	}
	if d.PV != nil && d.PV.VG != "" && d.PV.VG != opts.HDDVG && d.PV.VG != opts.NVMeVG && !wipe {
		out = append(out, fmt.Sprintf("%s is a PV of another VG (%s); remove it from that VG (vgreduce/vgremove) or pass --wipe %s", d.Name, d.PV.VG, d.Name))
	}
	if d.ReadOnly {
		out = append(out, fmt.Sprintf("%s is read-only", d.Name))
	}
	if d.Size == 0 {
		out = append(out, fmt.Sprintf("%s has no medium (size 0)", d.Name))
	}
	return out
}

func planDevice(inv *blockdev.Inventory, d *blockdev.Device, wipe bool) PlanDevice {
	pd := PlanDevice{
		ID: d.Ref(), Path: d.Ref(), Name: d.Name, Kind: d.Kind, Partition: d.Partition, Model: d.Model,
		Serial: d.Serial, WWN: d.WWN, Size: d.Size, LogicalBlockSize: d.LogicalBlockSize,
		PhysicalBlockSize: d.PhysicalBlockSize, Wipe: wipe,
	}
	pd.Role = mediaRole(d)
	pd.Found = d.Content()
	return pd
}

// mediaRole is a planned device's role: nvme for NVMe and other
// non-rotational devices, hdd for rotational disks.
func mediaRole(d *blockdev.Device) string {
	if d.Transport == "nvme" || !d.Rotational {
		return blockdev.RoleNVMe
	}
	return blockdev.RoleHDD
}

func names(ds []*blockdev.Device) string {
	if len(ds) == 0 {
		return "none"
	}
	var n []string
	for _, d := range ds {
		n = append(n, d.Name)
	}
	return strings.Join(n, ", ")
}

// sameBlockSizes refuses mixed logical block sizes (vgcreate and
// --raidintegrity both do).
func sameBlockSizes(ds []*blockdev.Device, what string) []string {
	by := map[int64][]string{}
	for _, d := range ds {
		by[d.LogicalBlockSize] = append(by[d.LogicalBlockSize], d.Name)
	}
	if len(by) <= 1 {
		return nil
	}
	var parts []string
	for lbs, ns := range by {
		parts = append(parts, fmt.Sprintf("%d bytes: %s", lbs, strings.Join(ns, ", ")))
	}
	sort.Strings(parts)
	return []string{fmt.Sprintf("%s mixes logical block sizes (%s): LVM refuses such a VG; use disks of one kind", what, strings.Join(parts, "; "))}
}

// integrityBlockSize chooses the block size lvcreate will really use.
func integrityBlockSize(ds []*blockdev.Device, asked int) (int, string, []string, []string) {
	lbs, pbs := ds[0].LogicalBlockSize, int64(0)
	for _, d := range ds {
		if d.PhysicalBlockSize > pbs {
			pbs = d.PhysicalBlockSize
		}
	}
	var warn []string
	switch {
	case lbs == 4096:
		if asked != 0 && asked < 4096 {
			return 0, "", nil, []string{fmt.Sprintf("--integrity-blocksize %d: the HDDs are 4Kn (4096-byte logical blocks); lvcreate refuses less than 4096", asked)}
		}
		return 4096, "the HDDs are 4Kn (4096-byte logical sectors): 4096 is the only size lvcreate accepts", nil, nil
	case lbs == 512 && pbs >= 4096:
		why := "the HDDs are 512e (512-byte logical, 4096-byte physical sectors): lvcreate (lvm2 2.03.16+) uses 4096 on them whatever is asked"
		if asked != 0 && asked != 4096 {
			warn = append(warn, fmt.Sprintf("--integrity-blocksize %d ignored: on 512e disks lvcreate silently uses 4096, so the plan says 4096", asked))
		}
		return 4096, why, warn, nil
	default:
		if asked != 0 {
			return asked, fmt.Sprintf("the HDDs are 512n; %d as asked", asked), nil, nil
		}
		return 4096, "the HDDs are 512n: lvcreate allows 512 to 4096; 4096 keeps the integrity metadata and CPU cost lowest (pass --integrity-blocksize 512 for 512-byte writes)", nil, nil
	}
}

func planRaid5(hdds []*blockdev.Device, opts PlanOptions, p *Plan) (*Array, []string) {
	var problems []string
	problems = append(problems, sameBlockSizes(hdds, "the HDD set")...)
	if len(problems) > 0 {
		return nil, problems
	}
	bs, why, warn, ps := integrityBlockSize(hdds, opts.IntegrityBlockSize)
	p.Warnings = append(p.Warnings, warn...)
	if len(ps) > 0 {
		return nil, ps
	}
	// sizes: every image is as large as the smallest PV allows
	minExt, maxExt := int64(-1), int64(0)
	var raw int64
	for _, d := range hdds {
		e := PVExtents(d.Size, opts.ExtentSize)
		raw += d.Size
		if minExt < 0 || e < minExt {
			minExt = e
		}
		if e > maxExt {
			maxExt = e
		}
	}
	if maxExt > minExt {
		var lost int64
		for _, d := range hdds {
			lost += (PVExtents(d.Size, opts.ExtentSize) - minExt) * opts.ExtentSize
		}
		msg := fmt.Sprintf("the HDDs differ in size (smallest %s, largest %s): RAID 5 uses the smallest size on every disk, losing %s",
			sizes.Format(minExt*opts.ExtentSize), sizes.Format(maxExt*opts.ExtentSize), sizes.Format(lost))
		if float64(lost) > 0.01*float64(raw) && !opts.AllowSizeMismatch {
			return nil, []string{msg + "; use disks of one size, leave the odd ones out with --hdd, or accept the loss with --allow-size-mismatch"}
		}
		p.Warnings = append(p.Warnings, msg)
	}
	data := len(hdds) - 1
	layout, err := SizeRaid5(minExt, opts.ExtentSize, true)
	if err != nil {
		return nil, []string{fmt.Sprintf("HDDs of %s: %v", sizes.Format(hdds[0].Size), err)}
	}
	if opts.TablesSize > 0 {
		layout, err = SizeRaid5For(opts.TablesSize, minExt, opts.ExtentSize, data, true)
		if err != nil {
			maxBytes := int64(data) * layout.ImageExtents * opts.ExtentSize
			return nil, []string{fmt.Sprintf("--tables-size %s: %v on %d HDDs; give at most --tables-size %dGiB, or leave --tables-size out for all of it",
				sizes.Format(opts.TablesSize), err, len(hdds), maxBytes>>30)}
		}
	}
	a := &Array{
		Role: "tables", VG: opts.HDDVG, LV: opts.TablesLV, Type: "raid5", Stripes: len(hdds), DataStripes: data,
		Extents: int64(data) * layout.ImageExtents, Raw: raw, Layout: &layout, RequestedSize: opts.TablesSize,
		Integrity: Integrity{Enabled: true, Mode: opts.IntegrityMode, BlockSize: bs, Why: why},
	}
	a.Size = a.Extents * opts.ExtentSize
	a.VGFreeExtents = raid5FreeExtents(hdds, opts.ExtentSize, layout)
	for _, d := range hdds {
		a.Devices = append(a.Devices, d.Ref())
	}
	if opts.TablesFS != "" {
		a.Filesystem = newFS(opts.TablesFS, opts.TablesMount, "/srv/syzygy", opts.UUID())
	}
	p.Notes = append(p.Notes, fmt.Sprintf("%s/%s: RAID 5 over %d HDDs = %d data stripes + parity (--stripes %d, every PV listed: without --stripes lvm2 would use only 3 disks)",
		a.VG, a.LV, len(hdds), data, data))
	p.Notes = append(p.Notes, fmt.Sprintf("%s/%s: per HDD %d extents = %d image + %d rmeta + %d integrity metadata + %d spare; usable %s of %s raw (parity %s, integrity metadata %s)",
		a.VG, a.LV, layout.PVExtents, layout.ImageExtents, layout.RmetaExtents, layout.ImetaExtents, layout.SpareExtents,
		sizes.Format(a.Size), sizes.Format(raw), sizes.Format(layout.ImageExtents*opts.ExtentSize),
		sizes.Format(int64(len(hdds))*layout.ImetaExtents*opts.ExtentSize)))
	if opts.TablesSize > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%s/%s: --tables-size %s (%d bytes) as asked: %d extents (rounded up to whole extents, %d per data stripe), %s",
			a.VG, a.LV, sizes.Format(opts.TablesSize), opts.TablesSize, a.Extents, layout.ImageExtents, sizes.Format(a.Size)))
	}
	p.Notes = append(p.Notes, fmt.Sprintf("%s: %d extents (%s) remain free in the VG after lvcreate (%d per HDD%s)",
		a.VG, a.VGFreeExtents, sizes.Format(a.VGFreeExtents*opts.ExtentSize), layout.SpareExtents, map[bool]string{true: ": the room --tables-size left", false: ": the spare margin"}[opts.TablesSize > 0]))
	p.Notes = append(p.Notes, fmt.Sprintf("%s/%s: integrity block size %d: %s", a.VG, a.LV, bs, why))
	if opts.IntegrityMode == "journal" {
		p.Notes = append(p.Notes, fmt.Sprintf("%s/%s: integrity mode journal (every write is written twice; safe across crashes). Tables are written once: --integrity-mode bitmap halves write time", a.VG, a.LV))
	}
	return a, nil
}

func planRaid0(nvmes []*blockdev.Device, opts PlanOptions, p *Plan) (*Array, []string) {
	if ps := sameBlockSizes(nvmes, "the NVMe set"); len(ps) > 0 {
		return nil, ps
	}
	minExt := int64(-1)
	var raw int64
	for _, d := range nvmes {
		e := PVExtents(d.Size, opts.ExtentSize)
		raw += d.Size
		if minExt < 0 || e < minExt {
			minExt = e
		}
	}
	n := int64(len(nvmes))
	ext := minExt * n
	if opts.PrefixSize > 0 {
		want := (opts.PrefixSize + opts.ExtentSize - 1) / opts.ExtentSize
		want = (want + n - 1) / n * n // a whole number of extents per stripe
		if want > ext {
			return nil, []string{fmt.Sprintf("--prefix-size %s: the NVMe devices hold at most %s as RAID 0 (%d x %s)",
				sizes.Format(opts.PrefixSize), sizes.Format(ext*opts.ExtentSize), n, sizes.Format(minExt*opts.ExtentSize))}
		}
		ext = want
	}
	if ext <= 0 {
		return nil, []string{"the NVMe devices are too small for an LV"}
	}
	a := &Array{Role: "prefix", VG: opts.NVMeVG, LV: opts.PrefixLV, Type: "raid0", Stripes: len(nvmes), DataStripes: len(nvmes),
		Extents: ext, Size: ext * opts.ExtentSize, Raw: raw}
	for _, d := range nvmes {
		a.VGFreeExtents += PVExtents(d.Size, opts.ExtentSize)
	}
	a.VGFreeExtents -= ext
	if len(nvmes) == 1 {
		a.Type = "linear"
		p.Notes = append(p.Notes, fmt.Sprintf("%s/%s: only one NVMe device: a linear LV (no striping)", a.VG, a.LV))
	} else {
		p.Notes = append(p.Notes, fmt.Sprintf("%s/%s: RAID 0 over %d NVMe devices (--stripes %d): %s; no redundancy, the prefix store can be rebuilt from the tables",
			a.VG, a.LV, len(nvmes), len(nvmes), sizes.Format(a.Size)))
	}
	for _, d := range nvmes {
		a.Devices = append(a.Devices, d.Ref())
	}
	if opts.PrefixFS != "" {
		a.Filesystem = newFS(opts.PrefixFS, opts.PrefixMount, "/srv/syzygy-prefix", opts.UUID())
	}
	return a, nil
}

// raid5FreeExtents is what stays free in the VG of hdds after lvcreate:
// on each PV its extents less the image, rmeta and imeta of the layout.
func raid5FreeExtents(hdds []*blockdev.Device, extentSize int64, l Raid5Layout) int64 {
	var free int64
	for _, d := range hdds {
		free += PVExtents(d.Size, extentSize) - l.ImageExtents - l.RmetaExtents - l.ImetaExtents
	}
	return free
}

func newFS(typ, mount, def, uuid string) *Filesystem {
	if mount == "" {
		mount = def
	}
	opts := "defaults,noatime"
	pass := "2"
	if typ == "xfs" {
		pass = "0"
	}
	return &Filesystem{Type: typ, Mount: mount, UUID: uuid,
		Fstab: fmt.Sprintf("UUID=%s %s %s %s,nofail 0 %s", uuid, mount, typ, opts, pass)}
}

func randomUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// BuildCommands derives the exact commands of a plan from its devices and
// arrays. Apply re-derives them and refuses a plan whose commands were
// edited by hand; it runs what it derived, never a plan's command text.
func BuildCommands(p *Plan) []Command {
	steps := planSteps(p)
	cmds := make([]Command, len(steps))
	for i, s := range steps {
		cmds[i] = s.argv
	}
	return cmds
}

// Kinds of plan steps.
const (
	stepWipe     = "wipefs"
	stepPVCreate = "pvcreate"
	stepVGCreate = "vgcreate"
	stepLVCreate = "lvcreate"
	stepMkfs     = "mkfs"
)

// planStep is one command with the plan device or array it touches, so
// that apply guards and decides on exactly what the command acts on
// instead of parsing its argv.
type planStep struct {
	argv Command
	kind string
	dev  *PlanDevice // wipefs, pvcreate
	arr  *Array      // vgcreate, lvcreate, mkfs
}

// planSteps builds the steps. Every lvm command ends its options with "--"
// before the positional VG names and device paths: lvm2 2.03.16 stops
// option parsing there (tools/lvmcmdline.c lvm_run_command: "If we reach
// "--" then stop", then getopt_long in _process_command_line), so a name
// can never be read as an option. (The plan's names and paths are checked
// too: see validate.)
func planSteps(p *Plan) []planStep {
	var steps []planStep
	byID := map[string]*PlanDevice{}
	for i := range p.Devices {
		d := &p.Devices[i]
		byID[d.ID] = d
		if d.Wipe {
			steps = append(steps, planStep{argv: Command{"wipefs", "--all", d.Path}, kind: stepWipe, dev: d})
		}
	}
	ext := strconv.FormatInt(p.ExtentSize/1024, 10) + "k"
	for i := range p.Arrays {
		a := &p.Arrays[i]
		var paths []string
		for _, id := range a.Devices {
			if d := byID[id]; d != nil {
				paths = append(paths, d.Path)
				steps = append(steps, planStep{argv: Command{"lvm", "pvcreate", "--", d.Path}, kind: stepPVCreate, dev: d})
			}
		}
		steps = append(steps, planStep{argv: append(Command{"lvm", "vgcreate", "--physicalextentsize", ext, "--", a.VG}, paths...), kind: stepVGCreate, arr: a})
		lc := Command{"lvm", "lvcreate", "--yes", "--wipesignatures", "y", "--type", a.Type}
		if a.Type != "linear" {
			lc = append(lc, "--stripes", strconv.Itoa(a.DataStripes))
		}
		if a.Integrity.Enabled {
			lc = append(lc, "--raidintegrity", "y", "--raidintegritymode", a.Integrity.Mode,
				"--raidintegrityblocksize", strconv.Itoa(a.Integrity.BlockSize))
		}
		lc = append(lc, "--extents", strconv.FormatInt(a.Extents, 10), "--name", a.LV, "--", a.VG)
		steps = append(steps, planStep{argv: append(lc, paths...), kind: stepLVCreate, arr: a})
		if fs := a.Filesystem; fs != nil {
			// the options of internal/capacity: what the plan's CAPACITY counted
			opts, _ := capacity.MkfsArgs(capacity.Role(a.Role), fs.Type)
			switch fs.Type {
			case "ext4":
				steps = append(steps, planStep{argv: append(append(Command{"mkfs.ext4"}, opts...), "-U", fs.UUID, "-L", a.LV, a.DevPath()), kind: stepMkfs, arr: a})
			case "xfs":
				steps = append(steps, planStep{argv: append(append(Command{"mkfs.xfs"}, opts...), "-m", "uuid="+fs.UUID, "-L", a.LV, a.DevPath()), kind: stepMkfs, arr: a})
			}
		}
	}
	return steps
}

// commandsBeforeSeparator are the commands of plans written before tbhost
// put "--" into the lvm commands (same plan version): such a plan is still
// read, and apply runs the commands derived now.
func commandsBeforeSeparator(p *Plan) []Command {
	var out []Command
	for _, c := range BuildCommands(p) {
		if c[0] == "lvm" {
			var old Command
			for _, a := range c {
				if a != "--" {
					old = append(old, a)
				}
			}
			c = old
		}
		out = append(out, c)
	}
	return out
}

// Command is one argv; YAML prints it on one line.
type Command []string

// MarshalYAML prints the argv as a flow sequence: [lvm, pvcreate, /dev/sda].
func (c Command) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, a := range c {
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: a, Tag: "!!str"})
	}
	return n, nil
}
