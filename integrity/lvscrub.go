package integrity

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/diskstats"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/sysread"
	"github.com/tbhost/tbhost/lvm"
)

// DMName is the device-mapper name LVM gives vg/lv: dashes in each part
// doubled, the parts joined by one dash ("vg-hdd", "tables_rimage_0" ->
// "vg--hdd-tables_rimage_0").
func DMName(vg, lv string) string { return lvm.DMName(vg, lv) }

// ErrNothingToScrub marks LVs a scrub refuses: no redundancy or no integrity layer.
var ErrNothingToScrub = errors.New("nothing to scrub")

// ErrDegraded marks a RAID LV with a missing or failed member: a scrub would
// read every block of the failed image (each one an I/O error) and rebuild
// through the survivors; it is refused until the member is replaced.
var ErrDegraded = errors.New("array degraded")

// LVScrubPlan is what a scrub of one RAID LV reads.
type LVScrubPlan struct {
	LV        string        `json:"lv"`
	UUID      string        `json:"uuid"`
	SegType   string        `json:"segtype"`
	Device    string        `json:"device"` // the top LV's /dev/mapper path
	BlockSize int64         `json:"block_size"`
	Stripes   int           `json:"stripes"`      // devices, parity included
	Data      int           `json:"data_stripes"` // data devices
	Chunk     int64         `json:"stripe_size"`
	ImageSize int64         `json:"image_size"`
	LVSize    int64         `json:"lv_size"`
	Targets   []ScrubTarget `json:"targets"`
}

// PlanLVScrub finds the dm-integrity device of every image of vg/name.
// devRoot is "/" or a fixture root under which /dev/mapper is looked up.
func PlanLVScrub(all []lvm.LV, vg, name, devRoot string) (LVScrubPlan, error) {
	top, ok := lvm.Find(all, vg, name)
	if !ok {
		return LVScrubPlan{}, fmt.Errorf("%s/%s: no such LV in the report (see lvs -a)", vg, name)
	}
	p := LVScrubPlan{LV: top.FullName(), UUID: top.UUID, SegType: top.SegType(), LVSize: top.Size,
		Device: filepath.Join(devRoot, "dev/mapper", DMName(vg, name))}
	if !strings.HasPrefix(p.SegType, "raid") || p.SegType == "raid0" || p.SegType == "raid0_meta" {
		return p, fmt.Errorf("%s is %s, not a RAID level with redundancy and dm-integrity: %w", p.LV, p.SegType, ErrNothingToScrub)
	}
	if len(top.Segments) > 0 {
		s := top.Segments[0]
		p.Stripes, p.Data, p.Chunk = s.Stripes, s.DataStripes, s.StripeSize
	}
	p.BlockSize = 4096
	if top.IntegrityBlockSize > 0 {
		p.BlockSize = int64(top.IntegrityBlockSize)
	}
	if len(top.Attr) >= 5 && top.Attr[4] != 'a' {
		return p, fmt.Errorf("%s is not active (attr %s): activate it with lvchange -ay %s", p.LV, top.Attr, p.LV)
	}
	if degraded := degradedBy(all, top); degraded != "" {
		return p, fmt.Errorf("%s is degraded (%s): not scrubbing until the failed member is replaced (see tbhost lvm status %s; docs/lvm.md): %w",
			p.LV, degraded, p.LV, ErrDegraded)
	}
	for _, f := range lvm.AssessArray(all, top).Findings {
		if f.Code == lvm.CodeLVMUnreadable { // an image the array names is left out: scrubbing the rest would skip it
			return p, fmt.Errorf("%s; not scrubbing from it (%s)", f.Text, f.Advice)
		}
	}
	images := lvm.SubLVs(all, top, "rimage")
	if len(images) == 0 {
		return p, fmt.Errorf("%s: no _rimage_N sub-LVs in the report", p.LV)
	}
	for _, img := range images {
		if img.SegType() != "integrity" {
			return p, fmt.Errorf("%s has no dm-integrity layer (segtype %s): reading it verifies nothing; use --syncaction, or add integrity with lvconvert --raidintegrity y %s: %w",
				img.FullName(), img.SegType(), p.LV, ErrNothingToScrub)
		}
		t := ScrubTarget{Name: img.Name, Path: filepath.Join(devRoot, "dev/mapper", DMName(vg, img.Name)), Disks: lvm.PhysicalDevices(all, img)}
		if _, err := os.Stat(t.Path); err != nil {
			return p, fmt.Errorf("%s: its device %s: %w (is the LV active? lvchange -ay %s)", img.FullName(), t.Path, err, p.LV)
		}
		if p.ImageSize == 0 {
			p.ImageSize = img.Size
		}
		p.Targets = append(p.Targets, t)
	}
	return p, nil
}

