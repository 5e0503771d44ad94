package lvm

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Fuzz targets for the parsers of LVM's JSON reports (lvs, pvs, vgs: input
// from outside) and for the health model over what they parse. Seeds: the
// recorded lvm2 2.03.16 (and 2.03.26) output in the repository. Run longer:
//
//	go test -run '^$' -fuzz '^FuzzLVReport$' -fuzztime 60s -parallel 1 ./lvm/
//	go test -run '^$' -fuzz '^FuzzPVVGReport$' -fuzztime 60s -parallel 1 ./lvm/

// reportSeeds are every recorded lvs/pvs/vgs JSON report of the repository.
func reportSeeds(f *testing.F, prefix string) [][]byte {
	f.Helper()
	var out [][]byte
	for _, pat := range []string{
		"testdata/" + prefix + "*.json",
		"testdata/lab-apply-2.03.16/" + prefix + "*.json",
		"../integrity/testdata/" + prefix + "*.json",
		"../internal/lab/testdata/captures/*/lvm/" + prefix + "*.json",
	} {
		files, err := filepath.Glob(pat)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		f.Fatalf("no recorded %s*.json reports found: the seeds moved?", prefix)
	}
	return out
}

// allocatedBy returns the bytes allocated while fn runs.
func allocatedBy(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// allocBound is what parsing n bytes of report may allocate: JSON into
// maps costs a few dozen bytes per input byte, never more than this.
func allocBound(n int) uint64 { return 256*uint64(n) + 4<<20 }

func FuzzLVReport(f *testing.F) {
	for _, b := range reportSeeds(f, "lvs") {
		f.Add(b)
	}
	f.Add([]byte(`{"report":[{"lv":[{"lv_name":"t","vg_name":"v","segtype":"raid5","lv_attr":"rwi-aor-p-","devices":"t_rimage_0(0),t_rimage_0(0),[unknown](1)","sync_percent":"12.5","raid_sync_action":"recover"},{"lv_name":"[t_rimage_0]","vg_name":"v","segtype":"integrity","devices":"t(0),t_rimage_0(0)","integritymismatches":"-7"}]}]}`))
	f.Add([]byte(`{"report":[{"lv":[{"lv_name":"[","vg_name":"","segtype":"raid1","lv_attr":"","devices":",,(",  "lv_health_status":"\u0000"}]}],"log":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var lvs []LV
		var err error
		if got := allocatedBy(func() {
			var rows []map[string]string
			if rows, err = ParseReport(data, "lv"); err == nil {
				lvs, err = ParseLVRows(rows)
			}
		}); got > allocBound(len(data)) {
			t.Fatalf("parsing %d bytes allocated %d bytes", len(data), got)
		}
		if err != nil {
			return
		}
		extents := 0
		for _, lv := range lvs {
			for _, s := range lv.Segments {
				extents += len(s.Devices)
			}
		}
		if extents > 2*len(data)+1 {
			t.Fatalf("%d extents from %d bytes", extents, len(data))
		}
		assess := func() []ArrayHealth {
			var out []ArrayHealth
			for _, lv := range lvs {
				if !lv.Hidden && strings.HasPrefix(lv.SegType(), "raid") {
					out = append(out, AssessArray(lvs, lv))
				}
			}
			return out
		}
		start := time.Now()
		first := assess()
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("judging %d LVs took %s", len(lvs), d)
		}
		if again := assess(); !reflect.DeepEqual(first, again) {
			t.Fatal("findings differ between two runs over the same report")
		}
		for _, h := range first {
			for _, fd := range h.All() {
				if fd.Code == "" || fd.Text == "" || fd.LV == "" {
					t.Fatalf("finding without code, text or subject: %+v", fd)
				}
				if fd.Severity < OK || fd.Severity > Unknown {
					t.Fatalf("severity %d out of range: %+v", fd.Severity, fd)
				}
			}
			if len(h.Findings) > 8 {
				t.Fatalf("%d findings on one array: %+v", len(h.Findings), h.Findings)
			}
			for _, img := range h.Images {
				if img.Missing != HasCode(img.Findings, CodeImageMissing) {
					t.Fatalf("image %s: Missing %v but findings %+v", img.LV.Name, img.Missing, img.Findings)
				}
				if len(img.Findings) > 8 {
					t.Fatalf("%d findings on one image", len(img.Findings))
				}
			}
			if _, degraded := h.Degraded(); degraded && h.Worst() != Critical {
				t.Fatalf("degraded but worst %s", h.Worst())
			}
		}
	})
}

func FuzzPVVGReport(f *testing.F) {
	for _, b := range reportSeeds(f, "pvs") {
		f.Add(b)
	}
	for _, b := range reportSeeds(f, "vgs") {
		f.Add(b)
	}
	f.Add([]byte(`{"report":[{"pv":[{"pv_name":"/dev/sda","pv_size":"1e400","pv_pe_count":"-1"}],"vg":[{"vg_name":"v","pv_count":"99999999999999999999"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, key := range []string{"pv", "vg"} {
			var rows []map[string]string
			var err error
			if got := allocatedBy(func() { rows, err = ParseReport(data, key) }); got > allocBound(len(data)) {
				t.Fatalf("parsing %d bytes allocated %d bytes", len(data), got)
			}
			if err != nil {
				continue
			}
			if len(rows) > len(data)/2 {
				t.Fatalf("%d rows from %d bytes", len(rows), len(data))
			}
			again, err := ParseReport(data, key)
			if err != nil || !reflect.DeepEqual(rows, again) {
				t.Fatalf("ParseReport is not deterministic: %v", err)
			}
			switch key {
			case "pv":
				pvs := ParsePVRows(rows)
				if len(pvs) != len(rows) || !reflect.DeepEqual(pvs, ParsePVRows(again)) {
					t.Fatalf("%d PVs from %d rows, or not deterministic", len(pvs), len(rows))
				}
				for i, pv := range pvs {
					if pv.Name != rows[i]["pv_name"] || pv.VG != rows[i]["vg_name"] {
						t.Fatalf("PV %d names %q/%q, row %v", i, pv.Name, pv.VG, rows[i])
					}
				}
			case "vg":
				vgs := ParseVGRows(rows)
				if len(vgs) != len(rows) || !reflect.DeepEqual(vgs, ParseVGRows(again)) {
					t.Fatalf("%d VGs from %d rows, or not deterministic", len(vgs), len(rows))
				}
				for i, vg := range vgs {
					if vg.Name != rows[i]["vg_name"] {
						t.Fatalf("VG %d name %q, row %v", i, vg.Name, rows[i])
					}
				}
			}
		}
	})
}

// A crafted report whose sub-LVs reference each other many times used to
// make PhysicalDevices and the missing-PV walk exponential (20 references,
// 16 levels deep: 20^16 visits). Each sub-LV is now visited once.
func TestDeviceWalkIsLinearOnCraftedReferences(t *testing.T) {
	refs := strings.TrimSuffix(strings.Repeat("t_rimage_0(0),", 20), ",")
	all := []LV{
		{Name: "t", VG: "v", Attr: "rwi-aor---", Segments: []Segment{{Type: "raid5", Devices: ParseDevices("t_rimage_0(0)")}}},
		{Name: "t_rimage_0", VG: "v", Hidden: true, Segments: []Segment{{Type: "integrity", Devices: ParseDevices(refs + ",/dev/sda(1)")}}},
	}
	done := make(chan []string, 1)
	go func() {
		h := AssessArray(all, all[0])
		done <- h.Images[0].Disks
	}()
	select {
	case disks := <-done:
		if strings.Join(disks, ",") != "/dev/sda" {
			t.Errorf("disks %v", disks)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the device walk did not finish in 10 s on 20 self-references")
	}
}
