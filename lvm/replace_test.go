package lvm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/timeline"
)

// Real lvm2 2.03.16 captures of the VM lab (internal/lab/testdata/captures):
// raid5-integrity-stripes5 (healthy), raid5-member-dropped (a member deleted
// from the running guest: case b), raid5-missing-member-boot (a member
// missing at boot: case c). Each is a machine tree (sys, dev/disk/by-id)
// plus lvs/pvs/vgs JSON.

type capture struct {
	dir string
	lvs []map[string]string
	pvs []map[string]string
	vgs []map[string]string
}

func loadCapture(t testing.TB, name string) *capture {
	t.Helper()
	c := &capture{dir: labCapture(t, name)}
	for _, f := range []struct {
		file, key string
		rows      *[]map[string]string
	}{{"lvs.json", "lv", &c.lvs}, {"pvs.json", "pv", &c.pvs}, {"vgs.json", "vg", &c.vgs}} {
		b, err := os.ReadFile(filepath.Join(c.dir, "lvm", f.file))
		if err != nil {
			t.Fatal(err)
		}
		if *f.rows, err = ParseReport(b, f.key); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func (c *capture) parsed(t *testing.T) []LV {
	all, err := ParseLVRows(c.lvs)
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// inventory reads the capture's tree and adds spare disks (the 7th HDD).
func (c *capture) inventory(t *testing.T, spares ...*blockdev.Device) *blockdev.Inventory {
	t.Helper()
	inv, err := blockdev.Read(context.Background(), blockdev.Options{Root: c.dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range spares {
		d := *s
		inv.Disks = append(inv.Disks, &d)
	}
	return inv
}

// spare is a blank disk like the lab's HDDs.
func spare(name string, size, lbs, pbs int64) *blockdev.Device {
	return &blockdev.Device{Name: name, Path: "/dev/" + name, Kind: "disk", MajMin: "8:96", Serial: "HDD7",
		StableID: "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD7", IDLinks: []string{"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD7"},
		Size: size, LogicalBlockSize: lbs, PhysicalBlockSize: pbs, Rotational: true, Transport: "scsi", Role: blockdev.RoleHDD}
}

const labHDD = 256 << 20

func TestDetectReplaceCases(t *testing.T) {
	for _, tc := range []struct {
		capture, old string
		want         ReplaceCase
		image, why   string
	}{
		{"raid5-integrity-stripes5", "/dev/sdc", CasePresent, "", "is present"},
		{"raid5-member-dropped", OldMissing, CaseVanished, "tables_rimage_2", "vanished while the array ran"},
		{"raid5-missing-member-boot", OldMissing, CaseMissingAtBoot, "tables_rimage_2", "missing at activation"},
	} {
		t.Run(string(tc.want), func(t *testing.T) {
			c := loadCapture(t, tc.capture)
			inv := c.inventory(t)
			s, err := DetectReplace(c.parsed(t), 4<<20, inv, "vg-hdd", "tables", tc.old)
			if err != nil {
				t.Fatal(err)
			}
			if s.Case != tc.want || !strings.Contains(strings.Join(s.Why, " "), tc.why) {
				t.Errorf("case %s (%v), want %s", s.Case, s.Why, tc.want)
			}
			if tc.image != "" && s.Image != tc.image {
				t.Errorf("image %s, want %s", s.Image, tc.image)
			}
			if len(s.Members) != 5 || s.Images != 6 || s.DataStripes != 5 || !s.Integrity || s.ImageExtents == 0 {
				t.Errorf("situation %+v", s)
			}
			if s.LogicalBlockSize != 512 {
				t.Errorf("members' logical block size %d, want 512", s.LogicalBlockSize)
			}
		})
	}
}

func TestDetectReplaceRefuses(t *testing.T) {
	healthy := loadCapture(t, "raid5-integrity-stripes5")
	dropped := loadCapture(t, "raid5-member-dropped")
	for _, tc := range []struct {
		name string
		c    *capture
		edit func([]map[string]string)
		old  string
		want string
	}{
		{"missing but none is", healthy, nil, OldMissing, "no image lies on a missing PV"},
		{"not a member", healthy, nil, "/dev/nvme0n1", "holds no image"},
		{"vanished disk named", dropped, nil, "/dev/sdb", "run with --old missing"},
		{"another member while one is gone", dropped, nil, "/dev/sda", "replace that one first"},
		{"two gone", dropped, func(rows []map[string]string) {
			for _, r := range rows {
				if r["lv_name"] == "[tables_rimage_4_iorig]" {
					r["devices"] = "[unknown](1)"
				}
			}
		}, OldMissing, "2 members are gone"},
		{"not raid", healthy, nil, OldMissing, "raid0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := cloneRows(tc.c.lvs)
			if tc.edit != nil {
				tc.edit(rows)
			}
			all, _ := ParseLVRows(rows)
			lv := "tables"
			vg := "vg-hdd"
			if tc.name == "not raid" {
				vg, lv = "vg-nvme", "prefix"
			}
			_, err := DetectReplace(all, 4<<20, tc.c.inventory(t), vg, lv, tc.old)
			var ref *RefusedError
			if !errors.As(err, &ref) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want a refusal saying %q", err, tc.want)
			}
		})
	}
}

func cloneRows(rows []map[string]string) []map[string]string {
	out := make([]map[string]string, len(rows))
	for i, r := range rows {
		out[i] = map[string]string{}
		for k, v := range r {
			out[i][k] = v
		}
	}
	return out
}

// The plan per case: the exact commands, and integrity removed only in case c.
func TestReplacePlanPerCase(t *testing.T) {
	s := &Situation{VG: "vg-hdd", LV: "tables", Image: "tables_rimage_2", Images: 6, DataStripes: 5,
		ImageExtents: 59, ExtentSize: 4 << 20, ImageBytes: 59 << 22, Integrity: true, IntegrityMode: "journal", IntegrityBlockSize: 4096}
	want := map[ReplaceCase][]string{
		CasePresent: {
			"lvm pvcreate -- /dev/sdg", "lvm vgextend -- vg-hdd /dev/sdg",
			"lvm lvconvert --yes --replace /dev/sdc -- vg-hdd/tables /dev/sdg", "lvm vgreduce -- vg-hdd /dev/sdc"},
		CaseVanished: {
			"lvm pvcreate -- /dev/sdg", "lvm vgextend -- vg-hdd /dev/sdg",
			"lvm lvconvert --yes --repair -- vg-hdd/tables /dev/sdg", "lvm vgreduce --removemissing -- vg-hdd"},
		CaseMissingAtBoot: {
			"lvm lvconvert --yes --raidintegrity n -- vg-hdd/tables",
			"lvm lvchange --activate y --activationmode degraded -- vg-hdd/tables",
			"lvm pvcreate -- /dev/sdg", "lvm vgextend -- vg-hdd /dev/sdg",
			"lvm lvconvert --yes --repair -- vg-hdd/tables /dev/sdg", "lvm vgreduce --removemissing -- vg-hdd",
			"lvm lvconvert --yes --raidintegrity y --raidintegritymode journal --raidintegrityblocksize 4096 -- vg-hdd/tables"},
	}
	for c, cmds := range want {
		s.Case, s.OldPV = c, "[unknown]"
		if c == CasePresent {
			s.OldPV = "/dev/sdc"
		}
		p := BuildReplacePlan(s, "/dev/sdg", ReplaceRatesForTest())
		var got []string
		for _, cmd := range p.Commands() {
			got = append(got, strings.Join(cmd, " "))
		}
		if !slices.Equal(got, cmds) {
			t.Errorf("case %s:\n got %q\nwant %q", c, got, cmds)
		}
		removesIntegrity := strings.Contains(strings.Join(got, "\n"), "--raidintegrity n")
		if removesIntegrity != (c == CaseMissingAtBoot) {
			t.Errorf("case %s removes integrity: %v (lvm2 2.03.16 requires it only when the LV cannot be activated)", c, removesIntegrity)
		}
		var rebuild float64
		for _, st := range p.Steps {
			if st.Kind == RStepWaitRebuild && st.Estimate != nil {
				rebuild = st.Estimate.Seconds
			}
		}
		if want := float64(59<<22) / float64(100<<20); rebuild != want {
			t.Errorf("case %s: rebuild estimate %v s, want %v (image bytes / HDD rate)", c, rebuild, want)
		}
		if p.WithoutRedundancy != rebuild {
			t.Errorf("case %s: without redundancy %v, want the rebuild %v", c, p.WithoutRedundancy, rebuild)
		}
		if (p.WithoutIntegrity > 0) != (c == CaseMissingAtBoot) {
			t.Errorf("case %s: without integrity %v s", c, p.WithoutIntegrity)
		}
	}
}

// ReplaceRatesForTest: 100 MiB/s HDD, 50 MiB/s integrity.
func ReplaceRatesForTest() (r timeline.Rates) {
	r.HDD, r.Integrity = 100<<20, 50<<20
	return r
}

// replaceFake is lvm2 2.03.16 as far as a replacement goes, starting from
// a real capture: pvcreate, vgextend, lvconvert --replace/--repair (the
// image moves to the new PV, the array then syncs over a few polls),
// vgreduce, lvconvert --raidintegrity n/y, lvchange -ay
// --activationmode degraded (refused while integrity is on and a PV is
// missing, as lvm2 does).
type replaceFake struct {
	mu    sync.Mutex
	rows  []map[string]string
	pvs   []map[string]string
	vgs   []map[string]string
	calls [][]string
	// syncPolls: how many lvs calls a rebuild or recalculation stays below 100 %.
	syncPolls int
	pending   int
	pendingOf string // "rebuild" or "integrity"
	// killAt cancels the test's context when a command containing it runs
	// (a SIGKILL of tbhost: the command itself completes).
	killAt string
	kill   func()
}

func newReplaceFake(c *capture) *replaceFake {
	return &replaceFake{rows: cloneRows(c.lvs), pvs: cloneRows(c.pvs), vgs: cloneRows(c.vgs), syncPolls: 3}
}

func fakeReport(key string, rows []map[string]string) []byte {
	b, _ := json.Marshal(map[string]any{"report": []map[string]any{{key: rows}}})
	return b
}

func (f *replaceFake) writes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if len(c) > 1 && (c[1] == "lvs" || c[1] == "pvs" || c[1] == "vgs") {
			continue
		}
		out = append(out, strings.Join(c, " "))
	}
	return out
}

func (f *replaceFake) Run(ctx context.Context, argv ...string) (execx.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, argv)
	res := execx.Result{Argv: argv}
	failf := func(format string, a ...any) (execx.Result, error) {
		return res, &execx.CommandError{Argv: argv, ExitCode: 5, Stderr: fmt.Sprintf(format, a...)}
	}
	if argv[0] != "lvm" {
		return failf("unexpected %v", argv)
	}
	args := endOfOpts(argv)
	line := strings.Join(argv, " ")
	defer func() {
		if f.killAt != "" && strings.Contains(line, f.killAt) && f.kill != nil {
			f.kill()
		}
	}()
	switch args[1] {
	case "lvs":
		f.tick()
		res.Stdout = fakeReport("lv", f.rows)
	case "pvs":
		res.Stdout = fakeReport("pv", f.pvs)
	case "vgs":
		res.Stdout = fakeReport("vg", f.vgs)
	case "pvcreate":
		if f.pv(args[2]) != nil {
			return failf("Can't initialize physical volume %q of volume group without -ff", args[2])
		}
		f.pvs = append(f.pvs, map[string]string{"pv_name": args[2], "vg_name": "", "pv_pe_count": "63", "pv_pe_alloc_count": "0", "pv_attr": "a--"})
	case "vgextend":
		p := f.pv(args[3])
		if p == nil || p["vg_name"] != "" {
			return failf("Physical volume %s is not an orphan", args[3])
		}
		p["vg_name"] = args[2]
	case "lvchange":
		if f.missing() && f.integrity() {
			return failf("Integrity must be removed before degraded or partial activation of raid.")
		}
		for _, r := range f.rows {
			if r["vg_name"] == "vg-hdd" {
				r["lv_attr"] = activate(r["lv_attr"])
			}
		}
	case "lvconvert":
		return f.lvconvert(args, failf)
	case "vgreduce":
		if slices.Contains(args, "--removemissing") {
			if f.partial() {
				return failf("WARNING: Partial LV tables needs to be repaired or removed.")
			}
			f.pvs = slices.DeleteFunc(f.pvs, func(p map[string]string) bool { return p["pv_name"] == "[unknown]" })
			return res, nil
		}
		old := args[3]
		f.pvs = slices.DeleteFunc(f.pvs, func(p map[string]string) bool { return p["pv_name"] == old })
	default:
		return failf("fake: unknown %v", argv)
	}
	return res, nil
}

