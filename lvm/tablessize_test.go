package lvm

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/sizes"
	"github.com/tbhost/tbhost/lvm/lvmfake"
)

func referenceInv(t *testing.T) *blockdev.Inventory {
	t.Helper()
	inv, err := ReferenceInventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func lvcreateOf(t *testing.T, p *Plan, vg string) Command {
	t.Helper()
	for _, c := range p.Commands {
		if len(c) > 1 && c[1] == "lvcreate" && c[len(c)-7] == vg {
			return c
		}
	}
	t.Fatalf("no lvcreate for %s in %v", vg, p.Commands)
	return nil
}

// The reference host's operators left room in the VG: --size 21T. Every
// figure below is computed by hand:
//
//	HDD 6,001,175,126,016 bytes: PV extents (size - 1 MiB) / 4 MiB = 1,430,791
//	21T = 21 TiB = 21 x 2^40 = 23,089,744,183,296 bytes = 21 x 2^18 = 5,505,024 extents
//	5 data stripes: 5,505,024 / 5 = 1,101,004.8, rounded up: 1,101,005 per image,
//	  LV 5 x 1,101,005 = 5,505,025 extents
//	imeta: 1,101,005 x 4 MiB / 500 MiB = 8,808.04 -> 8,808 + 1 = 8,809 x 4 MiB,
//	  + 64 MiB journal allowance = 16 extents: 8,825 extents
//	free per PV: 1,430,791 - 1,101,005 - 1 rmeta - 8,825 = 320,960
//	free in the VG: 6 x 320,960 = 1,925,760 extents
func TestTablesSize21T(t *testing.T) {
	inv := referenceInv(t)
	for _, in := range []string{"21T", "21TiB", "21 TiB", "23089744183296"} {
		n, err := sizes.Parse(in)
		if err != nil || n != 23_089_744_183_296 {
			t.Fatalf("%q parses as %d, %v: T must be TiB, as in lvm", in, n, err)
		}
	}
	p := mustPlan(t, inv, PlanOptions{TablesSize: 21 << 40})
	a := p.Arrays[0]
	want := Raid5Layout{PVExtents: 1_430_791, ImageExtents: 1_101_005, RmetaExtents: 1, ImetaExtents: 8_825, SpareExtents: 320_960}
	if a.Layout == nil || *a.Layout != want {
		t.Fatalf("layout %+v, want %+v", a.Layout, want)
	}
	if a.Extents != 5_505_025 || a.Size != 5_505_025*4<<20 || a.RequestedSize != 21<<40 {
		t.Errorf("extents %d size %d requested %d; want 5,505,025 extents of 4 MiB, requested 21 TiB", a.Extents, a.Size, a.RequestedSize)
	}
	if a.VGFreeExtents != 1_925_760 {
		t.Errorf("VG free %d extents, want 1,925,760", a.VGFreeExtents)
	}
	lc := lvcreateOf(t, p, "vg-hdd")
	if s := strings.Join(lc, " "); !strings.Contains(s, " --extents 5505025 --name tables -- vg-hdd ") || strings.Contains(s, "--size") || strings.Contains(s, "%FREE") {
		t.Errorf("lvcreate %s: want exactly --extents 5505025, no --size, no %%FREE", s)
	}
	// the capacity and the timeline use the chosen size
	p2 := *p
	if err := p2.AddForecast(ForecastOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, fc := range p2.Summary.Filesystems {
		if fc.Array == "vg-hdd/tables" && fc.Usage.DeviceBytes != 5_505_025*4<<20 {
			t.Errorf("%s capacity of %d bytes, want the chosen LV's %d", fc.Usage.FS, fc.Usage.DeviceBytes, int64(5_505_025*4<<20))
		}
	}
	if s := p2.Timeline.Steps[0]; s.Name != "initial-sync" || s.Bytes != 1_101_005*4<<20 {
		t.Errorf("timeline %s over %d bytes, want initial-sync of one 1,101,005-extent image", s.Name, s.Bytes)
	}
	var text strings.Builder
	if err := p2.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"--tables-size 21 TiB (23089744183296 bytes) rounded up to 5505025 extents", "VG vg-hdd: 1925760 extents (7.35 TiB) remain free"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("plan text lacks %q:\n%s", w, text.String())
		}
	}
	// apply reads it back: the chosen size is part of the plan file
	y, err := p.YAML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParsePlan(y, "plan.yaml")
	if err != nil {
		t.Fatalf("the plan apply reads back: %v", err)
	}
	if !reflect.DeepEqual(back.Arrays, p.Arrays) || !reflect.DeepEqual(back.Commands, p.Commands) {
		t.Errorf("round trip changed the arrays or commands")
	}
}

