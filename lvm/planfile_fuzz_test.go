package lvm

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/blockdev"
)

// FuzzParsePlan: ParsePlan never panics; any plan it accepts satisfies the
// rules apply relies on (stripes = members - 1 for raid5, one PV once,
// clean /dev paths, valid names, sizes from the extents, commands derived
// from devices and arrays, nothing after "--" that looks like an option),
// and re-serialises and re-parses to the same plan.
func FuzzParsePlan(f *testing.F) {
	// small seeds: the fuzzer minimises every input that finds new
	// coverage, and minimising a plan of kilobytes takes longer than a run
	// lasts (the full-size plans are parsed by TestPlanYAMLRoundTrip and
	// the real lab tests)
	inv := inventory(f, "lab-guest")
	for _, o := range []PlanOptions{
		{HDDs: []string{"sda", "sdb", "sdc"}, NoNVMe: true},
		{HDDs: []string{"sda", "sdb", "sdc"}, NVMes: []string{"nvme0n1"}, IntegrityMode: "bitmap"},
		{HDDs: []string{"sda", "sdb", "sdc"}, NVMes: []string{"nvme0n1", "nvme1n1"}, TablesFS: "ext4", Wipe: []string{"sdb"}},
	} {
		j := compactPlan(f, inv, o)
		f.Add(j)
		f.Add(bytes.Replace(j, []byte(`"data_stripes":2`), []byte(`"data_stripes":1`), 1))
		f.Add(bytes.Replace(j, []byte(`"vg":"vg-hdd"`), []byte(`"vg":"-ff"`), 1))
		f.Add(bytes.Replace(j, []byte(`"path":"/dev/sda"`), []byte(`"path":"--config=x"`), 1))
	}
	f.Add([]byte("version: 1\n"))
	f.Add([]byte("version: 1\nextent_size: 4194304\ndevices: [{id: /dev/sda, path: /dev/sda, size: 1}]\narrays: [{vg: a, lv: b, devices: [/dev/sda]}]\n"))
	f.Add([]byte("&a [*a, *a]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePlan(b, "fuzz.yaml")
		if err != nil {
			if p != nil {
				t.Fatal("a plan and an error")
			}
			return
		}
		checkPlanInvariants(t, p)
		y, err := p.YAML()
		if err != nil {
			t.Fatalf("accepted plan does not serialise: %v", err)
		}
		back, err := ParsePlan(y, "again.yaml")
		if err != nil {
			t.Fatalf("accepted plan does not re-parse: %v\n%s", err, y)
		}
		y2, err := back.YAML()
		if err != nil || !bytes.Equal(y, y2) {
			t.Fatalf("round trip differs:\n%s\n----\n%s", y, y2)
		}
		if !reflect.DeepEqual(back.Commands, p.Commands) || !reflect.DeepEqual(back.Arrays, p.Arrays) || !reflect.DeepEqual(back.Devices, normDevices(p.Devices)) {
			t.Fatal("round trip changed devices, arrays or commands")
		}
	})
}

// compactPlan is a plan MakePlan makes, with every optional field left
// out and devices named /dev/sdX, as compact JSON (JSON is YAML too).
func compactPlan(f *testing.F, inv *blockdev.Inventory, o PlanOptions) []byte {
	p, err := MakePlan(inv, fixedOpts(o))
	if err != nil {
		f.Fatal(err)
	}
	p.Notes, p.Warnings, p.Summary = nil, nil, nil
	p.Host, p.Source, p.InventoryFingerprint, p.SizedFor = "", "", "", ""
	rename := map[string]string{}
	for i := range p.Devices {
		d := &p.Devices[i]
		rename[d.ID] = "/dev/" + d.Name
		d.ID, d.Path = rename[d.ID], rename[d.ID]
		d.Model, d.Serial, d.WWN, d.Found = "", "", "", nil
	}
	for i := range p.Arrays {
		p.Arrays[i].Integrity.Why = ""
		for j, id := range p.Arrays[i].Devices {
			p.Arrays[i].Devices[j] = rename[id]
		}
	}
	p.Commands = BuildCommands(p)
	j, err := json.Marshal(p)
	if err != nil {
		f.Fatal(err)
	}
	j = regexp.MustCompile(`"[a-z_]+":(""|null|0|false),?`).ReplaceAll(j, nil)
	j = bytes.ReplaceAll(j, []byte(",}"), []byte("}"))
	if _, err := ParsePlan(j, "seed.json"); err != nil {
		f.Fatalf("seed refused: %v\n%s", err, j)
	}
	return j
}

