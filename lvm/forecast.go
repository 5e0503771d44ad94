package lvm

import (
	"fmt"
	"strings"

	"github.com/tbhost/tbhost/internal/capacity"
	"github.com/tbhost/tbhost/internal/sizes"
	"github.com/tbhost/tbhost/internal/timeline"
)

// lvm2's default stripe size for raid0 and raid5 (lvcreate -I): what
// mkfs.xfs reads as the stripe unit of the LV.
const defaultStripeSize = 64 << 10

// FilesystemCapacity is what the filesystem tbhost makes on an array holds.
type FilesystemCapacity struct {
	Array string         `json:"array" yaml:"array"` // VG/LV
	Role  string         `json:"role" yaml:"role"`
	Mkfs  []string       `json:"mkfs" yaml:"mkfs"` // the options tbhost passes
	Why   string         `json:"why" yaml:"why"`
	Usage capacity.Usage `json:"usage" yaml:"usage"`
}

// ForecastOptions are the rates lvm plan's TIMELINE assumes; zero fields
// take timeline.Defaults.
type ForecastOptions struct {
	Rates timeline.Rates
	// AllowPartialSet accepts a --tables-size too small for the full 3-7
	// set (the operator serves a smaller set on purpose); without it
	// AddForecast refuses such a plan.
	AllowPartialSet bool
}

// AddForecast adds to the plan what the filesystems tbhost makes will hold,
// whether the full 3-7 set and its prefix store fit, and the TIMELINE of the
// long steps. It adds a warning for every set that does not fit and for a
// scrub pass longer than timeline.TargetScrubNights. A tables array sized
// by --tables-size whose filesystem cannot hold the full set is refused
// (a *RefusedError naming the smallest size that fits) unless
// o.AllowPartialSet: the operator chose the size, so a size that leaves the
// set out is a mistake to stop, not a fact of the hardware to report.
func (p *Plan) AddForecast(o ForecastOptions) error {
	if p.Summary == nil {
		p.Summary = &PlanCapacity{}
	}
	set := capacity.FullSet()
	p.Summary.Set = &set
	var host timeline.Host
	host.TablesBytes, host.PrefixBytes = set.Bytes, set.PrefixBytes
	var refused []string
	for _, a := range p.Arrays {
		role := capacity.Role(a.Role)
		if role != capacity.RoleTables && role != capacity.RolePrefix {
			continue
		}
		fsTypes := []string{"ext4", "xfs"}
		if a.Filesystem != nil {
			fsTypes = []string{a.Filesystem.Type}
		}
		need, what := capacity.Need(set.Files, set.Bytes, 4096), "tables "+set.Name
		if role == capacity.RolePrefix {
			need, what = capacity.Need(set.Files, set.PrefixBytes, 4096), "prefix store "+set.Name
		}
		for _, fs := range fsTypes {
			choice, err := capacity.Choose(role, fs)
			if err != nil {
				return fmt.Errorf("%s/%s: %w", a.VG, a.LV, err)
			}
			args, _ := capacity.MkfsArgs(role, fs)
			stripe := capacity.XFSOptions{}
			if a.DataStripes > 1 {
				stripe = capacity.XFSOptions{StripeUnit: defaultStripeSize, StripeWidth: int64(a.DataStripes) * defaultStripeSize}
			}
			u, err := capacity.Usable(role, fs, a.Size, stripe)
			if err != nil {
				// too small for that filesystem: say so, plan on
				p.Warnings = append(p.Warnings, fmt.Sprintf("%s/%s: %v", a.VG, a.LV, err))
				continue
			}
			p.Summary.Filesystems = append(p.Summary.Filesystems, FilesystemCapacity{
				Array: a.VG + "/" + a.LV, Role: a.Role, Mkfs: args, Why: choice.Why, Usage: u})
			f := capacity.Check(what+" on "+fs, need, u.Available)
			p.Summary.Fits = append(p.Summary.Fits, f)
			if !f.Fits && role == capacity.RoleTables && a.RequestedSize > 0 {
				msg := fmt.Sprintf("%s/%s: --tables-size %s: %s", a.VG, a.LV, sizes.Format(a.RequestedSize), f.Message)
				if min, ok := minTablesSize(a, p.ExtentSize, fs, need, stripe); ok {
					msg += fmt.Sprintf("; give at least --tables-size %dGiB for the full set on %s", (min+(1<<30)-1)>>30, fs)
					if a.Filesystem == nil {
						// without --tables-fs both filesystems are checked:
						// the size fits one only where it is chosen
						msg += fmt.Sprintf(" (with --tables-fs %s)", fs)
					}
				} else {
					msg += "; not even all of the VG holds it: add HDDs"
				}
				if !o.AllowPartialSet {
					refused = append(refused, msg+", or pass --allow-partial-set to serve a smaller set on purpose")
					continue
				}
				p.Warnings = append(p.Warnings, msg+" (--allow-partial-set: a smaller set on purpose)")
				continue
			}
			if !f.Fits {
				way := "add HDDs, or serve a smaller set"
				if role == capacity.RolePrefix {
					way = "add NVMe space, or plan a partial store with tbhost prefix plan --capacity (probes of the tables left out read the HDDs twice)"
				}
				p.Warnings = append(p.Warnings, fmt.Sprintf("%s/%s: %s: %s", a.VG, a.LV, f.Message, way))
			}
		}
		if role == capacity.RoleTables && a.Type == "raid5" && a.Layout != nil {
			host.HDDs, host.DataStripes = a.Stripes, a.DataStripes
			host.ImageBytes = a.Layout.ImageExtents * p.ExtentSize
			host.Integrity = a.Integrity.Enabled
		}
	}
	if len(refused) > 0 {
		return &RefusedError{What: "lvm plan refused", Problems: refused}
	}
	r := o.Rates
	def := timeline.Defaults(host.DataStripes)
	fill := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	fill(&r.HDD, def.HDD)
	fill(&r.Integrity, def.Integrity)
	fill(&r.Network, def.Network)
	fill(&r.Scrub, def.Scrub)
	if r.ArrayWrite == 0 {
		r.ArrayWrite = int64(max(host.DataStripes, 1)) * r.HDD / 2
	}
	if r.PrefixRead == 0 {
		r.PrefixRead = int64(max(host.DataStripes, 1)) * r.HDD / 2
	}
	if r.ScrubBudget == 0 {
		r.ScrubBudget = def.ScrubBudget
	}
	tl, err := timeline.Forecast(host, r)
	if err != nil {
		return err
	}
	for _, s := range tl.Steps {
		if s.Warning != "" {
			p.Warnings = append(p.Warnings, "timeline: "+s.Warning)
		}
	}
	p.Timeline = &tl
	return nil
}