func endOfOpts(argv []string) []string {
	var out []string
	for _, a := range argv {
		if a != "--" {
			out = append(out, a)
		}
	}
	return out
}

func activate(attr string) string {
	if len(attr) < 5 {
		return attr
	}
	return attr[:4] + "a" + attr[5:]
}

func (f *replaceFake) pv(name string) map[string]string {
	for _, p := range f.pvs {
		if p["pv_name"] == name {
			return p
		}
	}
	return nil
}

func (f *replaceFake) missing() bool {
	for _, r := range f.rows {
		if strings.Contains(r["devices"], "[unknown]") {
			return true
		}
	}
	return false
}

func (f *replaceFake) partial() bool {
	for _, r := range f.rows {
		if r["lv_health_status"] == "partial" {
			return true
		}
	}
	return false
}

func (f *replaceFake) integrity() bool {
	for _, r := range f.rows {
		if r["segtype"] == "integrity" {
			return true
		}
	}
	return false
}

func (f *replaceFake) top() map[string]string {
	for _, r := range f.rows {
		if r["lv_name"] == "tables" {
			return r
		}
	}
	return nil
}

// tick advances a running rebuild or recalculation by one poll.
func (f *replaceFake) tick() {
	if f.pending <= 0 {
		return
	}
	f.pending--
	pct := fmt.Sprintf("%.2f", 100*float64(f.syncPolls-f.pending)/float64(f.syncPolls+1))
	if f.pending == 0 {
		pct = "100.00"
	}
	switch f.pendingOf {
	case "rebuild":
		t := f.top()
		t["sync_percent"] = pct
		if pct == "100.00" {
			t["raid_sync_action"] = "idle"
		}
	case "integrity":
		for _, r := range f.rows {
			if r["segtype"] == "integrity" {
				r["sync_percent"] = pct
			}
		}
	}
}

