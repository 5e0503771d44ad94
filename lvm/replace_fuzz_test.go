package lvm

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDetectReplace: lvs output is input. Whatever the report, DetectReplace
// does not panic, and what it accepts is a case it knows with an image, at
// most images-1 other members, and a block size and extent counts that are
// not negative.
func FuzzDetectReplace(f *testing.F) {
	// real lvm2 2.03.16 reports (plain files: the fuzz workers start fast)
	healthy, err := os.ReadFile("testdata/lab-apply-2.03.16/lvs.json")
	if err != nil {
		f.Fatal(err)
	}
	degraded, err := os.ReadFile("testdata/lab-apply-2.03.16/lvs-degraded.json")
	if err != nil {
		f.Fatal(err)
	}
	// the tables LV's rows only, compacted (the fuzzer mutates small inputs far faster)
	healthy, degraded = compactTables(f, healthy), compactTables(f, degraded)
	// the first byte picks --old (olds[b%4]), the rest is the report
	add := func(pick byte, report []byte) { f.Add(append([]byte{pick}, report...)) }
	add(2, healthy)
	add(0, healthy)
	add(0, degraded)
	add(1, degraded)
	// as at boot: the same report with the LV and its images inactive
	add(0, bytes.ReplaceAll(bytes.ReplaceAll(degraded, []byte(`"rwi-a-r-p-"`), []byte(`"rwi---r-p-"`)), []byte(`wi-aor`), []byte(`wi---r`)))
	add(0, []byte(`{"report":[{"lv":[{"lv_name":"tables","vg_name":"vg-hdd","segtype":"raid5","stripes":"3","devices":"tables_rimage_0(0),tables_rimage_0(0),tables_rimage_0(0)","lv_size":"-4"},{"lv_name":"[tables_rimage_0]","vg_name":"vg-hdd","devices":"[unknown](0)","lv_size":"9223372036854775807"}]}]}`))
	olds := []string{OldMissing, "/dev/sda", "/dev/sdc", "/dev/sdz"}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		old := olds[int(data[0])%len(olds)]
		rows, err := ParseReport(data[1:], "lv")
		if err != nil {
			return
		}
		all, err := ParseLVRows(rows)
		if err != nil {
			return
		}
		s, err := DetectReplace(all, 4<<20, nil, "vg-hdd", "tables", old)
		if err != nil {
			return
		}
		switch s.Case {
		case CasePresent, CaseVanished, CaseMissingAtBoot:
		default:
			t.Fatalf("unknown case %q", s.Case)
		}
		if s.Image == "" || !strings.HasPrefix(s.Image, "tables_rimage_") {
			t.Fatalf("image %q", s.Image)
		}
		if len(s.Members) > s.Images-1 || s.Images < 3 {
			t.Fatalf("%d members of %d images", len(s.Members), s.Images)
		}
		if s.Case != CasePresent && s.OldPV != "[unknown]" {
			t.Fatalf("case %s with old PV %q", s.Case, s.OldPV)
		}
		p := BuildReplacePlan(s, "/dev/sdz", ReplaceRatesForTest())
		for _, c := range p.Commands() {
			if c[0] != "lvm" || !strings.Contains(strings.Join(c, " "), " -- ") {
				t.Fatalf("command %q does not end its options with --", c)
			}
		}
	})
}

// compactTables keeps the vg-hdd rows of a report and the fields
// DetectReplace reads, as compact JSON.
func compactTables(f *testing.F, report []byte) []byte {
	rows, err := ParseReport(report, "lv")
	if err != nil {
		f.Fatal(err)
	}
	keep := []string{"lv_name", "vg_name", "lv_attr", "lv_size", "lv_health_status", "segtype", "stripes", "data_stripes", "devices", "sync_percent", "raidintegritymode", "raidintegrityblocksize"}
	var out []map[string]string
	for _, r := range rows {
		if r["vg_name"] != "vg-hdd" {
			continue
		}
		m := map[string]string{}
		for _, k := range keep {
			if v := r[k]; v != "" {
				m[k] = v
			}
		}
		out = append(out, m)
	}
	return fakeReport("lv", out)
}

// FuzzReplaceState: the state file is input (a disk, an editor, a crash).
// Loading it never panics, and what loads has one step state per step, in
// the plan's order.
func FuzzReplaceState(f *testing.F) {
	f.Add([]byte(`{"version":1,"array":"vg-hdd/tables","plan":{"steps":[{"kind":"pvcreate"}]},"steps":[{"kind":"pvcreate","status":"done"}]}`))
	f.Add([]byte(`{"version":1,"plan":{"steps":[{"kind":"pvcreate"}]},"steps":[{"kind":"vgextend"}]}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`[`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "state.json")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := loadReplaceState(p)
		if err != nil {
			return
		}
		if st == nil || st.Version != ReplaceStateVersion || len(st.Steps) != len(st.Plan.Steps) {
			t.Fatalf("accepted %+v", st)
		}
		for i := range st.Steps {
			if st.Steps[i].Kind != st.Plan.Steps[i].Kind {
				t.Fatalf("step %d %q for plan step %q", i, st.Steps[i].Kind, st.Plan.Steps[i].Kind)
			}
		}
	})
}
