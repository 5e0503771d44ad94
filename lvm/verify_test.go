package lvm

import (
	"strings"
	"testing"
)

func labArray() Array {
	devs := []string{"/dev/sda", "/dev/sdb", "/dev/sdc", "/dev/sdd", "/dev/sde", "/dev/sdf"}
	return Array{VG: "", LV: "tables", Type: "raid5", Stripes: 6, DataStripes: 5, Devices: devs, Extents: 300,
		Integrity: Integrity{Enabled: true, Mode: "journal", BlockSize: 512}}
}

func identity(p string) string {
	if strings.HasPrefix(p, "/dev/sd") {
		return p
	}
	return ""
}

// The real lvm2 2.03.16 report of the lab's raid5 + integrity with
// --stripes 5 passes every check.
func TestVerifyRealCapture(t *testing.T) {
	lvs := parseLVs(t, "lvs-a-2.03.16-raid5-integrity-raid0.json")
	cs := VerifyArray(labArray(), lvs, 0, identity)
	for _, c := range cs {
		if !c.OK {
			t.Errorf("%s", c)
		}
	}
	if len(cs) < 9 {
		t.Errorf("only %d checks", len(cs))
	}
	nv := Array{LV: "prefix", Type: "raid0", Stripes: 2, DataStripes: 2, Devices: []string{"/dev/nvme0n1", "/dev/nvme1n1"}}
	for _, c := range VerifyArray(nv, lvs, 0, func(p string) string { return p }) {
		if !c.OK {
			t.Errorf("%s", c)
		}
	}
	// the same capture checked against a plan with 4096-byte integrity blocks fails that check only
	a := labArray()
	a.Integrity.BlockSize = 4096
	var failed []string
	for _, c := range VerifyArray(a, lvs, 0, identity) {
		if !c.OK {
			failed = append(failed, c.Name)
		}
	}
	if strings.Join(failed, ",") != "integrity block size" {
		t.Errorf("failed %v", failed)
	}
}

// raid5 without --stripes, -l 100%FREE: 3 images, each two PVs
// concatenated (sample-run.log step 3a). Every placement check must fail.
func TestVerifyCatchesTheMissingStripes(t *testing.T) {
	rows := []map[string]string{
		{"lv_name": "tables", "vg_name": "vg-hdd", "segtype": "raid5", "stripes": "3", "data_stripes": "2", "devices": "tables_rimage_0(0),tables_rimage_1(0),tables_rimage_2(0)"},
	}
	pairs := [][2]string{{"sda", "sdd"}, {"sdb", "sde"}, {"sdc", "sdf"}}
	for i, p := range pairs {
		img := "[tables_rimage_" + string(rune('0'+i)) + "]"
		rows = append(rows,
			map[string]string{"lv_name": img, "vg_name": "vg-hdd", "segtype": "linear", "devices": "/dev/" + p[0] + "(1)"},
			map[string]string{"lv_name": img, "vg_name": "vg-hdd", "segtype": "linear", "devices": "/dev/" + p[1] + "(0)"},
			map[string]string{"lv_name": "[tables_rmeta_" + string(rune('0'+i)) + "]", "vg_name": "vg-hdd", "segtype": "linear", "devices": "/dev/" + p[0] + "(0)"})
	}
	lvs, _ := ParseLVRows(rows)
	a := labArray()
	a.VG, a.Integrity = "vg-hdd", Integrity{}
	failed := map[string]string{}
	for _, c := range VerifyArray(a, lvs, 0, identity) {
		if !c.OK {
			failed[c.Name] = c.Got
		}
	}
	for _, want := range []string{"data_stripes", "stripes", "images", "one image per device", "one rmeta per device"} {
		if _, ok := failed[want]; !ok {
			t.Errorf("check %q passed on the misbuilt array", want)
		}
	}
	if !strings.Contains(failed["one image per device"], "tables_rimage_0 spans 2 devices (/dev/sda, /dev/sdd)") {
		t.Errorf("image placement says %q", failed["one image per device"])
	}
	if !strings.Contains(failed["one rmeta per device"], "/dev/sdd holds no rmeta") {
		t.Errorf("rmeta placement says %q", failed["one rmeta per device"])
	}
}
