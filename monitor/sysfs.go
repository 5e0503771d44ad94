package monitor

import (
	"errors"
	"fmt"
	"github.com/tbhost/tbhost/lvm"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/sysread"
)

// BlockDev is what sysfs says about one block device (a disk, a partition,
// a dm-N or an mdN).
type BlockDev struct {
	Name   string   // kernel name: sda, sda1, dm-3, md0, nvme0n1
	DMName string   // dm/name: vg--hdd-tables_rimage_0 ("" when not device-mapper)
	DMUUID string   // dm/uuid: LVM-...
	Slaves []string // kernel names of the devices this one sits on
	Parent string   // for a partition: its disk (sda for sda1)
}

// SysBlock is a snapshot of /sys/block (and the partitions under it),
// read under a root directory.
type SysBlock struct {
	Devs map[string]*BlockDev
	// byDMName maps dm/name to the kernel name (vg--hdd-tables -> dm-24).
	byDMName map[string]string
	md       map[string]mdInfo // md arrays' md/ directories, by kernel name
}

// readMD returns what was read of name's md/ directory (ok false: none).
func (sb *SysBlock) readMD(name string) (mdInfo, bool) {
	m, ok := sb.md[name]
	return m, ok
}

// ReadSysBlock reads root/sys/block: every device's dm/name, dm/uuid and
// slaves, the partitions of every disk (so a PV on sda1 resolves to sda),
// and the md/ attributes of md arrays. Every read is bounded
// (internal/sysread): a FIFO, a device or a huge file in place of an
// attribute, or an md attribute out of range, is an error naming the file.
func ReadSysBlock(root string) (*SysBlock, error) {
	dir := filepath.Join(root, "sys", "block")
	entries, err := sysread.Dir(dir, sysread.DirLimit)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w (is --root right? a fixture tree needs sys/block)", dir, err)
	}
	sb := &SysBlock{Devs: map[string]*BlockDev{}, byDMName: map[string]string{}, md: map[string]mdInfo{}}
	for _, e := range entries {
		name := e.Name()
		d := &BlockDev{Name: name}
		devDir := filepath.Join(dir, name)
		if d.DMName, err = sysread.OptionalAttr(filepath.Join(devDir, "dm", "name")); err != nil {
			return nil, err
		}
		if d.DMUUID, err = sysread.OptionalAttr(filepath.Join(devDir, "dm", "uuid")); err != nil {
			return nil, err
		}
		slaves, err := optionalDir(filepath.Join(devDir, "slaves"))
		if err != nil {
			return nil, err
		}
		for _, s := range slaves {
			d.Slaves = append(d.Slaves, s.Name())
		}
		sb.Devs[name] = d
		if d.DMName != "" {
			sb.byDMName[d.DMName] = name
		}
		if md, ok, err := readMD(root, name); err != nil {
			return nil, err
		} else if ok {
			sb.md[name] = md
		}
		// partitions are subdirectories holding a "partition" file
		subs, err := optionalDir(devDir)
		if err != nil {
			return nil, err
		}
		for _, s := range subs {
			if !strings.HasPrefix(s.Name(), name) {
				continue
			}
			if _, err := os.Stat(filepath.Join(devDir, s.Name(), "partition")); err == nil {
				sb.Devs[s.Name()] = &BlockDev{Name: s.Name(), Parent: name}
			}
		}
	}
	return sb, nil
}

// optionalDir lists a sysfs directory, bounded; a missing one (or a file:
// sys/block/X may be a plain file in a hand-made tree) is empty.
func optionalDir(path string) ([]fs.DirEntry, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || err == nil && fi.Mode().IsRegular() {
		return nil, nil
	}
	return sysread.Dir(path, sysread.DirLimit)
}

// ByDMName returns the kernel name of the dm device called name.
func (sb *SysBlock) ByDMName(name string) (string, bool) {
	k, ok := sb.byDMName[name]
	return k, ok
}

// Leaves follows slaves from dev down to devices that sit on nothing
// (disks, partitions): dm-3 -> dm-2 -> sda. Sorted, without duplicates.
func (sb *SysBlock) Leaves(dev string) []string {
	seen := map[string]bool{}
	var out []string
	var walk func(string, int)
	walk = func(n string, depth int) {
		if depth > 32 || seen[n] {
			return
		}
		seen[n] = true
		d, ok := sb.Devs[n]
		if !ok || len(d.Slaves) == 0 {
			if !strings.HasPrefix(n, "dm-") { // a dm device with no slaves (error target) is no disk
				out = append(out, n)
			}
			return
		}
		for _, s := range d.Slaves {
			walk(s, depth+1)
		}
	}
	walk(dev, 0)
	sort.Strings(out)
	return out
}

// Disk returns the whole disk a leaf belongs to (sda for sda1, itself otherwise).
func (sb *SysBlock) Disk(name string) string {
	if d, ok := sb.Devs[name]; ok && d.Parent != "" {
		return d.Parent
	}
	return name
}

// DMName mangles an LVM vg/lv pair the way device-mapper names it:
// every "-" doubled, joined with "-": vg-hdd/tables -> vg--hdd-tables.
func DMName(vg, lv string) string { return lvm.DMName(vg, lv) }

// SplitDMName undoes DMName: vg--hdd-tables_rimage_0 -> vg-hdd, tables_rimage_0.
func SplitDMName(name string) (vg, lv string, ok bool) {
	for i := 0; i < len(name); i++ {
		if name[i] != '-' {
			continue
		}
		if i+1 < len(name) && name[i+1] == '-' {
			i++
			continue
		}
		return strings.ReplaceAll(name[:i], "--", "-"), strings.ReplaceAll(name[i+1:], "--", "-"), true
	}
	return "", "", false
}