// minTablesSize is the smallest LV size (a whole number of extents per
// data stripe) whose fs filesystem holds need bytes, found by bisection
// over the image extents of a's layout; ok is false when not even the
// largest image the PVs hold does.
func minTablesSize(a Array, extentSize int64, fs string, need int64, stripe capacity.XFSOptions) (int64, bool) {
	if a.Layout == nil || a.DataStripes < 1 {
		return 0, false
	}
	full, err := SizeRaid5(a.Layout.PVExtents, extentSize, a.Integrity.Enabled)
	if err != nil {
		return 0, false
	}
	size := func(img int64) int64 { return int64(a.DataStripes) * img * extentSize }
	fits := func(img int64) bool {
		u, err := capacity.Usable(capacity.RoleTables, fs, size(img), stripe)
		return err == nil && u.Available >= need
	}
	if !fits(full.ImageExtents) {
		return 0, false
	}
	lo, hi := int64(1), full.ImageExtents // hi fits
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fits(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return size(hi), true
}

// forecastText is the CAPACITY detail and the TIMELINE of the plan's text.
func (p *Plan) forecastText() []string {
	var lines []string
	if s := p.Summary; s != nil {
		for _, fc := range s.Filesystems {
			u := fc.Usage
			lines = append(lines, fmt.Sprintf("  %s %s: %s available of %s (metadata %s, root reserve %s)  mkfs.%s %s",
				fc.Array, u.FS, sizes.Format(u.Available), sizes.Format(u.DeviceBytes), sizes.Format(u.Overhead+u.Used), sizes.Format(u.Reserved), u.FS, joinArgs(fc.Mkfs)))
		}
		for _, f := range s.Fits {
			mark := "ok"
			if !f.Fits {
				mark = "NO"
			}
			lines = append(lines, fmt.Sprintf("  %-2s %s", mark, f.Message))
		}
	}
	if tl := p.Timeline; tl != nil {
		r := tl.Rates
		lines = append(lines, "", fmt.Sprintf("TIMELINE (rates assumed: HDD %s/s, integrity init %s/s, array write %s/s, prefix read %s/s, network %s/s, scrub %s/s for %s a night; override with --*-rate)",
			sizes.Format(r.HDD), sizes.Format(r.Integrity), sizes.Format(r.ArrayWrite), sizes.Format(r.PrefixRead), sizes.Format(r.Network), sizes.Format(r.Scrub), timeline.Human(tl.ScrubBudgetSeconds)))
		for _, s := range tl.Steps {
			line := fmt.Sprintf("  %-15s %-10s %s", s.Name, s.Human, s.What)
			if s.Nights > 0 {
				line += fmt.Sprintf(": %d nights", s.Nights)
			}
			lines = append(lines, line)
		}
	}
	return lines
}

func joinArgs(a []string) string {
	if len(a) == 0 {
		return "(defaults)"
	}
	return strings.Join(a, " ")
}