// degradedBy says why top has a missing or failed member ("" when it has
// none), from lvm.AssessArray's findings: LVM marks such an LV partial in
// lv_attr and lv_health_status, and an image on a vanished PV shows the
// device "[unknown]".
func degradedBy(all []lvm.LV, top lvm.LV) string {
	h := lvm.AssessArray(all, top)
	var first lvm.Finding
	found := false
	for _, f := range h.All() {
		if !f.Degrading() {
			continue
		}
		if f.Code == lvm.CodeRAIDDegraded && f.Image == "" && f.Field == "lv_attr" {
			return "attr " + top.Attr + ": partial, a PV is missing"
		}
		if !found {
			first, found = f, true
		}
	}
	switch {
	case !found:
		return ""
	case first.Image != "":
		return first.Image + " is on a missing PV"
	case first.Code == lvm.CodeRAIDDegraded:
		return "health partial"
	}
	return string(first.Code)
}

// MapToLV maps an offset on image idx to the top LV, for the layouts
// whose mapping is known: raid1 (identical) and raid5 left-symmetric
// (LVM's "raid5", md's algorithm 2). parity reports a raid5 parity block,
// which no LV read touches. ok=false: unknown layout.
func (p LVScrubPlan) MapToLV(idx int, off int64) (lvOff int64, parity, ok bool) {
	switch p.SegType {
	case "raid1":
		return off, false, true
	case "raid5", "raid5_ls":
		n := int64(p.Stripes)
		if n < 3 || p.Chunk <= 0 || int64(p.Data) != n-1 || p.LVSize != p.ImageSize*(n-1) {
			return 0, false, false // reshape space or an odd geometry: do not guess
		}
		stripe := off / p.Chunk
		pd := (n - 1) - stripe%n
		d := int64(idx)
		if d == pd {
			return 0, true, true
		}
		dd := (d - pd - 1 + n) % n
		return (stripe*(n-1)+dd)*p.Chunk + off%p.Chunk, false, true
	}
	return 0, false, false
}

// BadBlock is one unreadable block a scrub found, and what became of it.
type BadBlock struct {
	Image       string   `json:"image"`
	Disks       []string `json:"disks"`
	ImageOffset int64    `json:"image_offset"`
	LVOffset    int64    `json:"lv_offset"` // -1: parity or unknown layout
	Parity      bool     `json:"parity"`
	// Repaired: reading the LV there made the RAID layer rebuild the block
	// from the other images and rewrite it, and the image now reads clean.
	Repaired bool   `json:"repaired"`
	Note     string `json:"note,omitempty"`
}