// StableID returns the name of the /dev/disk/by-id link (under root) that
// tbhost names the disk by ("wwn-0x5000c500a1b2c301"), "" when there is none.
// The rule is internal/blockdev's, the one `tbhost inventory` and
// `tbhost lvm plan` use (wwn- first, then the link holding the serial), so
// monitor output names a disk the way the plan that built the array did.
func StableID(root, disk string) string {
	id := blockdev.StableIDUnder(root, disk)
	if id == "" {
		return ""
	}
	return filepath.Base(id)
}

// mdInfo is what /sys/block/mdN/md says about a Linux md array.
type mdInfo struct {
	Dir       string // the md/ directory read (under --root), to name its files
	Level     string
	RaidDisks int // -1 when md/raid_disks is missing
	Degraded  int
	// HasDegraded: md/degraded was there (the kernel has it for the
	// redundant levels only; raid0 and linear have none).
	HasDegraded  bool
	ArrayState   string
	SyncAction   string
	SyncProgress float64 // 0..1, -1 when idle
	MismatchCnt  int64
	Members      map[string]string // kernel name -> state (in_sync, faulty, spare, ...)
}

// Ranges of md attributes: the kernel's md supports at most 1920 devices
// in an array (v1.x superblock); mismatch_cnt counts sectors.
const (
	maxMDDisks   = 1920
	maxMismatch  = 1 << 62
	maxMDMembers = maxMDDisks * 2 // members plus spares and replacements
)

// mdAttrs are the md/ attribute files readMD reads.
var mdAttrs = []string{"level", "raid_disks", "degraded", "array_state", "sync_action", "sync_completed", "mismatch_cnt"}

// readMD reads root/sys/block/NAME/md: ok is false when there is none.
func readMD(root, name string) (mdInfo, bool, error) {
	dir := filepath.Join(root, "sys", "block", name, "md")
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return mdInfo{}, false, nil
	}
	attrs := map[string]string{}
	for _, a := range mdAttrs {
		v, err := sysread.OptionalAttr(filepath.Join(dir, a))
		if err != nil {
			return mdInfo{}, false, err
		}
		if v != "" {
			attrs[a] = v
		}
	}
	entries, err := sysread.Dir(dir, maxMDMembers+len(mdAttrs)+64)
	if err != nil {
		return mdInfo{}, false, err
	}
	members := map[string]string{}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "dev-") {
			continue
		}
		st, err := sysread.OptionalAttr(filepath.Join(dir, e.Name(), "state"))
		if err != nil {
			return mdInfo{}, false, err
		}
		members[strings.TrimPrefix(e.Name(), "dev-")] = st
	}
	m, err := parseMD(dir, attrs, members)
	if err != nil {
		return mdInfo{}, false, err
	}
	return m, true, nil
}

// parseMD validates the md/ attributes (name -> trimmed content, absent
// when the file is missing) and member states read from dir: numbers must
// be in range (degraded <= raid_disks <= 1920, sync_completed "done /
// total" with done <= total), errors name the file.
func parseMD(dir string, attrs, members map[string]string) (mdInfo, error) {
	m := mdInfo{
		Dir:          dir,
		Level:        attrs["level"],
		RaidDisks:    -1,
		ArrayState:   attrs["array_state"],
		SyncAction:   attrs["sync_action"],
		SyncProgress: -1,
		Members:      members,
	}
	if m.Members == nil {
		m.Members = map[string]string{}
	}
	if len(m.Members) > maxMDMembers {
		return m, fmt.Errorf("%s: %d dev-* members, at most %d (fix the --root tree)", dir, len(m.Members), maxMDMembers)
	}
	num := func(name string, min, max int64) (int64, bool, error) {
		s, ok := attrs[name]
		if !ok {
			return 0, false, nil
		}
		v, err := sysread.ParseInt(filepath.Join(dir, name), s, min, max)
		if err != nil {
			return 0, false, fmt.Errorf("%w (fix the --root tree)", err)
		}
		return v, true, nil
	}
	if v, ok, err := num("raid_disks", 0, maxMDDisks); err != nil {
		return m, err
	} else if ok {
		m.RaidDisks = int(v)
	}
	maxDegraded := int64(maxMDDisks)
	if m.RaidDisks >= 0 {
		maxDegraded = int64(m.RaidDisks)
	}
	if v, ok, err := num("degraded", 0, maxDegraded); err != nil {
		return m, fmt.Errorf("%w; degraded counts missing devices, at most raid_disks", err)
	} else {
		m.Degraded, m.HasDegraded = int(v), ok
	}
	if v, _, err := num("mismatch_cnt", 0, maxMismatch); err != nil {
		return m, err
	} else {
		m.MismatchCnt = v
	}
	if sc, ok := attrs["sync_completed"]; ok && sc != "none" && sc != "delayed" {
		p, err := syncProgress(sc)
		if err != nil {
			return m, fmt.Errorf("%s: %w (fix the --root tree)", filepath.Join(dir, "sync_completed"), err)
		}
		m.SyncProgress = p
	}
	return m, nil
}

// syncProgress parses md's sync_completed, "DONE / TOTAL" in sectors.
func syncProgress(s string) (float64, error) {
	a, b, ok := strings.Cut(s, "/")
	if !ok {
		return 0, fmt.Errorf("%q is not \"done / total\"", s)
	}
	done, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 64)
	total, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 64)
	if err1 != nil || err2 != nil || total == 0 || done > total {
		return 0, fmt.Errorf("%q is not \"done / total\" with done <= total", s)
	}
	return float64(done) / float64(total), nil
}

func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return def
	}
	return n
}