func (f *replaceFake) lvconvert(args []string, failf func(string, ...any) (execx.Result, error)) (execx.Result, error) {
	res := execx.Result{Argv: args}
	switch {
	case slices.Contains(args, "--repair") || slices.Contains(args, "--replace"):
		if !isActive(f.top()) {
			return failf("Unable to repair an inactive LV")
		}
		newPV := args[len(args)-1]
		p := f.pv(newPV)
		if p == nil || p["vg_name"] != "vg-hdd" {
			return failf("%s is not in VG vg-hdd", newPV)
		}
		old := "[unknown]"
		if i := slices.Index(args, "--replace"); i >= 0 {
			old = args[i+1]
			if f.top()["sync_percent"] != "100.00" {
				return failf("Unable to replace devices in vg-hdd/tables while it is not in-sync.")
			}
		}
		moved := false
		for _, r := range f.rows {
			if r["vg_name"] != "vg-hdd" {
				continue
			}
			if d := r["devices"]; strings.HasPrefix(d, old+"(") {
				r["devices"] = newPV + d[len(old):]
				moved = true
			}
			r["lv_health_status"] = ""
			if a := r["lv_attr"]; len(a) >= 9 && a[8] == 'p' {
				r["lv_attr"] = a[:8] + "-" + a[9:]
			}
		}
		if !moved {
			return failf("no image on %s", old)
		}
		p["pv_pe_alloc_count"] = "62"
		t := f.top()
		t["sync_percent"], t["raid_sync_action"] = "0.00", "recover"
		f.pending, f.pendingOf = f.syncPolls, "rebuild"
	case slices.Contains(args, "--raidintegrity"):
		i := slices.Index(args, "--raidintegrity")
		if args[i+1] == "n" {
			var keep []map[string]string
			orig := map[string]string{}
			for _, r := range f.rows {
				if strings.HasSuffix(r["lv_name"], "_iorig]") {
					orig[strings.TrimSuffix(r["lv_name"], "_iorig]")+"]"] = r["devices"]
				}
			}
			for _, r := range f.rows {
				n := r["lv_name"]
				if strings.HasSuffix(n, "_iorig]") || strings.HasSuffix(n, "_imeta]") {
					continue
				}
				if r["segtype"] == "integrity" {
					r["segtype"], r["devices"], r["lv_attr"] = "linear", orig[n], "i"+r["lv_attr"][1:]
					r["raidintegritymode"], r["raidintegrityblocksize"], r["integritymismatches"] = "", "-1", ""
				}
				if n == "tables" {
					r["raidintegritymode"], r["raidintegrityblocksize"], r["integritymismatches"] = "", "-1", ""
				}
				keep = append(keep, r)
			}
			f.rows = keep
			return res, nil
		}
		if f.missing() {
			return failf("Cannot add integrity while PV is missing.")
		}
		mode, bs := args[slices.Index(args, "--raidintegritymode")+1], args[slices.Index(args, "--raidintegrityblocksize")+1]
		var out []map[string]string
		for _, r := range f.rows {
			n := strings.Trim(r["lv_name"], "[]")
			if r["vg_name"] == "vg-hdd" && strings.Contains(n, "_rimage_") && r["segtype"] == "linear" {
				iorig := cloneRows([]map[string]string{r})[0]
				iorig["lv_name"] = "[" + n + "_iorig]"
				r["segtype"], r["devices"], r["lv_attr"] = "integrity", n+"_iorig(0)", "g"+r["lv_attr"][1:]
				r["raidintegritymode"], r["raidintegrityblocksize"], r["integritymismatches"], r["sync_percent"] = mode, bs, "0", "0.00"
				out = append(out, r, iorig)
				continue
			}
			if n == "tables" {
				r["raidintegritymode"], r["raidintegrityblocksize"], r["integritymismatches"] = mode, bs, "0"
			}
			out = append(out, r)
		}
		f.rows = out
		f.pending, f.pendingOf = f.syncPolls, "integrity"
	default:
		return failf("fake lvconvert: %v", args)
	}
	return res, nil
}

