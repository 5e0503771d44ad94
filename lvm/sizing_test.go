package lvm

import "testing"

// The real lvm2 2.03.16 log (shared/lab-reference/sample-run.log) shows the
// _imeta sizes lvcreate chose; the formula must reproduce them.
func TestIntegrityMetaMatchesLvm2_03_16Log(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct{ image, meta int64 }{
		{240 * mib, 8 * mib},  // "--stripes 5 -l 300": 60 extents per image
		{452 * mib, 8 * mib},  // "-l 60%FREE", 2 data stripes
		{500 * mib, 12 * mib}, // "-l 66%FREE": 125 extents per image, failed for want of 3 extents
	} {
		if got := IntegrityMetaBytes(c.image); got != c.meta {
			t.Errorf("image %d MiB: imeta %d MiB, lvm2 used %d MiB", c.image/mib, got/mib, c.meta/mib)
		}
	}
}

// Six 256 MiB PVs with 4 MiB extents: 63 extents each. lvm2 accepted
// 5 x 60 = 300 extents and refused 305; with tbhost's one spare extent per
// PV the plan must stay at or under 300.
func TestSizeRaid5LabDisks(t *testing.T) {
	pv := PVExtents(256<<20, DefaultExtentSize)
	if pv != 63 {
		t.Fatalf("PV extents %d, lvm made 63", pv)
	}
	l, err := SizeRaid5(pv, DefaultExtentSize, true)
	if err != nil {
		t.Fatal(err)
	}
	if l.ImageExtents*5 > 300 || l.ImageExtents < 55 {
		t.Errorf("image %d extents (x5 = %d): must be <= 300 (what lvm2 accepted) and not wasteful", l.ImageExtents, l.ImageExtents*5)
	}
	if l.ImageExtents+l.RmetaExtents+l.ImetaExtents+l.SpareExtents > pv {
		t.Errorf("layout %+v overflows %d extents", l, pv)
	}
}

func TestSizeRaid5ReferenceDisk(t *testing.T) {
	pv := PVExtents(6001175126016, DefaultExtentSize)
	l, err := SizeRaid5(pv, DefaultExtentSize, true)
	if err != nil {
		t.Fatal(err)
	}
	used := l.ImageExtents + l.RmetaExtents + l.ImetaExtents + l.SpareExtents
	if used != pv {
		t.Errorf("layout %+v leaves %d extents unused of %d", l, pv-used, pv)
	}
	// ~0.8% of the image goes to integrity metadata
	ratio := float64(l.ImetaExtents) / float64(l.ImageExtents)
	if ratio < 0.007 || ratio > 0.009 {
		t.Errorf("imeta/image = %.4f, want about 4/500", ratio)
	}
	if _, err := SizeRaid5(3, DefaultExtentSize, true); err == nil {
		t.Error("a 3-extent PV must be refused")
	}
}

// sizeRaid5Scan is the original search (down from the top, one extent at
// a time): the bisection must find exactly the same layouts.
func sizeRaid5Scan(pvExtents, extentSize int64, integrity bool) (Raid5Layout, bool) {
	l := Raid5Layout{PVExtents: pvExtents, RmetaExtents: RmetaExtents, SpareExtents: SpareExtents}
	for img := pvExtents - RmetaExtents - SpareExtents; img > 0; img-- {
		meta := int64(0)
		if integrity {
			meta = IntegrityMetaExtents(img, extentSize)
		}
		if img+RmetaExtents+meta+SpareExtents <= pvExtents {
			l.ImageExtents, l.ImetaExtents = img, meta
			return l, true
		}
	}
	return l, false
}

func TestSizeRaid5BisectionMatchesTheScan(t *testing.T) {
	check := func(pv, ext int64, integrity bool) {
		t.Helper()
		want, ok := sizeRaid5Scan(pv, ext, integrity)
		got, err := SizeRaid5(pv, ext, integrity)
		if ok != (err == nil) || (ok && got != want) {
			t.Fatalf("pv %d ext %d integrity %v: got %+v (%v), scan %+v (%v)", pv, ext, integrity, got, err, want, ok)
		}
	}
	for _, ext := range []int64{1 << 20, DefaultExtentSize, 32 << 20} {
		for pv := int64(-1); pv < 3000; pv++ {
			check(pv, ext, true)
			check(pv, ext, false)
		}
		for _, pv := range []int64{PVExtents(6001175126016, ext), PVExtents(18<<40, ext), 1430791, 1430792} {
			check(pv, ext, true)
		}
	}
}

// A plan file is input: an absurd PV size is refused quickly, not scanned.
func TestSizeRaid5AbsurdPVIsRefusedFast(t *testing.T) {
	if _, err := SizeRaid5(1<<40, DefaultExtentSize, true); err == nil {
		t.Fatal("2^40 extents of 4 MiB accepted")
	}
	if l, err := SizeRaid5(MaxPVBytes/DefaultExtentSize, DefaultExtentSize, true); err != nil || l.ImageExtents == 0 {
		t.Fatalf("the largest PV: %+v %v", l, err)
	}
}
