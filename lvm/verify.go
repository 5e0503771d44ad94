package lvm

import (
	"fmt"
	"sort"
	"strings"
)

// Check is one verified property of an array.
type Check struct {
	Array string `json:"array"` // vg/lv
	Name  string `json:"check"` // exists, segtype, data_stripes, ...
	OK    bool   `json:"ok"`
	Want  string `json:"want,omitempty"`
	Got   string `json:"got,omitempty"`
}

func (c Check) String() string {
	mark := "ok  "
	if !c.OK {
		mark = "FAIL"
	}
	s := fmt.Sprintf("%s %s %s", mark, c.Array, c.Name)
	if c.Want != "" || c.Got != "" {
		if c.OK {
			s += ": " + c.Got
		} else {
			s += fmt.Sprintf(": want %s, got %s", c.Want, c.Got)
		}
	}
	return s
}

// AllOK reports whether every check passed.
func AllOK(cs []Check) bool {
	for _, c := range cs {
		if !c.OK {
			return false
		}
	}
	return true
}

// VerifyArray checks an LV against its planned shape, from `lvs -a`:
// segment type, data stripes, number of images, size, integrity on every
// image with the planned mode and block size, and that each planned
// device holds exactly one image (and, for raid5, one rmeta). deviceOf maps
// a PV path as lvs prints it (/dev/sda) to the plan's device id; it
// returns "" for a device that is not in the plan.
func VerifyArray(a Array, all []LV, extentSize int64, deviceOf func(pv string) string) []Check {
	name := a.VG + "/" + a.LV
	var cs []Check
	add := func(check string, ok bool, want, got string) {
		cs = append(cs, Check{Array: name, Name: check, OK: ok, Want: want, Got: got})
	}
	top, ok := Find(all, a.VG, a.LV)
	if !ok {
		add("exists", false, "an LV "+name, "none")
		return cs
	}
	add("exists", true, "", top.Attr)
	add("segtype", top.SegType() == a.Type, a.Type, top.SegType())
	if want := a.Extents * extentSize; extentSize > 0 {
		add("size", top.Size == want, fmt.Sprintf("%d bytes (%d extents)", want, a.Extents), fmt.Sprintf("%d bytes", top.Size))
	}
	if a.Type == "linear" {
		devs := PhysicalDevices(all, top)
		add("devices", len(devs) == 1 && deviceOf(devs[0]) == a.Devices[0], a.Devices[0], strings.Join(devs, ","))
		return cs
	}
	if len(top.Segments) > 0 {
		seg := top.Segments[0]
		ds := seg.DataStripes
		if ds == 0 { // not reported: derive it from the stripes (parity devices excluded)
			ds = seg.Stripes - parityDevices(seg.Type)
		}
		add("data_stripes", ds == a.DataStripes && len(top.Segments) == 1, fmt.Sprint(a.DataStripes), fmt.Sprintf("%d (in %d segments)", ds, len(top.Segments)))
		add("stripes", seg.Stripes == a.Stripes, fmt.Sprint(a.Stripes), fmt.Sprint(seg.Stripes))
	}
	images := SubLVs(all, top, "rimage")
	add("images", len(images) == len(a.Devices), fmt.Sprint(len(a.Devices)), fmt.Sprint(len(images)))
	if a.Integrity.Enabled {
		var bad []string
		for _, img := range images {
			if img.SegType() != "integrity" {
				bad = append(bad, img.Name+" is "+img.SegType())
			}
		}
		add("integrity on every image", len(bad) == 0 && len(images) > 0, "integrity", orNone(bad, fmt.Sprintf("%d of %d images", len(images), len(images))))
		add("integrity mode", top.IntegrityMode == a.Integrity.Mode, a.Integrity.Mode, top.IntegrityMode)
		add("integrity block size", top.IntegrityBlockSize == a.Integrity.BlockSize, fmt.Sprint(a.Integrity.BlockSize), fmt.Sprint(top.IntegrityBlockSize))
	}
	cs = append(cs, placement(name, "image", images, all, a.Devices, deviceOf)...)
	if a.Type == "raid5" {
		cs = append(cs, placement(name, "rmeta", SubLVs(all, top, "rmeta"), all, a.Devices, deviceOf)...)
	}
	return cs
}

// placement checks that every sub-LV sits on one device and every planned
// device holds exactly one of them.
func placement(array, kind string, subs []LV, all []LV, planned []string, deviceOf func(string) string) []Check {
	count := map[string][]string{}
	var problems []string
	for _, s := range subs {
		devs := PhysicalDevices(all, s)
		if len(devs) != 1 {
			problems = append(problems, fmt.Sprintf("%s spans %d devices (%s)", s.Name, len(devs), strings.Join(devs, ", ")))
		}
		for _, d := range devs {
			id := deviceOf(d)
			if id == "" {
				problems = append(problems, fmt.Sprintf("%s is on %s, which is not in the plan", s.Name, d))
				continue
			}
			count[id] = append(count[id], s.Name)
		}
	}
	for _, id := range planned {
		switch n := len(count[id]); {
		case n == 0:
			problems = append(problems, fmt.Sprintf("%s holds no %s", id, kind))
		case n > 1:
			problems = append(problems, fmt.Sprintf("%s holds %d: %s", id, n, strings.Join(count[id], ", ")))
		}
	}
	sort.Strings(problems)
	return []Check{{Array: array, Name: "one " + kind + " per device", OK: len(problems) == 0,
		Want: fmt.Sprintf("1 %s on each of %d devices", kind, len(planned)),
		Got:  orNone(problems, fmt.Sprintf("%d devices, one %s each", len(planned), kind))}}
}

func orNone(problems []string, ok string) string {
	if len(problems) == 0 {
		return ok
	}
	return strings.Join(problems, "; ")
}

func parityDevices(segtype string) int {
	switch {
	case strings.HasPrefix(segtype, "raid4"), strings.HasPrefix(segtype, "raid5"):
		return 1
	case strings.HasPrefix(segtype, "raid6"):
		return 2
	}
	return 0
}