func isActive(r map[string]string) bool { a := r["lv_attr"]; return len(a) >= 5 && a[4] == 'a' }

type replaceHarness struct {
	c     *capture
	fake  *replaceFake
	inv   *blockdev.Inventory
	out   strings.Builder
	state string
	asked []string
	// looks: one entry per inventory read, whether it asked for signatures
	looks []bool
}

// probedLooks is how many of the inventory reads since look number from
// asked for signatures.
func (h *replaceHarness) probedLooks(from int) int {
	n := 0
	for _, sig := range h.looks[from:] {
		if sig {
			n++
		}
	}
	return n
}

func newReplaceHarness(t *testing.T, captureName string, newDisk *blockdev.Device) *replaceHarness {
	c := loadCapture(t, captureName)
	h := &replaceHarness{c: c, fake: newReplaceFake(c), state: t.TempDir()}
	h.inv = c.inventory(t, newDisk)
	return h
}

func (h *replaceHarness) replacer() Replacer {
	return Replacer{
		Runner: h.fake,
		Inventory: func(_ context.Context, signatures bool) (*blockdev.Inventory, error) {
			h.looks = append(h.looks, signatures)
			return h.inv, nil
		},
		Out:    &h.out,
		Sleep:  func(ctx context.Context, d time.Duration) error { return ctx.Err() },
		Uptime: func() (time.Duration, error) { return 80 * time.Second, nil },
		Confirm: func(q, want string) error {
			h.asked = append(h.asked, q)
			return errors.New("declined")
		},
	}
}