// RepairByReading reads each data block found bad through the top LV, so
// that the RAID layer rebuilds it from parity/mirror and rewrites it (md's
// read-error correction), then re-reads the image block to confirm. It only
// reads. Parity blocks and unknown layouts are left for --syncaction check.
func RepairByReading(p LVScrubPlan, res ScrubResult, direct bool) []BadBlock {
	var out []BadBlock
	for idx, im := range res.Images {
		for _, off := range SortedBad(im.BadBlocks) {
			b := BadBlock{Image: im.Name, Disks: im.Disks, ImageOffset: off, LVOffset: -1}
			lvOff, parity, ok := p.MapToLV(idx, off)
			switch {
			case !ok:
				b.Note = fmt.Sprintf("layout %s not mapped: run tbhost integrity scrub --syncaction %s to let the RAID layer rewrite it", p.SegType, p.LV)
			case parity:
				b.Parity = true
				b.Note = "parity block: no LV read touches it; run tbhost integrity scrub --syncaction " + p.LV
			default:
				b.LVOffset = lvOff
				if err := readBlock(p.Device, lvOff, p.BlockSize, direct); err != nil {
					b.Note = fmt.Sprintf("reading the LV at %d failed too (%v): the data is lost in this stripe; restore the file from a copy", lvOff, err)
				} else if err := rereadAfterRewrite(im.Path, off, p.BlockSize, direct); err != nil {
					b.Note = fmt.Sprintf("the LV read fine but the image block still fails (%s): run --syncaction check", describeReadError(err))
				} else {
					b.Repaired = true
				}
			}
			out = append(out, b)
		}
	}
	return out
}