// 23,000,000,000,000 bytes (decimal): 5,483,627.3 extents -> 5,483,628;
// / 5 = 1,096,725.6 -> 1,096,726 per image, LV 5,483,630 extents; imeta
// 1,096,726 x 4 / 500 = 8,773.8 -> 8,774 + 16 = 8,790; free per PV
// 1,430,791 - 1,096,726 - 1 - 8,790 = 325,274.
func TestTablesSizeDecimalBytes(t *testing.T) {
	p := mustPlan(t, referenceInv(t), PlanOptions{TablesSize: 23_000_000_000_000})
	a := p.Arrays[0]
	if a.Extents != 5_483_630 || a.Layout.ImageExtents != 1_096_726 || a.Layout.ImetaExtents != 8_790 || a.Layout.SpareExtents != 325_274 || a.VGFreeExtents != 6*325_274 {
		t.Errorf("extents %d, layout %+v, VG free %d", a.Extents, *a.Layout, a.VGFreeExtents)
	}
	if s := strings.Join(lvcreateOf(t, p, "vg-hdd"), " "); !strings.Contains(s, " --extents 5483630 ") {
		t.Errorf("lvcreate %s", s)
	}
}

// The largest size is what the full plan makes (5 x 1,419,417 extents:
// 1,419,417 + 1 + imeta 11,372 + 1 spare = 1,430,791); one byte more is
// refused naming the largest, in whole GiB (27,722 GiB = 27.07 TiB).
func TestTablesSizeAboveTheVGIsRefused(t *testing.T) {
	inv := referenceInv(t)
	full := mustPlan(t, inv, PlanOptions{})
	max := int64(5 * 1_419_417 * 4 << 20)
	if full.Arrays[0].Size != max || full.Arrays[0].VGFreeExtents != 6 {
		t.Fatalf("full plan %d bytes, %d free extents; want %d and 6 (one spare per PV)", full.Arrays[0].Size, full.Arrays[0].VGFreeExtents, max)
	}
	at := mustPlan(t, inv, PlanOptions{TablesSize: max})
	if !reflect.DeepEqual(at.Arrays[0].Layout, full.Arrays[0].Layout) || at.Arrays[0].Extents != full.Arrays[0].Extents {
		t.Errorf("--tables-size of exactly the VG: %+v, want the full layout %+v", at.Arrays[0].Layout, full.Arrays[0].Layout)
	}
	refused(t, inv, PlanOptions{TablesSize: max + 1}, "--tables-size", "at most 27.07 TiB", "--tables-size 27722GiB", "leave --tables-size out")
	refused(t, inv, PlanOptions{TablesSize: 28 << 40}, "28 TiB is more than the VG holds")
	if at := mustPlan(t, inv, PlanOptions{TablesSize: 27722 << 30}); at.Arrays[0].Size > max {
		t.Errorf("the size the refusal suggests does not fit: %d", at.Arrays[0].Size)
	}
}

// Below what the full set needs: refused (the operator chose the size),
// naming the smallest size that fits; --allow-partial-set turns it into a
// warning. The suggested size really fits.
func TestTablesSizeBelowTheSetIsRefused(t *testing.T) {
	inv := referenceInv(t)
	p := mustPlan(t, inv, PlanOptions{TablesSize: 15 << 40, TablesFS: "ext4"})
	err := p.AddForecast(ForecastOptions{})
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "does not fit") || !strings.Contains(err.Error(), "--allow-partial-set") {
		t.Fatalf("15 TiB for the 16.87 TiB set: %v, want a refusal naming --allow-partial-set", err)
	}
	var gib int64
	if _, err := fmt.Sscanf(err.Error()[strings.Index(err.Error(), "at least --tables-size ")+len("at least --tables-size "):], "%dGiB", &gib); err != nil || gib < 17000 || gib > 18000 {
		t.Fatalf("no smallest size in %q (%d, %v)", err, gib, err)
	}
	ok := mustPlan(t, inv, PlanOptions{TablesSize: gib << 30, TablesFS: "ext4"})
	if err := ok.AddForecast(ForecastOptions{}); err != nil {
		t.Errorf("the suggested --tables-size %dGiB is refused: %v", gib, err)
	}
	small := mustPlan(t, inv, PlanOptions{TablesSize: (gib - 8) << 30, TablesFS: "ext4"})
	if err := small.AddForecast(ForecastOptions{}); err == nil {
		t.Errorf("%d GiB (8 below the suggestion) accepted: the suggestion is not the smallest", gib-8)
	}
	p = mustPlan(t, inv, PlanOptions{TablesSize: 15 << 40, TablesFS: "ext4"})
	if err := p.AddForecast(ForecastOptions{AllowPartialSet: true}); err != nil {
		t.Fatalf("--allow-partial-set: %v", err)
	}
	if w := strings.Join(p.Warnings, "\n"); !strings.Contains(w, "does not fit") || !strings.Contains(w, "--allow-partial-set") {
		t.Errorf("warnings %q", w)
	}
	// without --tables-size a set too big for the VG stays a warning (a fact of the hardware)
	lab := mustPlan(t, inventory(t, "lab-guest"), PlanOptions{})
	if err := lab.AddForecast(ForecastOptions{}); err != nil {
		t.Errorf("full-VG plan of the lab: %v", err)
	}
}

