package lvm

import (
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
	for _, name := range []string{"raid5-integrity-stripes5", "raid5-member-dropped", "raid5-missing-member-boot"} {
		c := loadCapture(f, name)
		b := fakeReport("lv", c.lvs)
		f.Add(b, OldMissing)
		f.Add(b, "/dev/sdc")
	}
	if b, err := os.ReadFile("testdata/lab-apply-2.03.16/lvs-degraded.json"); err == nil {
		f.Add(b, OldMissing)
	}
	f.Add([]byte(`{"report":[{"lv":[{"lv_name":"tables","vg_name":"vg-hdd","segtype":"raid5","stripes":"3","devices":"tables_rimage_0(0),tables_rimage_0(0),tables_rimage_0(0)","lv_size":"-4"},{"lv_name":"[tables_rimage_0]","vg_name":"vg-hdd","devices":"[unknown](0)","lv_size":"9223372036854775807"}]}]}`), OldMissing)
	f.Fuzz(func(t *testing.T, data []byte, old string) {
		rows, err := ParseReport(data, "lv")
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
