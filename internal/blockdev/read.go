package blockdev

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/shirou/gopsutil/v4/common"
	"github.com/shirou/gopsutil/v4/disk"
	"github.com/shirou/gopsutil/v4/mem"
	"github.com/tbhost/tbhost/internal/sysread"
)

// SnapshotMeta is the file Snapshot writes next to the copied trees: what
// cannot be copied as files (signatures read from the devices, `pvs`).
const SnapshotMeta = "tbhost-snapshot.json"

// Options tell Read where and how to look.
type Options struct {
	// Root is the directory /sys, /proc, /dev/disk/by-id and /run/udev are
	// read under: "/" for this machine, or a fixture/snapshot tree.
	Root string
	// Probe reads the first and last bytes of every device for signatures
	// (needs read access to /dev/*). Only meaningful on the real root.
	Probe bool
	// PVs lists LVM physical volumes (e.g. `pvs` through the lvm package).
	// nil means unknown; a snapshot's own list is used under a snapshot root.
	PVs func(ctx context.Context) ([]PV, error)
}

// snapshotMeta is the JSON content of SnapshotMeta.
type snapshotMeta struct {
	Hostname    string                 `json:"hostname,omitempty"`
	Probes      map[string][]Signature `json:"probes,omitempty"`
	ProbeErrors map[string]string      `json:"probe_errors,omitempty"`
	PVsKnown    bool                   `json:"pvs_known"`
	PVs         []PV                   `json:"pvs,omitempty"`
}

