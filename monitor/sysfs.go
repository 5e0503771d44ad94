package monitor

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/tbhost/tbhost/internal/blockdev"
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
}

// ReadSysBlock reads root/sys/block: every device's dm/name, dm/uuid and
// slaves, and the partitions of every disk (so a PV on sda1 resolves to sda).
func ReadSysBlock(root string) (*SysBlock, error) {
	dir := filepath.Join(root, "sys", "block")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w (is --root right? a fixture tree needs sys/block)", dir, err)
	}
	sb := &SysBlock{Devs: map[string]*BlockDev{}, byDMName: map[string]string{}}
	for _, e := range entries {
		name := e.Name()
		d := &BlockDev{Name: name}
		devDir := filepath.Join(dir, name)
		d.DMName = readTrim(filepath.Join(devDir, "dm", "name"))
		d.DMUUID = readTrim(filepath.Join(devDir, "dm", "uuid"))
		if slaves, err := os.ReadDir(filepath.Join(devDir, "slaves")); err == nil {
			for _, s := range slaves {
				d.Slaves = append(d.Slaves, s.Name())
			}
			sort.Strings(d.Slaves)
		}
		sb.Devs[name] = d
		if d.DMName != "" {
			sb.byDMName[d.DMName] = name
		}
		// partitions are subdirectories holding a "partition" file
		subs, err := os.ReadDir(devDir)
		if err != nil {
			continue
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
func DMName(vg, lv string) string {
	return strings.ReplaceAll(vg, "-", "--") + "-" + strings.ReplaceAll(lv, "-", "--")
}

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
	Level        string
	RaidDisks    int
	Degraded     int
	ArrayState   string
	SyncAction   string
	SyncProgress float64 // 0..1, -1 when idle
	MismatchCnt  int64
	Members      map[string]string // kernel name -> state (in_sync, faulty, spare, ...)
}

func readMD(root, name string) (mdInfo, bool) {
	dir := filepath.Join(root, "sys", "block", name, "md")
	if _, err := os.Stat(dir); err != nil {
		return mdInfo{}, false
	}
	m := mdInfo{
		Level:        readTrim(filepath.Join(dir, "level")),
		RaidDisks:    atoiOr(readTrim(filepath.Join(dir, "raid_disks")), -1),
		Degraded:     atoiOr(readTrim(filepath.Join(dir, "degraded")), 0),
		ArrayState:   readTrim(filepath.Join(dir, "array_state")),
		SyncAction:   readTrim(filepath.Join(dir, "sync_action")),
		SyncProgress: -1,
		MismatchCnt:  int64(atoiOr(readTrim(filepath.Join(dir, "mismatch_cnt")), 0)),
		Members:      map[string]string{},
	}
	if sc := readTrim(filepath.Join(dir, "sync_completed")); sc != "" && sc != "none" {
		var done, total float64
		if _, err := fmt.Sscanf(sc, "%g / %g", &done, &total); err == nil && total > 0 {
			m.SyncProgress = done / total
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "dev-") {
			continue
		}
		m.Members[strings.TrimPrefix(e.Name(), "dev-")] = readTrim(filepath.Join(dir, e.Name(), "state"))
	}
	return m, true
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return def
	}
	return n
}
