package lvm

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/execx"
)

// withoutImage is the real degraded capture (lvm2 2.03.16) with image idx of
// vg-hdd/tables cut out of the report: the rows named by drop(row name) are
// removed, and the partial flags of the rest cleared (rows left on
// "[unknown]" stay so). The array's own row
// still says 6 stripes and names tables_rimage_<idx>(0) in its devices.
func withoutImage(t testing.TB, drop func(name string) bool) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(realLab, "lvs-degraded.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Report []map[string][]map[string]any `json:"report"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	for _, r := range doc.Report[0]["lv"] {
		if drop(strings.Trim(r["lv_name"].(string), "[]")) {
			continue
		}
		if r["lv_health_status"] == "partial" {
			r["lv_health_status"] = ""
		}
		if a := r["lv_attr"].(string); len(a) >= 9 && a[8] == 'p' {
			r["lv_attr"] = a[:8] + "-" + a[9:]
		}
		rows = append(rows, r)
	}
	doc.Report[0]["lv"] = rows
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Audit: an lvs report that leaves out one image (and its rmeta) with clear
// health flags on the rest said OK, "raid5, 5 data stripes of 6 devices"
// next to five images: images were counted from the rows present, never
// against the array's stripes or its devices column.
func TestStatusImageLeftOutOfTheReportIsNotOK(t *testing.T) {
	for _, tc := range []struct {
		name string
		drop func(string) bool
		says string
	}{
		// the image and its rmeta, its integrity sub-LVs too
		{"whole image", func(n string) bool { return strings.HasPrefix(n, "tables_rimage_2") || n == "tables_rmeta_2" }, `names "tables_rimage_2"`},
		// the image row alone: its _iorig/_imeta rows stay, unreferenced
		{"image row", func(n string) bool { return n == "tables_rimage_2" || n == "tables_rmeta_2" }, `names "tables_rimage_2"`},
		// the image is there, the layer under it is not
		{"iorig row", func(n string) bool { return strings.HasPrefix(n, "tables_rimage_2_i") || n == "tables_rmeta_2" }, `tables_rimage_2 names "tables_rimage_2_iorig"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lvs := withoutImage(t, tc.drop)
			all, err := ParseLVRows(mustRows(t, lvs))
			if err != nil {
				t.Fatal(err)
			}
			top, _ := Find(all, "vg-hdd", "tables")
			h := AssessArray(all, top)
			if !HasCode(h.Findings, CodeLVMUnreadable) || h.Worst() == OK {
				t.Fatalf("findings %v", codesOf(h.All()))
			}
			// no disk was seen lost: no "replace the disk" advice
			if HasCode(h.All(), CodeImageMissing, CodeMissingAtBoot) {
				t.Errorf("a report cut short is not a lost disk: %v", Texts(h.All()))
			}
			rec := execx.NewRecorded()
			rec.On(execx.Reply{Stdout: string(lvs)}, LVsArgv()...)
			rep, err := Status(context.Background(), rec, StatusOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := rep.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			st := rep.Arrays[0]
			if rep.OK || st.State != "problem" || !HasCode(st.Findings, CodeLVMUnreadable) {
				t.Fatalf("ok=%v state %s findings %v\n%s", rep.OK, st.State, codesOf(st.Findings), buf.String())
			}
			if !strings.Contains(buf.String(), "vg-hdd/tables: the devices column of") || !strings.Contains(buf.String(), tc.says) || !strings.HasSuffix(buf.String(), "PROBLEM\n") {
				t.Errorf("text must name the array and the left-out sub-LV (%s):\n%s", tc.says, buf.String())
			}
			if rep.Arrays[1].LV != "prefix" || rep.Arrays[1].State != "ok" {
				t.Errorf("the consistent prefix array: %+v", rep.Arrays[1])
			}
		})
	}
}

// The devices column cut down too (a report edited with care): the number
// of images still disagrees with the array's stripes.
func TestAssessImageCountAgainstStripes(t *testing.T) {
	lvs := withoutImage(t, func(n string) bool { return strings.HasPrefix(n, "tables_rimage_2") || n == "tables_rmeta_2" })
	all, err := ParseLVRows(mustRows(t, lvs))
	if err != nil {
		t.Fatal(err)
	}
	for i := range all {
		if all[i].Name == "tables" {
			d := all[i].Segments[0].Devices
			all[i].Segments[0].Devices = append(append([]Extent(nil), d[:2]...), d[3:]...)
		}
	}
	top, _ := Find(all, "vg-hdd", "tables")
	h := AssessArray(all, top)
	if len(h.Findings) != 1 || h.Findings[0].Code != CodeLVMUnreadable || h.Findings[0].Field != "stripes" ||
		!strings.Contains(h.Findings[0].Text, "lists 5 rimage sub-LVs") || !strings.Contains(h.Findings[0].Text, "6 stripes") {
		t.Errorf("findings %v %q", codesOf(h.Findings), Texts(h.Findings))
	}
	// the real, complete captures stay clean
	for _, f := range []string{"lvs.json", "lvs-512e-bitmap-ext4.json", "lvs-halfbuilt.json"} {
		all := lvsFromFile(t, filepath.Join(realLab, f))
		for _, lv := range all {
			if !lv.Hidden && strings.HasPrefix(lv.SegType(), "raid") {
				if h := AssessArray(all, lv); HasCode(h.Findings, CodeLVMUnreadable) {
					t.Errorf("%s %s: %v", f, lv.FullName(), Texts(h.Findings))
				}
			}
		}
	}
}

func mustRows(t testing.TB, b []byte) []map[string]string {
	t.Helper()
	rows, err := ParseReport(b, "lv")
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