// skipDisk reports kernel names that are never physical disks.
func skipDisk(name string) bool {
	for _, p := range []string{"loop", "ram", "zram", "dm-", "md", "sr", "fd", "nbd", "zd", "rbd"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// Read takes the inventory.
func Read(ctx context.Context, opts Options) (*Inventory, error) {
	inv, _, err := read(ctx, opts)
	return inv, err
}

func read(ctx context.Context, opts Options) (*Inventory, *hostFS, error) {
	root := opts.Root
	if root == "" {
		root = "/"
	}
	h := newHostFS(root)
	if !h.exists("/sys/block") {
		return nil, h, fmt.Errorf("%s: no block devices to read (is --root a snapshot or fixture tree made by tbhost inventory --snapshot?)", h.path("/sys/block"))
	}
	var meta snapshotMeta
	if root != "/" {
		p := filepath.Join(root, SnapshotMeta)
		if b, err := sysread.File(p, sysread.ReportLimit); err == nil {
			if err := json.Unmarshal(b, &meta); err != nil {
				return nil, h, fmt.Errorf("%s: %w", p, err)
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, h, err
		}
	}
	inv := &Inventory{Root: root, Hostname: meta.Hostname}
	if inv.Hostname == "" {
		inv.Hostname = h.readString("/proc/sys/kernel/hostname")
	}
	if inv.Hostname == "(none)" { // the kernel's default: no hostname set
		inv.Hostname = ""
	}

	names := h.readDir("/sys/block")
	if names == nil {
		return nil, h, fmt.Errorf("read %s: cannot list block devices", h.path("/sys/block"))
	}
	dmNames := map[string]string{} // dm-3 -> vg--hdd-tables
	for _, n := range names {
		if strings.HasPrefix(n, "dm-") {
			dmNames[n] = h.readString("/sys/block/" + n + "/dm/name")
		}
	}
	idLinks := readByID(h)
	for _, n := range names {
		if skipDisk(n) {
			continue
		}
		d, err := readDisk(ctx, h, n, dmNames, idLinks)
		if err != nil {
			return nil, h, err
		}
		inv.Disks = append(inv.Disks, d)
	}
	sortDevices(inv.Disks)

	// signatures: from the devices themselves (real root), the snapshot, and udev
	for _, d := range inv.All() {
		if root == "/" && opts.Probe {
			sigs, err := probeDevice(d)
			if err != nil {
				d.ProbeError = err.Error()
			}
			d.Signatures = append(d.Signatures, sigs...)
		} else {
			d.Signatures = append(d.Signatures, meta.Probes[d.Name]...)
			d.ProbeError = meta.ProbeErrors[d.Name]
		}
		addUdevSignature(h, d)
	}

	if err := readUsage(ctx, h, inv, dmNames, names); err != nil {
		inv.Warnings = append(inv.Warnings, err.Error())
	}

	// PV membership
	var pvs []PV
	switch {
	case opts.PVs != nil:
		list, err := opts.PVs(ctx)
		if err != nil {
			inv.Warnings = append(inv.Warnings, fmt.Sprintf("LVM physical volumes unknown: %v", err))
		} else {
			pvs, inv.PVsKnown = list, true
		}
	case root != "/":
		pvs, inv.PVsKnown = meta.PVs, meta.PVsKnown
	}
	for _, pv := range pvs {
		if d := inv.Find(pv.Device); d != nil {
			p := pv
			d.PV = &p
		} else if d := inv.Find(filepath.Base(pv.Device)); d != nil {
			p := pv
			d.PV = &p
		}
	}
	for _, d := range inv.Disks {
		assignRole(d)
	}
	inv.MemTotal = readMemTotal(h)
	inv.Findings = schedulerFindings(inv)
	if err := h.failed(); err != nil { // a FIFO, /dev/zero, a huge file or a wild number in the tree
		return nil, h, err
	}
	inv.Fingerprint = Fingerprint(inv)
	return inv, h, nil
}

// readByID maps kernel names to their /dev/disk/by-id links.
func readByID(h *hostFS) map[string][]string {
	out := map[string][]string{}
	for _, e := range h.readDir("/dev/disk/by-id") {
		t := h.readlink("/dev/disk/by-id/" + e)
		if t == "" {
			continue
		}
		out[filepath.Base(t)] = append(out[filepath.Base(t)], "/dev/disk/by-id/"+e)
	}
	return out
}

// StableIDUnder returns the /dev/disk/by-id link tbhost names the block
// device kernelName (sda, nvme0n1, sda1) by, reading root/dev/disk/by-id
// and the disk's serial under root, by the same rule as Read's
// Device.StableID (see stableID): "" when no link points at the device.
// It lets packages that do not take a whole inventory (tbhost monitor)
// name disks exactly as `tbhost inventory` and `tbhost lvm plan` do.
func StableIDUnder(root, kernelName string) string {
	h := newHostFS(root)
	links := readByID(h)[kernelName]
	if len(links) == 0 {
		return ""
	}
	base := "/sys/block/" + kernelName
	if !h.exists(base) { // a partition: the serial is its disk's
		for _, disk := range h.readDir("/sys/block") {
			if h.exists("/sys/block/" + disk + "/" + kernelName + "/partition") {
				base = "/sys/block/" + disk
				break
			}
		}
	}
	return stableID(links, diskSerial(h, base, readUdev(h, h.readString(base+"/dev"))))
}

// Ranges of the sysfs numbers Read takes: sizes are in 512-byte sectors
// (at most 2^63 bytes), block sizes 512 B to 64 KiB, partition numbers as
// the kernel's (at most 2^20 minors).
const (
	maxSectors      = 1<<63/512 - 1
	minBlockSize    = 512
	maxBlockSize    = 64 << 10
	maxPartitionNum = 1 << 20
)

func readDisk(ctx context.Context, h *hostFS, name string, dmNames map[string]string, idLinks map[string][]string) (*Device, error) {
	base := "/sys/block/" + name
	d := &Device{Name: name, Path: "/dev/" + name, Kind: "disk"}
	d.MajMin = h.readString(base + "/dev")
	sizeText, err := sysread.Attr(h.path(base + "/size"))
	if err != nil {
		return nil, fmt.Errorf("%s: size: %w", h.path(base+"/size"), err)
	}
	h.note(base + "/size")
	sectors, err := sysread.ParseInt(h.path(base+"/size"), sizeText, 0, maxSectors)
	if err != nil {
		return nil, fmt.Errorf("size: %w (fix the --root tree)", err)
	}
	d.Size = sectors * 512
	if rot := h.readUint(base+"/queue/rotational", -1, 0, 1); rot >= 0 {
		d.Rotational = rot == 1
	}
	d.LogicalBlockSize = h.readUint(base+"/queue/logical_block_size", 512, minBlockSize, maxBlockSize)
	d.PhysicalBlockSize = h.readUint(base+"/queue/physical_block_size", d.LogicalBlockSize, minBlockSize, maxBlockSize)
	d.Scheduler, d.schedulers = schedulers(h.readString(base + "/queue/scheduler"))
	d.ReadOnly = h.readString(base+"/ro") == "1"
	d.Removable = h.readString(base+"/removable") == "1"
	d.Model = firstNonEmpty(h.readString(base+"/device/model"), h.readString(base+"/device/device/model"))
	d.Vendor = h.readString(base + "/device/vendor")
	link := h.readlink(base)
	d.NUMANode = numaNode(h, name, link)

	udev := readUdev(h, d.MajMin)
	// serial and WWN: udev first, then sysfs (the lab guest has no udev)
	d.Serial = diskSerial(h, base, udev)
	d.WWN = firstNonEmpty(udev["ID_WWN_WITH_EXTENSION"], udev["ID_WWN"], sysfsWWN(h, base))
	if d.Model == "" {
		d.Model = strings.ReplaceAll(udev["ID_MODEL"], "_", " ")
	}
	d.Transport = transport(name, link, udev)
	d.IDLinks = idLinks[name]
	d.StableID = stableID(d.IDLinks, d.Serial)
	d.Holders = readHolders(h, base+"/holders", dmNames)
	if sl := h.readDir(base + "/slaves"); sl != nil {
		d.Slaves = sl
	}
	d.udev = udev

	for _, e := range h.readDir(base) {
		if !strings.HasPrefix(e, name) || !h.exists(base+"/"+e+"/partition") {
			continue
		}
		pb := base + "/" + e
		p := &Device{Name: e, Path: "/dev/" + e, Kind: "part", Parent: name,
			Rotational: d.Rotational, LogicalBlockSize: d.LogicalBlockSize, PhysicalBlockSize: d.PhysicalBlockSize,
			Transport: d.Transport, Scheduler: d.Scheduler, NUMANode: d.NUMANode, Model: d.Model, Serial: d.Serial, WWN: d.WWN}
		p.Partition = int(h.readUint(pb+"/partition", 0, 0, maxPartitionNum))
		p.MajMin = h.readString(pb + "/dev")
		p.Size = h.readUint(pb+"/size", 0, 0, maxSectors) * 512
		p.Start = h.readUint(pb+"/start", 0, 0, maxSectors) * 512
		p.ReadOnly = h.readString(pb+"/ro") == "1"
		p.IDLinks = idLinks[e]
		p.StableID = stableID(p.IDLinks, d.Serial)
		p.Holders = readHolders(h, pb+"/holders", dmNames)
		p.udev = readUdev(h, p.MajMin)
		d.Partitions = append(d.Partitions, p)
	}
	sortDevices(d.Partitions)
	_ = ctx
	return d, nil
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return ""
}

func readHolders(h *hostFS, dir string, dmNames map[string]string) []Holder {
	var out []Holder
	for _, e := range h.readDir(dir) {
		hd := Holder{Kernel: e, Name: dmNames[e]}
		out = append(out, hd)
	}
	return out
}

// readUdev parses /run/udev/data/b<maj>:<min> ("E:KEY=VALUE" lines; "S:" links).
func readUdev(h *hostFS, majmin string) map[string]string {
	out := map[string]string{}
	if majmin == "" {
		return out
	}
	b, err := h.readBytes("/run/udev/data/b" + majmin)
	if err != nil {
		return out
	}
	return parseUdev(b)
}

// parseUdev parses a udev database file: "E:KEY=VALUE" properties, and
// "S:link" symlinks as "S:link" = "1".
func parseUdev(b []byte) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if kv, ok := strings.CutPrefix(line, "E:"); ok {
			if k, v, ok := strings.Cut(kv, "="); ok {
				out[k] = v
			}
		} else if l, ok := strings.CutPrefix(line, "S:"); ok {
			out["S:"+l] = "1"
		}
	}
	return out
}

// diskSerial is the serial of the disk at base (/sys/block/sda): udev's
// ID_SERIAL_SHORT, else sysfs device/serial, else the VPD page 0x80.
func diskSerial(h *hostFS, base string, udev map[string]string) string {
	return firstNonEmpty(udev["ID_SERIAL_SHORT"], h.readString(base+"/device/serial"), vpdSerial(h, base+"/device/vpd_pg80"))
}

// vpdSerial reads the unit serial number from a SCSI VPD page 0x80.
func vpdSerial(h *hostFS, p string) string {
	b, err := h.readBytes(p)
	if err != nil {
		return ""
	}
	return vpd80Serial(b)
}

// vpd80Serial is the serial of a VPD page 0x80 (4-byte header, length in
// byte 3), "" when b is no such page.
func vpd80Serial(b []byte) string {
	if len(b) < 4 || b[1] != 0x80 {
		return ""
	}
	n := int(b[3])
	if 4+n > len(b) {
		n = len(b) - 4
	}
	return strings.TrimSpace(strings.Trim(string(b[4:4+n]), "\x00"))
}

// sysfsWWN derives a WWN from sysfs: device/wwid ("naa.5000c500a1b2c3d4"),
// the NVMe namespace wwid ("eui.0025388b91234567"), or VPD page 0x83.
func sysfsWWN(h *hostFS, base string) string {
	for _, p := range []string{base + "/device/wwid", base + "/wwid"} {
		w := h.readString(p)
		if w == "" {
			continue
		}
		if v, ok := strings.CutPrefix(w, "naa."); ok {
			return "0x" + strings.ToLower(v)
		}
		if v, ok := strings.CutPrefix(w, "eui."); ok {
			return "eui." + strings.ToLower(v)
		}
		if strings.HasPrefix(w, "t10.") || strings.HasPrefix(w, "nvme.") {
			continue // vendor/serial strings, not a WWN
		}
		return w
	}
	if b, err := h.readBytes(base + "/device/vpd_pg83"); err == nil {
		return vpd83NAA(b)
	}
	return ""
}

// vpd83NAA returns the first NAA designator of a VPD 0x83 page as 0x....
func vpd83NAA(b []byte) string {
	if len(b) < 4 || b[1] != 0x83 {
		return ""
	}
	end := 4 + int(binary.BigEndian.Uint16(b[2:4]))
	if end > len(b) {
		end = len(b)
	}
	for i := 4; i+4 <= end; {
		typ := b[i+1] & 0x0f
		n := int(b[i+3])
		if i+4+n > end {
			break
		}
		if typ == 3 && n >= 8 { // NAA
			return "0x" + hex.EncodeToString(b[i+4:i+4+n])
		}
		i += 4 + n
	}
	return ""
}

func transport(name, link string, udev map[string]string) string {
	switch {
	case strings.HasPrefix(name, "nvme"):
		return "nvme"
	case strings.HasPrefix(name, "vd"):
		return "virtio"
	case strings.Contains(link, "/usb"):
		return "usb"
	case strings.Contains(link, "/ata"):
		return "sata"
	case strings.Contains(link, "/end_device-") || strings.Contains(link, "/sas_"):
		return "sas"
	case strings.Contains(link, "/virtio"):
		return "virtio-scsi"
	}
	switch udev["ID_BUS"] {
	case "ata":
		return "sata"
	case "usb":
		return "usb"
	case "scsi":
		if strings.Contains(udev["ID_PATH"], "-sas-") {
			return "sas"
		}
		return "scsi"
	}
	if strings.HasPrefix(name, "sd") {
		return "scsi"
	}
	return ""
}

// stableID picks the link a plan should name the device by: wwn-* first
// (it survives controller and cable moves), then the link that contains the
// serial, then any other; eui/nvme-nvme.* links and -partN of other disks
// never come first.
func stableID(links []string, serial string) string {
	best, bestScore := "", -1
	for _, l := range links {
		b := filepath.Base(l)
		score := 1
		switch {
		case strings.HasPrefix(b, "wwn-"):
			score = 4
		case serial != "" && strings.Contains(b, serial):
			score = 3
		case strings.HasPrefix(b, "nvme-eui.") || strings.HasPrefix(b, "nvme-nvme."):
			score = 0
		}
		if score > bestScore || (score == bestScore && l < best) {
			best, bestScore = l, score
		}
	}
	return best
}

func addUdevSignature(h *hostFS, d *Device) {
	t := d.udev["ID_FS_TYPE"]
	if t != "" && !d.HasSignature(t) {
		d.Signatures = append(d.Signatures, Signature{Type: t, Offset: -1, UUID: d.udev["ID_FS_UUID"], Label: d.udev["ID_FS_LABEL"], Source: "udev", Detail: d.udev["ID_FS_VERSION"]})
	}
	if pt := d.udev["ID_PART_TABLE_TYPE"]; pt != "" && !d.HasSignature(pt) && d.Kind == "disk" {
		d.Signatures = append(d.Signatures, Signature{Type: pt, Offset: -1, UUID: d.udev["ID_PART_TABLE_UUID"], Source: "udev"})
	}
}

// accessHint is the way out of a failed open, for a process running as
// euid: "run as root" only when not root already (issue 18: as root it
// said "(run as root)").
func accessHint(euid int, err error) string {
	switch {
	case !errors.Is(err, fs.ErrPermission):
		return ""
	case euid != 0:
		return " (run as root)"
	default:
		return " (denied even to root: a container, or a security module, keeps raw devices from this process)"
	}
}

// probeDevice opens /dev/<name> read-only and looks for signatures.
func probeDevice(d *Device) ([]Signature, error) {
	f, err := os.Open(d.Path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s to look for signatures%s: %w", d.Path, accessHint(os.Geteuid(), err), err)
	}
	defer f.Close()
	return Probe(f, d.Size, d.LogicalBlockSize)
}

// readUsage fills mounts and swap, following device-mapper/md stacks down
// to the disks and partitions they sit on.
func readUsage(ctx context.Context, h *hostFS, inv *Inventory, dmNames map[string]string, names []string) error {
	byName := map[string]*Device{}
	for _, d := range inv.All() {
		byName[d.Name] = d
	}
	nameOfDM := map[string]string{}
	for k, v := range dmNames {
		nameOfDM[v] = k
	}
	// slaves of virtual devices (dm-*, md*): what they sit on
	slaves := map[string][]string{}
	for _, n := range names {
		if strings.HasPrefix(n, "dm-") || strings.HasPrefix(n, "md") {
			slaves[n] = h.readDir("/sys/block/" + n + "/slaves")
		}
	}
	var reach func(kernel string, seen map[string]bool) []string
	reach = func(kernel string, seen map[string]bool) []string {
		if seen[kernel] {
			return nil
		}
		seen[kernel] = true
		if _, ok := byName[kernel]; ok {
			return []string{kernel}
		}
		var out []string
		for _, s := range slaves[kernel] {
			out = append(out, reach(s, seen)...)
		}
		return out
	}
	resolve := func(dev string) string { // /dev/mapper/vg0-root -> dm-0
		switch {
		case strings.HasPrefix(dev, "/dev/mapper/"):
			return nameOfDM[strings.TrimPrefix(dev, "/dev/mapper/")]
		case strings.HasPrefix(dev, "/dev/disk/"):
			if t := h.readlink(dev); t != "" {
				return filepath.Base(t)
			}
			return ""
		case strings.HasPrefix(dev, "/dev/"):
			rest := strings.TrimPrefix(dev, "/dev/")
			if vg, lv, ok := strings.Cut(rest, "/"); ok { // /dev/VG/LV
				return nameOfDM[strings.ReplaceAll(vg, "-", "--")+"-"+strings.ReplaceAll(lv, "-", "--")]
			}
			return rest
		}
		return ""
	}
	label := func(kernel string) string {
		if n := dmNames[kernel]; n != "" {
			return n
		}
		return kernel
	}
	var errs []error
	// gopsutil reads these whole: refuse a FIFO, a device or a huge file first
	for _, p := range []string{"/proc/mountinfo", "/proc/mounts", "/proc/1/mountinfo", "/proc/1/mounts", "/proc/self/mountinfo", "/proc/self/mounts", "/proc/swaps"} {
		if _, err := sysread.File(h.path(p), sysread.ReportLimit); err != nil && !errors.Is(err, fs.ErrNotExist) {
			h.refused(err)
			return fmt.Errorf("mounts and swap unknown: %w", err)
		}
	}
	penv := common.EnvMap{common.HostProcEnvKey: h.path("/proc"), common.HostSysEnvKey: h.path("/sys"),
		common.HostDevEnvKey: h.path("/dev"), common.HostProcMountinfo: h.path("/proc/mountinfo")}
	pctx := context.WithValue(ctx, common.EnvKey, penv)
	parts, err := disk.PartitionsWithContext(pctx, true)
	if err != nil {
		errs = append(errs, fmt.Errorf("mounts unknown (%s): %w", h.path("/proc/mounts"), err))
	} else {
		if h.exists("/proc/mountinfo") {
			h.note("/proc/mountinfo")
		} else {
			h.note("/proc/mounts")
		}
		for _, p := range parts {
			k := resolve(p.Device)
			if k == "" {
				continue
			}
			for _, target := range reach(k, map[string]bool{}) {
				m := p.Mountpoint
				if target != k {
					m += " (via " + label(k) + ")"
				}
				d := byName[target]
				d.Mounts = appendUnique(d.Mounts, m)
				if isSystemMount(p.Mountpoint) {
					d.systemMounts = appendUnique(d.systemMounts, m)
				}
			}
		}
	}
	swaps, err := mem.SwapDevicesWithContext(pctx)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("swap unknown (%s): %w", h.path("/proc/swaps"), err))
	} else if err == nil {
		h.note("/proc/swaps")
		for _, s := range swaps {
			k := resolve(s.Name)
			for _, target := range reach(k, map[string]bool{}) {
				byName[target].Swap = true
			}
		}
	}
	return errors.Join(errs...)
}