// rereadAfterRewrite re-reads an image block after an LV read: md hands the
// rebuilt data to the reader before its rewrite of the bad block lands (the
// lab saw one of 16 blocks still failing right away), so allow it a moment.
func rereadAfterRewrite(path string, off, size int64, direct bool) error {
	var err error
	for i := 0; i < 20; i++ {
		if err = readBlock(path, off, size, direct); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

func readBlock(path string, off, size int64, direct bool) error {
	f, _, _, err := openScrub(path, direct)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = readFull(f, alignedBuffer(size), off)
	return err
}

// KernelLog runs dmesg and returns its lines; an error (not root, no dmesg)
// is returned for the report to mention.
func KernelLog(ctx context.Context, r execx.Runner) ([]string, error) {
	res, err := r.Run(ctx, "dmesg")
	if err != nil {
		return nil, fmt.Errorf("kernel log not readable (run as root to include it): %w", err)
	}
	return strings.Split(strings.TrimRight(string(res.Stdout), "\n"), "\n"), nil
}

// NewKernelLines returns the lines of after that were not in before and
// concern integrity or RAID: dm-integrity checksum failures, md read-error
// corrections, lines naming one of the devices (dm-3, sdc).
func NewKernelLines(before, after []string, devices []string) []string {
	seen := map[string]int{}
	for _, l := range before {
		seen[l]++
	}
	var out []string
	for _, l := range after {
		if seen[l] > 0 {
			seen[l]--
			continue
		}
		if relevantKernelLine(l, devices) {
			out = append(out, l)
		}
	}
	return out
}

func relevantKernelLine(l string, devices []string) bool {
	low := strings.ToLower(l)
	for _, k := range []string{"checksum failed", "integrity", "read error", "md/raid", "raid5", "i/o error"} {
		if strings.Contains(low, k) {
			return true
		}
	}
	for _, d := range devices {
		if d != "" && (strings.Contains(l, d+":") || strings.Contains(l, d+" ")) {
			return true
		}
	}
	return false
}

// LVScrubOptions: scrub one RAID LV through its images.
type LVScrubOptions struct {
	VG, LV string
	Root   string // "/" or a fixture root: /dev/mapper, /proc and /sys are read under it
	Runner execx.Runner
	// Scrub carries rate, budget, state, chunk, parallelism, events;
	// Targets, Identity, BlockSize and Stats are filled in from the LV.
	Scrub ScrubOptions
	// NoBackoff leaves the rate fixed (no diskstats sampling).
	NoBackoff bool
	// RepairReads re-reads bad data blocks through the LV so the RAID layer
	// rewrites them (see RepairByReading).
	RepairReads bool
}

// ImageCounters are an image's integrity counter before and after the scrub.
type ImageCounters struct {
	Name      string   `json:"name"`
	Disks     []string `json:"disks"`
	Before    int64    `json:"mismatches_before"`
	After     int64    `json:"mismatches_after"`
	BadBlocks int      `json:"unreadable_blocks"`
}

// LVScrubReport is the outcome of ScrubLV.
type LVScrubReport struct {
	Plan              LVScrubPlan     `json:"plan"`
	Result            ScrubResult     `json:"result"`
	Images            []ImageCounters `json:"images"`
	BadBlocks         []BadBlock      `json:"bad_blocks"`
	KernelLines       []string        `json:"kernel_log"`
	RaidMismatchCount int64           `json:"raid_mismatch_count"`
	Notes             []string        `json:"notes,omitempty"`
	Problems          []string        `json:"problems,omitempty"`
}

// ScrubLV plans, runs and reports a scrub of vg/lv. Findings go in the
// report's Problems; an error means the scrub could not run (or stopped on
// an error, with the partial report).
func ScrubLV(ctx context.Context, o LVScrubOptions) (LVScrubReport, error) {
	var rep LVScrubReport
	client := lvm.Client{Runner: o.Runner}
	name := o.VG + "/" + o.LV
	// the whole VG: `lvs -a VG/LV` omits the LV's hidden sub-LVs
	all, err := client.LVs(ctx, o.VG)
	if err != nil {
		return rep, fmt.Errorf("scrub %s: %w", name, err)
	}
	plan, err := PlanLVScrub(all, o.VG, o.LV, o.Root)
	rep.Plan = plan
	if err != nil {
		return rep, err
	}
	before := countersByImage(all, o.VG, o.LV)
	logBefore, logErr := KernelLog(ctx, o.Runner)
	if logErr != nil {
		rep.Notes = append(rep.Notes, logErr.Error())
	}

	nameDisks(ctx, o.Root, plan.Targets)
	so := o.Scrub
	so.Targets, so.Identity = plan.Targets, plan.UUID
	if so.Identity == "" {
		so.Identity = plan.LV
	}
	if so.BlockSize == 0 {
		so.BlockSize = plan.BlockSize
		if so.BlockSize < 512 {
			so.BlockSize = 512
		}
	}
	if so.Foreground == "" {
		so.Foreground, so.ForegroundName = foregroundDevice(o.Root, all, o.VG, o.LV), plan.LV
	}
	if !o.NoBackoff && so.Rate > 0 && so.Stats == nil {
		src, err := diskstats.NewProcSource(o.Root, so.Clock)
		if err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("backoff disabled: %v", err))
		} else {
			so.Stats = src
		}
	}
	res, scrubErr := Scrub(ctx, so)
	rep.Result = res
	if scrubErr != nil && !errors.Is(scrubErr, ErrStateNotWritten) {
		return rep, scrubErr
	}
	// a state that could not be written: the bad blocks found are still
	// read through the LV and reported, and scrubErr returned with them
	if o.RepairReads && res.BadBlockCount() > 0 {
		rep.BadBlocks = RepairByReading(plan, res, so.Direct)
	} else {
		for _, im := range res.Images {
			for _, off := range SortedBad(im.BadBlocks) {
				rep.BadBlocks = append(rep.BadBlocks, BadBlock{Image: im.Name, Disks: im.Disks, ImageOffset: off, LVOffset: -1})
			}
		}
	}
	// Counters after: a fresh report (a context that outlives an interrupt).
	afterCtx := context.WithoutCancel(ctx)
	allAfter, err := client.LVs(afterCtx, o.VG)
	if err != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("counters after the scrub not read: %v", err))
		allAfter = all
	}
	after := countersByImage(allAfter, o.VG, o.LV)
	if top, ok := lvm.Find(allAfter, o.VG, o.LV); ok {
		rep.RaidMismatchCount = top.RaidMismatchCount
	}
	if logErr == nil {
		if logAfter, err := KernelLog(afterCtx, o.Runner); err == nil {
			var devs []string
			for _, img := range lvm.SubLVs(allAfter, mustFind(allAfter, o.VG, o.LV), "rimage") {
				if img.KernelMinor >= 0 {
					devs = append(devs, fmt.Sprintf("dm-%d", img.KernelMinor))
				}
			}
			for _, t := range plan.Targets {
				for _, d := range t.Disks {
					devs = append(devs, filepath.Base(d))
				}
			}
			rep.KernelLines = NewKernelLines(logBefore, logAfter, devs)
		}
	}
	for i, t := range plan.Targets {
		c := ImageCounters{Name: t.Name, Disks: t.Disks, Before: before[t.Name], After: after[t.Name]}
		if i < len(res.Images) {
			c.BadBlocks = len(res.Images[i].BadBlocks)
		}
		rep.Images = append(rep.Images, c)
		on := t.DiskLabel()
		if c.BadBlocks > 0 {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s/%s on %s: %d unreadable blocks (dm-integrity checksum mismatches) this pass", o.VG, t.Name, on, c.BadBlocks))
		}
		if c.After > c.Before {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s/%s on %s: integrity mismatches %d -> %d during the scrub", o.VG, t.Name, on, c.Before, c.After))
		} else if c.After > 0 && c.BadBlocks == 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s/%s on %s: %d integrity mismatches counted before this run (the counter resets on reactivation)", o.VG, t.Name, on, c.After))
		}
	}
	return rep, scrubErr
}