func (h *replaceHarness) opts(old string) ReplaceOptions {
	return ReplaceOptions{VG: "vg-hdd", LV: "tables", Old: old, New: "/dev/sdg", Yes: true, StateDir: h.state, Poll: time.Millisecond}
}

func TestReplaceRunsEachCaseToAVerifiedArray(t *testing.T) {
	for _, tc := range []struct {
		capture, old string
		want         []string
	}{
		{"raid5-integrity-stripes5", "/dev/sdc", []string{"pvcreate", "vgextend", "--replace /dev/sdc", "vgreduce -- vg-hdd /dev/sdc"}},
		{"raid5-member-dropped", OldMissing, []string{"pvcreate", "vgextend", "--repair", "--removemissing"}},
		{"raid5-missing-member-boot", OldMissing, []string{"--raidintegrity n", "--activationmode degraded", "pvcreate", "vgextend", "--repair", "--removemissing", "--raidintegrity y --raidintegritymode journal --raidintegrityblocksize 512"}},
	} {
		t.Run(tc.capture, func(t *testing.T) {
			h := newReplaceHarness(t, tc.capture, spare("sdg", labHDD, 512, 512))
			h.fake.syncPolls = 6
			rep, err := h.replacer().Replace(t.Context(), h.opts(tc.old))
			if err != nil {
				t.Fatalf("%v\n%s", err, h.out.String())
			}
			w := h.fake.writes()
			if len(w) != len(tc.want) {
				t.Fatalf("ran %q, want %d commands like %q", w, len(tc.want), tc.want)
			}
			for i := range w {
				if !strings.Contains(w[i], tc.want[i]) {
					t.Errorf("command %d: %q, want it to contain %q", i, w[i], tc.want[i])
				}
			}
			if !rep.Verified {
				t.Errorf("not verified: %v", rep.Verification)
			}
			if tc.old == OldMissing && strings.Contains(tc.capture, "boot") {
				if rep.OfflineSeconds != 80 || !strings.Contains(h.out.String(), "offline for 80s") {
					t.Errorf("offline time %v not reported:\n%s", rep.OfflineSeconds, h.out.String())
				}
			}
			if !strings.Contains(h.out.String(), "ETA") {
				t.Errorf("no progress with an ETA:\n%s", h.out.String())
			}
			// signatures are read once, for the new disk's guard; the looks
			// between the steps and before the verification add no reads
			// to the array's disks
			if len(h.looks) < 3 || !h.looks[0] || h.probedLooks(1) != 0 {
				t.Errorf("inventory reads asking for signatures: %v, want only the first", h.looks)
			}
			// a second run finds it done and runs nothing that writes
			before, looks := len(h.fake.writes()), len(h.looks)
			rep2, err := h.replacer().Replace(t.Context(), h.opts(tc.old))
			if err != nil || !rep2.Verified || len(h.fake.writes()) != before {
				t.Errorf("rerun after success: %v, verified %v, writes %q", err, rep2.Verified, h.fake.writes()[before:])
			}
			if h.probedLooks(looks) != 0 {
				t.Errorf("the rerun of a finished replacement read signatures: %v", h.looks[looks:])
			}
		})
	}
}