func isSystemMount(m string) bool {
	switch m {
	case "/", "/boot", "/boot/efi", "/usr", "/var":
		return true
	}
	return false
}

func appendUnique(ss []string, s string) []string {
	for _, x := range ss {
		if x == s {
			return ss
		}
	}
	return append(ss, s)
}

// assignRole guesses what a disk is for. The disk holding /, /boot,
// /boot/efi, /usr or /var is always "system", and so are those partitions.
func assignRole(d *Device) {
	media := RoleSSD
	switch {
	case d.Removable || d.Transport == "usb":
		media = RoleOther
	case d.Transport == "nvme":
		media = RoleNVMe
	case d.Rotational:
		media = RoleHDD
	}
	var sys []string
	sys = append(sys, d.systemMounts...)
	for _, p := range d.Partitions {
		p.Role, p.RoleWhy = media, "partition of "+d.Name
		if len(p.systemMounts) > 0 {
			p.Role, p.RoleWhy = RoleSystem, "holds "+strings.Join(p.systemMounts, ", ")
			for _, m := range p.systemMounts {
				sys = append(sys, m+" on "+p.Name)
			}
		}
	}
	switch {
	case len(sys) > 0:
		d.Role, d.RoleWhy = RoleSystem, "holds "+strings.Join(sys, ", ")
	case d.Size == 0:
		d.Role, d.RoleWhy = RoleOther, "no medium (size 0)"
	case media == RoleHDD:
		d.Role, d.RoleWhy = RoleHDD, "rotational"
	case media == RoleNVMe:
		d.Role, d.RoleWhy = RoleNVMe, "NVMe, non-rotational"
	case media == RoleOther:
		d.Role, d.RoleWhy = RoleOther, "removable/USB"
	default:
		d.Role, d.RoleWhy = RoleSSD, "non-rotational, not NVMe"
	}
}