// nameDisks fills in the serial of the disk under every target's PVs, from
// the block device inventory under root (sysfs, udev, /dev/disk/by-id), so
// that every line about an image names its disk the way the operator finds
// it in the machine. Unknown serials stay unknown: the names are for
// messages, the scrub does not depend on them.
func nameDisks(ctx context.Context, root string, targets []ScrubTarget) {
	inv, err := blockdev.Read(ctx, blockdev.Options{Root: root})
	if err != nil {
		return
	}
	for i := range targets {
		t := &targets[i]
		serials := make([]string, len(t.Disks))
		known := false
		for j, pv := range t.Disks {
			d := inv.Find(pv)
			if d != nil && d.Kind == "part" && d.Parent != "" {
				d = inv.Find(d.Parent)
			}
			if d != nil && d.Serial != "" {
				serials[j], known = d.Serial, true
			}
		}
		if known {
			t.Serials = serials
		}
	}
}

// foregroundDevice is the kernel name (dm-27) of vg/lv's own device, whose
// reads in /proc/diskstats are the foreground's: from sysfs under root
// (dm/name), else lvs' kernel minor; "" when neither says.
func foregroundDevice(root string, all []lvm.LV, vg, lv string) string {
	want := DMName(vg, lv)
	if ents, err := os.ReadDir(filepath.Join(root, "sys/block")); err == nil {
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), "dm-") {
				continue
			}
			b, err := sysread.File(filepath.Join(root, "sys/block", e.Name(), "dm/name"), 4096)
			if err == nil && strings.TrimSpace(string(b)) == want {
				return e.Name()
			}
		}
	}
	if top, ok := lvm.Find(all, vg, lv); ok && top.KernelMinor >= 0 && top.KernelMajor >= 0 {
		return fmt.Sprintf("dm-%d", top.KernelMinor)
	}
	return ""
}

func mustFind(all []lvm.LV, vg, name string) lvm.LV {
	lv, _ := lvm.Find(all, vg, name)
	return lv
}

func countersByImage(all []lvm.LV, vg, name string) map[string]int64 {
	out := map[string]int64{}
	top, ok := lvm.Find(all, vg, name)
	if !ok {
		return out
	}
	for _, img := range lvm.SubLVs(all, top, "rimage") {
		out[img.Name] = img.IntegrityMismatches
	}
	return out
}