// A refused new disk: no command that writes runs, and nothing is recorded.
func TestReplaceRefusesTheNewDiskWritingNothing(t *testing.T) {
	fs := spare("sdg", labHDD, 512, 512)
	fs.Signatures = []blockdev.Signature{{Type: "ext4", Offset: 1080, Source: "probe"}}
	mounted := spare("sdg", labHDD, 512, 512)
	mounted.Mounts = []string{"/mnt"}
	system := spare("sdg", labHDD, 512, 512)
	system.Role, system.RoleWhy = blockdev.RoleSystem, "holds /"
	otherVG := spare("sdg", labHDD, 512, 512)
	for _, tc := range []struct {
		name string
		disk *blockdev.Device
		pv   map[string]string
		want string
	}{
		{"filesystem", fs, nil, "ext4 signature"},
		{"mounted", mounted, nil, "mounted at /mnt"},
		{"system disk", system, nil, "system disk"},
		{"too small", spare("sdg", 200<<20, 512, 512), nil, "too small"},
		{"4Kn into 512-byte blocks", spare("sdg", labHDD, 4096, 4096), nil, "logical blocks"},
		{"PV of another VG", otherVG, map[string]string{"pv_name": "/dev/sdg", "vg_name": "vg-other", "pv_attr": "a--"}, "PV of another VG"},
		{"a member", nil, nil, "already holds an image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			disk := tc.disk
			h := newReplaceHarness(t, "raid5-missing-member-boot", spare("sdz", labHDD, 512, 512))
			o := h.opts(OldMissing)
			if disk != nil {
				h.inv.Disks = append(h.inv.Disks, disk)
			} else {
				o.New = "/dev/sdc" // holds tables_rimage_0
			}
			if tc.pv != nil {
				h.fake.pvs = append(h.fake.pvs, tc.pv)
			}
			_, err := h.replacer().Replace(t.Context(), o)
			var ref *RefusedError
			if !errors.As(err, &ref) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want a refusal saying %q", err, tc.want)
			}
			if w := h.fake.writes(); len(w) != 0 {
				t.Errorf("a refusal ran %q", w)
			}
			if _, err := os.Stat(ReplaceStatePath(h.state, "vg-hdd", "tables")); err == nil {
				t.Error("a refusal wrote a state file")
			}
		})
	}
}