// normDevices is what YAML does to the devices (an empty found list is
// omitted, so it comes back nil).
func normDevices(ds []PlanDevice) []PlanDevice {
	out := append([]PlanDevice(nil), ds...)
	for i := range out {
		if len(out[i].Found) == 0 {
			out[i].Found = nil
		}
	}
	return out
}

func checkPlanInvariants(t *testing.T, p *Plan) {
	t.Helper()
	if p.Version != PlanVersion || p.ExtentSize < 1<<20 || p.ExtentSize&(p.ExtentSize-1) != 0 {
		t.Fatalf("version %d extent size %d", p.Version, p.ExtentSize)
	}
	byID := map[string]PlanDevice{}
	for _, d := range p.Devices {
		if CheckDevPath(d.ID) != "" || CheckDevPath(d.Path) != "" {
			t.Fatalf("device %q / %q accepted", d.ID, d.Path)
		}
		if d.LogicalBlockSize < 512 || d.PhysicalBlockSize < d.LogicalBlockSize || d.Size <= PEStart || d.Size > MaxPVBytes {
			t.Fatalf("device %+v accepted", d)
		}
		byID[d.ID] = d
	}
	member := map[string]int{}
	for _, a := range p.Arrays {
		if CheckVGName(a.VG) != "" || CheckLVName(a.LV) != "" {
			t.Fatalf("names %q/%q accepted", a.VG, a.LV)
		}
		n := len(a.Devices)
		switch a.Type {
		case "raid5":
			if a.Stripes != n || a.DataStripes != n-1 || n < 3 || n > MaxRaid5DataStripes+1 || !a.Integrity.Enabled || a.Layout == nil {
				t.Fatalf("raid5 %+v accepted", a)
			}
			if a.Extents != int64(a.DataStripes)*a.Layout.ImageExtents {
				t.Fatalf("raid5 extents %d accepted", a.Extents)
			}
		case "raid0":
			if a.Stripes != n || a.DataStripes != n || n < 2 || n > MaxRaid0Stripes {
				t.Fatalf("raid0 %+v accepted", a)
			}
		case "linear":
			if n != 1 {
				t.Fatalf("linear %+v accepted", a)
			}
		default:
			t.Fatalf("type %q accepted", a.Type)
		}
		if a.Extents <= 0 || a.Size != a.Extents*p.ExtentSize {
			t.Fatalf("extents %d size %d accepted", a.Extents, a.Size)
		}
		var raw int64
		for _, id := range a.Devices {
			d, ok := byID[id]
			if !ok {
				t.Fatalf("array device %q not among the devices", id)
			}
			member[id]++
			raw += d.Size
			if PVExtents(d.Size, p.ExtentSize)*int64(a.DataStripes) < a.Extents && a.Type != "raid5" {
				t.Fatalf("%s/%s: %d extents do not fit on %s", a.VG, a.LV, a.Extents, id)
			}
		}
		if raw != a.Raw {
			t.Fatalf("raw %d accepted, devices hold %d", a.Raw, raw)
		}
	}
	for _, d := range p.Devices {
		if member[d.ID] != 1 {
			t.Fatalf("%s is in %d arrays", d.ID, member[d.ID])
		}
	}
	if !reflect.DeepEqual(p.Commands, BuildCommands(p)) {
		t.Fatal("commands are not the derived ones")
	}
	for _, c := range p.Commands {
		if c[0] != "lvm" {
			continue
		}
		sep := -1
		for i, a := range c {
			if a == "--" {
				sep = i
				break
			}
		}
		if sep < 0 {
			t.Fatalf("lvm command without --: %v", c)
		}
		for _, a := range c[sep+1:] {
			if strings.HasPrefix(a, "-") {
				t.Fatalf("positional %q looks like an option: %v", a, c)
			}
		}
	}
}