// Without --tables-fs both filesystems are checked and each gets its own
// smallest size: a suggestion names the --tables-fs it holds for, and the
// size with that filesystem is accepted (the xfs figure alone was refused,
// by the ext4 check).
func TestTablesSizeSuggestionNamesItsFilesystem(t *testing.T) {
	inv := referenceInv(t)
	p := mustPlan(t, inv, PlanOptions{TablesSize: 1 << 40})
	err := p.AddForecast(ForecastOptions{})
	if err == nil {
		t.Fatal("1 TiB for the full set: no refusal")
	}
	for _, fs := range []string{"ext4", "xfs"} {
		var gib int64
		var named string
		at := strings.Index(err.Error(), "on "+fs+" does not fit")
		if at < 0 {
			t.Fatalf("no %s line in %q", fs, err)
		}
		rest := err.Error()[at:]
		rest = rest[strings.Index(rest, "at least --tables-size ")+len("at least --tables-size "):]
		if _, err := fmt.Sscanf(rest, "%dGiB for the full set on "+fs+" (with --tables-fs %s", &gib, &named); err != nil || named != fs+")," {
			t.Fatalf("%s suggestion %q does not name --tables-fs %s (%v)", fs, rest, fs, err)
		}
		ok := mustPlan(t, inv, PlanOptions{TablesSize: gib << 30, TablesFS: fs})
		if err := ok.AddForecast(ForecastOptions{}); err != nil {
			t.Errorf("the suggested --tables-size %dGiB --tables-fs %s is refused: %v", gib, fs, err)
		}
	}
}

// A plan file is input: a chosen size that does not give its extents, a
// wrong VG free count, a requested size on the raid0 are refused.
func TestTablesSizeInPlanFileIsChecked(t *testing.T) {
	inv := referenceInv(t)
	base := mustPlan(t, inv, PlanOptions{TablesSize: 21 << 40})
	for name, edit := range map[string]func(p *Plan){
		"requested size without its extents": func(p *Plan) { p.Arrays[0].RequestedSize = 20 << 40 },
		"requested size removed":             func(p *Plan) { p.Arrays[0].RequestedSize = 0 },
		"negative requested size":            func(p *Plan) { p.Arrays[0].RequestedSize = -1 },
		"requested size beyond the VG":       func(p *Plan) { p.Arrays[0].RequestedSize = 40 << 40 },
		"vg free extents":                    func(p *Plan) { p.Arrays[0].VGFreeExtents++ },
		"raid0 vg free extents":              func(p *Plan) { p.Arrays[1].VGFreeExtents = 7 },
		"requested size on the raid0":        func(p *Plan) { p.Arrays[1].RequestedSize = 1 << 30 },
	} {
		y, _ := base.YAML()
		p, err := ParsePlan(y, "plan.yaml")
		if err != nil {
			t.Fatal(err)
		}
		edit(p)
		if ps := p.validate(); len(ps) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
	// plans written before vg_free_extents (0) are still read
	y, _ := base.YAML()
	p, _ := ParsePlan(y, "plan.yaml")
	p.Arrays[0].VGFreeExtents, p.Arrays[1].VGFreeExtents = 0, 0
	if ps := p.validate(); len(ps) != 0 {
		t.Errorf("older plan refused: %v", ps)
	}
}

// Apply builds and verifies a --tables-size plan (lvmfake, lvm2 2.03.16's
// rules) and leaves the rest of the VG free. Lab guest: 6 x 256 MiB, 63
// extents per PV; 600 MiB = 150 extents, 30 per data stripe; imeta of a
// 120 MiB image 8 MiB = 2 extents; free per PV 63 - 30 - 1 - 2 = 30.
func TestApplyWithTablesSize(t *testing.T) {
	l := newLab(t, PlanOptions{TablesSize: 600 << 20})
	a := l.plan.Arrays[0]
	if a.Extents != 150 || a.Layout.ImageExtents != 30 || a.Layout.ImetaExtents != 2 || a.Layout.SpareExtents != 30 || a.VGFreeExtents != 180 {
		t.Fatalf("plan: %d extents, layout %+v, VG free %d", a.Extents, *a.Layout, a.VGFreeExtents)
	}
	rep, err := l.apply(t, ApplyOptions{Yes: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, l.out.String())
	}
	if !rep.Verified {
		t.Fatalf("not verified: %+v", rep.Verification)
	}
	var lc []string
	for _, c := range lvmfake.Writes(l.lvm.Calls) {
		if len(c) > 1 && c[1] == "lvcreate" && strings.Contains(strings.Join(c, " "), "raid5") {
			lc = c
		}
	}
	if s := strings.Join(lc, " "); !strings.Contains(s, " --extents 150 ") || strings.Contains(s, "--size") {
		t.Errorf("lvcreate %q: want --extents 150", s)
	}
}