// Fingerprint is a hash of what identifies the machine's disks: name,
// serial, WWN, size and block sizes of every disk and partition. Two
// inventories of an unchanged machine have the same fingerprint.
func Fingerprint(inv *Inventory) string { return FingerprintRenamed(inv, nil) }

// FingerprintRenamed is the fingerprint inv would have if its devices had
// the kernel names rename gives (current name -> name; the others keep
// theirs), disks and each disk's partitions in the order of those names as
// /sys/block lists them. After a reboot that reordered the kernel names
// (sdb and sdc swapped), the names at planning time give the planning
// time's fingerprint back when nothing else changed.
func FingerprintRenamed(inv *Inventory, rename map[string]string) string {
	name := func(d *Device) string {
		if n, ok := rename[d.Name]; ok {
			return n
		}
		return d.Name
	}
	byName := func(ds []*Device) []*Device {
		out := append([]*Device(nil), ds...)
		if len(rename) > 0 {
			sort.SliceStable(out, func(i, j int) bool { return name(out[i]) < name(out[j]) })
		}
		return out
	}
	s := sha256.New()
	for _, disk := range byName(inv.Disks) {
		for _, d := range append([]*Device{disk}, byName(disk.Partitions)...) {
			fmt.Fprintf(s, "%s|%s|%s|%d|%d|%d|%d\n", name(d), d.Serial, d.WWN, d.Size, d.Start, d.LogicalBlockSize, d.PhysicalBlockSize)
		}
	}
	return "sha256:" + hex.EncodeToString(s.Sum(nil))[:32]
}