// The 512-byte-block rule: a 4Kn disk cannot carry 512-byte integrity blocks.
func TestGuardNewDiskBlockSizeAboveIntegrityBlocks(t *testing.T) {
	s := &Situation{VG: "vg-hdd", LV: "tables", Image: "tables_rimage_2", ImageExtents: 59, ExtentSize: 4 << 20,
		Integrity: true, IntegrityBlockSize: 512}
	probs, _ := GuardNewDisk(s, spare("sdg", labHDD, 4096, 4096), nil)
	if !strings.Contains(strings.Join(probs, " "), "larger than the array's integrity block size 512") {
		t.Errorf("problems %q", probs)
	}
	if probs, _ := GuardNewDisk(s, spare("sdg", labHDD, 512, 4096), nil); len(probs) != 0 {
		t.Errorf("a blank 512e disk of the same size refused: %q", probs)
	}
}

func TestReplaceDryRunAndConfirmation(t *testing.T) {
	h := newReplaceHarness(t, "raid5-member-dropped", spare("sdg", labHDD, 512, 512))
	o := h.opts(OldMissing)
	o.DryRun = true
	rep, err := h.replacer().Replace(t.Context(), o)
	if err != nil || rep.Plan == nil || rep.Plan.Situation.Case != CaseVanished {
		t.Fatalf("%v %+v", err, rep)
	}
	out := h.out.String()
	for _, want := range []string{"case b-vanished", "lvm lvconvert --yes --repair -- vg-hdd/tables /dev/sdg", "without redundancy", "without integrity:  none"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	if w := h.fake.writes(); len(w) != 0 {
		t.Errorf("dry run ran %q", w)
	}
	o.DryRun, o.Yes = false, false
	_, err = h.replacer().Replace(t.Context(), o)
	if err == nil || len(h.asked) != 1 || !strings.Contains(h.asked[0], "Type vg-hdd/tables") {
		t.Errorf("declined confirmation: %v, asked %q", err, h.asked)
	}
	if w := h.fake.writes(); len(w) != 0 {
		t.Errorf("a declined confirmation ran %q", w)
	}
	r := h.replacer()
	r.Confirm = nil
	if _, err := r.Replace(t.Context(), o); err == nil || !strings.Contains(err.Error(), "--yes") {
		t.Errorf("no terminal, no --yes: %v", err)
	}
}

// Killed (the context ends, as with SIGKILL between commands) after each
// command in turn: a rerun converges to the same commands, each run once.
func TestReplaceKilledAtEveryStepConverges(t *testing.T) {
	steps := []string{"--raidintegrity n", "--activationmode", "pvcreate", "vgextend", "--repair", "lvs", "--removemissing", "--raidintegrity y"}
	for _, at := range steps {
		t.Run(at, func(t *testing.T) {
			h := newReplaceHarness(t, "raid5-missing-member-boot", spare("sdg", labHDD, 512, 512))
			ctx, cancel := context.WithCancel(t.Context())
			h.fake.killAt, h.fake.kill = at, cancel
			if at == "lvs" { // during the rebuild wait
				h.fake.killAt = ""
				h.fake.syncPolls = 50
			}
			r := h.replacer()
			if at == "lvs" {
				n := 0
				r.Sleep = func(ctx context.Context, d time.Duration) error {
					if n++; n == 3 {
						cancel()
					}
					return ctx.Err()
				}
			}
			_, err := r.Replace(ctx, h.opts(OldMissing))
			if err == nil {
				t.Fatalf("not interrupted at %s", at)
			}
			h.fake.killAt = ""
			h.fake.syncPolls = 3
			looks := len(h.looks)
			rep, err := h.replacer().Replace(t.Context(), h.opts(OldMissing))
			if err != nil || !rep.Verified || !rep.Resumed {
				t.Fatalf("rerun: %v (verified %v, resumed %v)\n%s", err, rep.Verified, rep.Resumed, h.out.String())
			}
			if h.probedLooks(looks) != 0 {
				t.Errorf("the resumed run read signatures: %v", h.looks[looks:])
			}
			w := h.fake.writes()
			if len(w) != 7 {
				t.Errorf("commands over both runs: %q, want each of the 7 once", w)
			}
		})
	}
}

func TestReplaceStateRefusesAnotherDiskOrRequest(t *testing.T) {
	h := newReplaceHarness(t, "raid5-member-dropped", spare("sdg", labHDD, 512, 512))
	ctx, cancel := context.WithCancel(t.Context())
	h.fake.killAt, h.fake.kill = "vgextend", cancel
	if _, err := h.replacer().Replace(ctx, h.opts(OldMissing)); err == nil {
		t.Fatal("not interrupted")
	}
	o := h.opts(OldMissing)
	o.New = "/dev/sdz"
	h.inv.Disks = append(h.inv.Disks, spare("sdz", labHDD, 512, 512))
	if _, err := h.replacer().Replace(t.Context(), o); err == nil || !strings.Contains(err.Error(), "in progress") {
		t.Errorf("another new disk while one replacement is in progress: %v", err)
	}
	for _, d := range h.inv.Disks {
		if d.Name == "sdg" {
			d.Serial = "OTHER"
		}
	}
	if _, err := h.replacer().Replace(t.Context(), h.opts(OldMissing)); err == nil || !strings.Contains(err.Error(), "another disk under that name") {
		t.Errorf("a swapped new disk: %v", err)
	}
}

func TestUpdatedPlanPath(t *testing.T) {
	for in, want := range map[string]string{"plan.yaml": "plan.updated.yaml", "/a/b/p.yml": "/a/b/p.updated.yml", "plan": "plan.updated.yaml"} {
		if got := UpdatedPlanPath(in); got != want {
			t.Errorf("%s -> %s, want %s", in, got, want)
		}
	}
}

// The updated plan: the replaced member's device becomes the new disk, the
// fingerprint is the inventory's now, and the plan reads back through
// ParsePlan (what lvm status --plan and lvm apply do).
func TestUpdatedPlanSwapsTheDevice(t *testing.T) {
	l := newLab(t, PlanOptions{NoNVMe: true})
	dir := filepath.Join(l.dir, "now")
	if err := l.host.Write(dir); err != nil {
		t.Fatal(err)
	}
	inv, err := blockdev.Read(t.Context(), blockdev.Options{Root: dir})
	if err != nil {
		t.Fatal(err)
	}
	inv.Disks = append(inv.Disks, spare("sdg", l.host.Disks[0].Size, 512, 512))
	inv.Fingerprint = "after-replace"
	s := &Situation{VG: "vg-hdd", LV: "tables", Members: []string{"/dev/sda", "/dev/sdb", "/dev/sdd", "/dev/sde", "/dev/sdf"}}
	q, err := UpdatedPlan(l.plan, inv, s, "/dev/sdg", time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	oldID := l.plan.Arrays[0].Devices[2]
	if got := q.Arrays[0].Devices[2]; got != "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD7" {
		t.Errorf("device 2 of the updated plan %s (was %s), want the new disk", got, oldID)
	}
	for _, d := range q.Devices {
		if d.ID == oldID {
			t.Errorf("the old device %s is still in the plan", oldID)
		}
	}
	if q.InventoryFingerprint != "after-replace" || l.plan.InventoryFingerprint == "after-replace" {
		t.Errorf("fingerprint %s (the original plan's must not change: %s)", q.InventoryFingerprint, l.plan.InventoryFingerprint)
	}
	y, _ := q.YAML()
	if _, err := ParsePlan(y, "updated.yaml"); err != nil {
		t.Errorf("the updated plan does not read back: %v", err)
	}
	small := spare("sdh", l.host.Disks[0].Size-(8<<20), 512, 512)
	small.Serial, small.StableID, small.IDLinks = "HDD8", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD8", []string{"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD8"}
	inv.Disks = append(inv.Disks, small)
	if _, err := UpdatedPlan(l.plan, inv, s, "/dev/sdh", time.Unix(0, 0)); err == nil || !strings.Contains(err.Error(), "re-plan") {
		t.Errorf("a smaller disk changes the plan's sizing: %v", err)
	}
	s.Members = s.Members[:4]
	if _, err := UpdatedPlan(l.plan, inv, s, "/dev/sdg", time.Unix(0, 0)); err == nil {
		t.Error("two plan devices not among the members: want an error")
	}
}
