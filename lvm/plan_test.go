package lvm

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/blockdev"
)

func inventory(t testing.TB, tree string) *blockdev.Inventory {
	t.Helper()
	inv, err := blockdev.Read(context.Background(), blockdev.Options{Root: fixtureTree(t, tree)})
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func fixedOpts(o PlanOptions) PlanOptions {
	o.Now = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	o.UUID = func() string { return "0b3c2f1e-1111-4222-8333-444455556666" }
	return o
}

func mustPlan(t *testing.T, inv *blockdev.Inventory, o PlanOptions) *Plan {
	t.Helper()
	p, err := MakePlan(inv, fixedOpts(o))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func refused(t *testing.T, inv *blockdev.Inventory, o PlanOptions, wantAll ...string) {
	t.Helper()
	_, err := MakePlan(inv, fixedOpts(o))
	var re *RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("plan %+v: err %v, want a refusal", o, err)
	}
	for _, w := range wantAll {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal %q does not say %q", err, w)
		}
	}
}

func TestExamplePlan(t *testing.T) {
	inv, err := ReferenceInventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p := mustPlan(t, inv, PlanOptions{})
	if len(p.Arrays) != 2 {
		t.Fatalf("%d arrays", len(p.Arrays))
	}
	tb, px := p.Arrays[0], p.Arrays[1]
	if tb.VG != "vg-hdd" || tb.LV != "tables" || tb.Type != "raid5" || tb.DataStripes != 5 || len(tb.Devices) != 6 {
		t.Errorf("tables: %+v", tb)
	}
	if !tb.Integrity.Enabled || tb.Integrity.BlockSize != 4096 || tb.Integrity.Mode != "journal" || !strings.Contains(tb.Integrity.Why, "512e") {
		t.Errorf("integrity %+v", tb.Integrity)
	}
	if tb.Extents%5 != 0 || tb.Extents/5 != tb.Layout.ImageExtents {
		t.Errorf("extents %d not 5 x image %d", tb.Extents, tb.Layout.ImageExtents)
	}
	if px.VG != "vg-nvme" || px.Type != "raid0" || px.DataStripes != 2 {
		t.Errorf("prefix %+v", px)
	}
	for _, id := range px.Devices {
		if !strings.HasSuffix(id, "-part4") {
			t.Errorf("prefix device %s: want the free 201 GiB partitions", id)
		}
	}
	if px.Size < 400<<30 || px.Size > 402<<30 {
		t.Errorf("prefix %d bytes, want about 2 x 201 GiB", px.Size)
	}
	var lvcreate Command
	for _, c := range p.Commands {
		if len(c) > 1 && c[1] == "lvcreate" && strings.Contains(strings.Join(c, " "), "raid5") {
			lvcreate = c
		}
	}
	s := strings.Join(lvcreate, " ")
	for _, w := range []string{"--stripes 5", "--raidintegrity y", "--raidintegrityblocksize 4096", "--extents 7097085", "--name tables -- vg-hdd /dev/disk/by-id/wwn-"} {
		if !strings.Contains(s, w) {
			t.Errorf("lvcreate %q lacks %q", s, w)
		}
	}
	if strings.Contains(s, "%FREE") {
		t.Errorf("lvcreate must not use %%FREE with integrity: %s", s)
	}
	// --json has the documented fields
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Arrays []struct {
			VG, LV, Type string
			DataStripes  *int     `json:"data_stripes"`
			Devices      []string `json:"devices"`
			Extents      *int64   `json:"extents"`
			Integrity    *struct {
				Enabled   *bool   `json:"enabled"`
				Mode      *string `json:"mode"`
				BlockSize *int    `json:"blocksize"`
			} `json:"integrity"`
		} `json:"arrays"`
		Commands [][]string `json:"commands"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	a := doc.Arrays[0]
	if a.VG != "vg-hdd" || a.DataStripes == nil || *a.DataStripes != 5 || a.Extents == nil || a.Integrity == nil ||
		a.Integrity.Enabled == nil || a.Integrity.Mode == nil || a.Integrity.BlockSize == nil || len(a.Devices) != 6 || len(doc.Commands) == 0 {
		t.Errorf("JSON lacks fields: %s", b)
	}
}

func TestPlanYAMLRoundTrip(t *testing.T) {
	p := mustPlan(t, inventory(t, "reference-host"), PlanOptions{TablesFS: "ext4", PrefixFS: "xfs"})
	y, err := p.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(y), "[lvm, pvcreate, --, /dev/disk/by-id/wwn-0x5000c500a1b2c301]") {
		t.Errorf("commands not one per line:\n%s", y)
	}
	back, err := ParsePlan(y, "plan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, p) {
		t.Errorf("round trip differs")
	}
	if back.Arrays[0].Filesystem.Fstab != "UUID=0b3c2f1e-1111-4222-8333-444455556666 /srv/syzygy ext4 defaults,noatime,nofail 0 2" {
		t.Errorf("fstab %q", back.Arrays[0].Filesystem.Fstab)
	}
	// a hand-edited command is refused
	edited := strings.Replace(string(y), "--stripes, \"5\"", "--stripes, \"2\"", 1)
	if edited == string(y) {
		edited = strings.Replace(string(y), "[lvm, lvcreate, --yes, --wipesignatures, y, --type, raid5, --stripes, \"5\"", "[lvm, lvcreate, --yes, --wipesignatures, y, --type, raid5, --stripes, \"2\"", 1)
	}
	if edited == string(y) {
		t.Fatalf("could not edit the plan:\n%s", y)
	}
	if _, err := ParsePlan([]byte(edited), "edited.yaml"); err == nil || !strings.Contains(err.Error(), "edited by hand") {
		t.Errorf("edited plan: err %v", err)
	}
	if _, err := ParsePlan([]byte("version: 1\nbogus: 2\n"), "x.yaml"); err == nil {
		t.Error("unknown fields must be refused")
	}
}

func TestLabGuestPlan(t *testing.T) {
	p := mustPlan(t, inventory(t, "lab-guest"), PlanOptions{})
	tb := p.Arrays[0]
	if tb.Extents > 300 || tb.Extents < 275 || tb.DataStripes != 5 {
		t.Errorf("lab tables %d extents (lvm2 accepted at most 300)", tb.Extents)
	}
	if tb.Integrity.BlockSize != 4096 || !strings.Contains(tb.Integrity.Why, "512n") {
		t.Errorf("512n disks: %+v", tb.Integrity)
	}
	p512 := mustPlan(t, inventory(t, "lab-guest"), PlanOptions{IntegrityBlockSize: 512})
	if p512.Arrays[0].Integrity.BlockSize != 512 {
		t.Errorf("512n with 512 asked: %d", p512.Arrays[0].Integrity.BlockSize)
	}
	px := p.Arrays[1]
	if px.Type != "raid0" || px.Extents != 62 {
		t.Errorf("lab prefix %+v (lvm made 62 extents of 2 x 128 MiB)", px)
	}
	if p.Devices[0].Path != "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD1" {
		t.Errorf("device path %s", p.Devices[0].Path)
	}
}

func TestPlanRefusals(t *testing.T) {
	busy := inventory(t, "busy-host")
	ref := inventory(t, "reference-host")
	six := []string{"sda", "sdb", "sdc", "sdd", "sde", "sdf"}
	refused(t, ref, PlanOptions{HDDs: []string{"sda", "sdb"}}, "at least 3 HDDs")
	refused(t, ref, PlanOptions{HDDs: []string{"sda", "sdb", "sdx"}}, "--hdd sdx: no such device")
	refused(t, ref, PlanOptions{NVMes: []string{"nvme0n1"}}, "nvme0n1 is the system disk")
	refused(t, ref, PlanOptions{NVMes: []string{"nvme0n1p3", "nvme1n1p4"}}, "nvme0n1p3 is in use", "mounted at / (via md126)")
	refused(t, busy, PlanOptions{}, "sdg is in use: mounted at /backup", "sdh is in use: sdh1 in use as swap", "sdi is a PV of another VG (vg-old)")
	refused(t, busy, PlanOptions{HDDs: append(six, "sdk")}, "mixes logical block sizes", "4096 bytes: sdk")
	refused(t, busy, PlanOptions{HDDs: append(six, "sdj")}, "differ in size", "--allow-size-mismatch")
	refused(t, ref, PlanOptions{HDDs: []string{"sda", "sda", "sdb"}}, "named twice")
	// a device given to the other array's flag is refused in that flag's
	// words (it read "sda is named twice", or arrays[1].devices: ... "a
	// linear array is built on nvme devices only")
	for _, o := range []PlanOptions{{NVMes: []string{"sda"}}, {HDDs: []string{"sdb", "sdc", "sdd"}, NVMes: []string{"sda"}}} {
		refused(t, ref, o, "--nvme sda: sda is a rotational disk (an HDD)", "HDDs go with --hdd")
		if _, err := MakePlan(ref, fixedOpts(o)); err != nil && (strings.Contains(err.Error(), "named twice") || strings.Contains(err.Error(), "arrays[")) {
			t.Errorf("--nvme sda: %v", err)
		}
	}
	refused(t, ref, PlanOptions{HDDs: []string{"sda", "sdb", "nvme1n1p4"}}, "--hdd nvme1n1p4: nvme1n1p4 is not rotational", "flash devices go with --nvme")
	refused(t, ref, PlanOptions{PrefixSize: 500 << 30}, "--prefix-size 500 GiB")
	refused(t, ref, PlanOptions{Wipe: []string{"sdz"}}, "--wipe sdz: no such device")
	refused(t, busy, PlanOptions{HDDs: []string{"sda", "sdb", "sdk"}, IntegrityBlockSize: 512}, "mixes logical block sizes")

	// the wipe flag makes a PV of another VG plannable, marked wipe: true
	p := mustPlan(t, busy, PlanOptions{HDDs: []string{"sda", "sdb", "sdi", "sdj"}, Wipe: []string{"sdi", "sdj"}, AllowSizeMismatch: true})
	if len(p.Arrays) != 1 {
		t.Errorf("busy host has no free NVMe: %d arrays", len(p.Arrays))
	}
	wiped := 0
	for _, d := range p.Devices {
		if d.Wipe {
			wiped++
		}
	}
	if wiped != 2 || strings.Join(p.Commands[0], " ") != "wipefs --all /dev/disk/by-id/ata-WDC_WD20EFRX-68E_WD-I1" {
		t.Errorf("wipe: %d devices, first command %v", wiped, p.Commands[0])
	}
	if !strings.Contains(strings.Join(p.Warnings, "\n"), "losing") {
		t.Errorf("size mismatch accepted without a warning: %v", p.Warnings)
	}
	// without --wipe, a device with a signature is planned but flagged
	p = mustPlan(t, busy, PlanOptions{HDDs: []string{"sda", "sdb", "sdc", "sdd", "sde", "sdf"}, IntegrityBlockSize: 512})
	w := strings.Join(p.Warnings, "\n")
	if !strings.Contains(w, "512e") || !strings.Contains(w, "--integrity-blocksize 512 ignored") {
		t.Errorf("512 asked on 512e: warnings %q", w)
	}
	p = mustPlan(t, busy, PlanOptions{HDDs: []string{"sda", "sdb", "sdj"}, AllowSizeMismatch: true})
	if w := strings.Join(p.Warnings, "\n"); !strings.Contains(w, "sdj holds data (ext4 signature at byte 1080)") || !strings.Contains(w, "--wipe sdj") {
		t.Errorf("signature not flagged: %q", w)
	}
}

func TestIntegrityBlockSizeRule(t *testing.T) {
	dev := func(l, p int64) []*blockdev.Device {
		return []*blockdev.Device{{Name: "x", LogicalBlockSize: l, PhysicalBlockSize: p}}
	}
	for _, c := range []struct {
		lbs, pbs int64
		asked    int
		want     int
		refuse   bool
		warn     bool
	}{
		{4096, 4096, 0, 4096, false, false},
		{4096, 4096, 512, 0, true, false}, // lvcreate refuses < 4096 on 4Kn
		{512, 4096, 0, 4096, false, false},
		{512, 4096, 512, 4096, false, true}, // 512e: silently 4096
		{512, 512, 0, 4096, false, false},
		{512, 512, 512, 512, false, false},
		{512, 512, 1024, 1024, false, false},
	} {
		bs, why, warn, refuse := integrityBlockSize(dev(c.lbs, c.pbs), c.asked)
		if bs != c.want || (len(refuse) > 0) != c.refuse || (len(warn) > 0) != c.warn || (!c.refuse && why == "") {
			t.Errorf("%d/%d asked %d: got %d warn %v refuse %v why %q", c.lbs, c.pbs, c.asked, bs, warn, refuse, why)
		}
	}
}
