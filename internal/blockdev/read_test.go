package blockdev_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/blockdev/fixture"
	"github.com/tbhost/tbhost/internal/fixturetree"
)

// treeArchive is where a committed fixture tree is: testdata/NAME.tar.gz,
// except the reference host, kept once as the archive lvm embeds.
func treeArchive(name string) string {
	if name == "reference-host" {
		return filepath.Join("..", "..", "lvm", "refhost", "reference-host.tar.gz")
	}
	return filepath.Join("testdata", name+".tar.gz")
}

// tree unpacks a committed fixture tree and returns its root.
func tree(t *testing.T, name string) string {
	t.Helper()
	return fixturetree.Dir(t, treeArchive(name))
}

// treeNames lists every committed fixture tree.
func treeNames(t *testing.T) []string {
	t.Helper()
	archives, err := filepath.Glob(filepath.Join("testdata", "*.tar.gz"))
	if err != nil || len(archives) < 6 {
		t.Fatalf("testdata holds %d fixture archives (%v), want the 6 committed ones", len(archives), err)
	}
	names := []string{"reference-host"}
	for _, a := range archives {
		names = append(names, strings.TrimSuffix(filepath.Base(a), ".tar.gz"))
	}
	return names
}

func readTree(t *testing.T, name string) *blockdev.Inventory {
	t.Helper()
	inv, err := blockdev.Read(context.Background(), blockdev.Options{Root: tree(t, name)})
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func TestReferenceHost(t *testing.T) {
	inv := readTree(t, "reference-host")
	if inv.Hostname != "tb-ref" || len(inv.Disks) != 8 {
		t.Fatalf("host %q with %d disks", inv.Hostname, len(inv.Disks))
	}
	sda := inv.Find("sda")
	if sda == nil {
		t.Fatal("no sda")
	}
	want := blockdev.Device{Name: "sda", Serial: "ZAD0A1B1", WWN: "0x5000c500a1b2c301", Size: 6001175126016,
		LogicalBlockSize: 512, PhysicalBlockSize: 4096, Rotational: true, Transport: "sata", Scheduler: "mq-deadline",
		StableID: "/dev/disk/by-id/wwn-0x5000c500a1b2c301", Role: blockdev.RoleHDD, Model: "ST6000NM0115-1YZ110"}
	got := blockdev.Device{Name: sda.Name, Serial: sda.Serial, WWN: sda.WWN, Size: sda.Size, LogicalBlockSize: sda.LogicalBlockSize,
		PhysicalBlockSize: sda.PhysicalBlockSize, Rotational: sda.Rotational, Transport: sda.Transport, Scheduler: sda.Scheduler,
		StableID: sda.StableID, Role: sda.Role, Model: sda.Model}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sda:\n got %+v\nwant %+v", got, want)
	}
	if sda.BlockFormat() != "512e" {
		t.Errorf("sda block format %s", sda.BlockFormat())
	}
	for _, n := range []string{"nvme0n1", "nvme1n1"} {
		d := inv.Find(n)
		if d.Role != blockdev.RoleSystem {
			t.Errorf("%s role %s (%s), want system: it holds / and /boot through md RAID 1", n, d.Role, d.RoleWhy)
		}
		if len(d.Partitions) != 4 || d.Transport != "nvme" || d.Rotational {
			t.Errorf("%s: %d partitions, transport %s", n, len(d.Partitions), d.Transport)
		}
		p4 := d.Partitions[3]
		if p4.Size != 201<<30 || p4.Role != blockdev.RoleNVMe || len(p4.Busy()) != 0 || len(p4.Content()) != 0 {
			t.Errorf("%s: size %d role %s busy %v content %v", p4.Name, p4.Size, p4.Role, p4.Busy(), p4.Content())
		}
		if !strings.HasSuffix(p4.StableID, "-part4") || !strings.Contains(p4.StableID, d.Serial) {
			t.Errorf("%s stable id %q", p4.Name, p4.StableID)
		}
		p3 := d.Partitions[2]
		if p3.Role != blockdev.RoleSystem || len(p3.Holders) != 1 || p3.Holders[0].Kernel != "md126" {
			t.Errorf("%s: role %s holders %v", p3.Name, p3.Role, p3.Holders)
		}
		if !contains(p3.Mounts, "/ (via md126)") {
			t.Errorf("%s mounts %v, want / via md126", p3.Name, p3.Mounts)
		}
	}
	if inv.Find("/dev/disk/by-id/wwn-0x5000c500a1b2c303").Name != "sdc" || inv.Find("wwn-0x5000c500a1b2c303").Name != "sdc" {
		t.Error("lookup by id")
	}
	if d := inv.BySerial("ZAD0A1B6", ""); d == nil || d.Name != "sdf" {
		t.Error("lookup by serial")
	}
}

// The lab guest has no udev: serials come from VPD page 0x80 (SCSI) and
// device/serial (NVMe).
func TestLabGuestWithoutUdev(t *testing.T) {
	inv := readTree(t, "lab-guest")
	for i, n := range []string{"sda", "sdb", "sdc", "sdd", "sde", "sdf"} {
		d := inv.Find(n)
		if d.Serial != "HDD"+string(rune('1'+i)) || d.Role != blockdev.RoleHDD || d.LogicalBlockSize != 512 {
			t.Errorf("%s: serial %q role %s", n, d.Serial, d.Role)
		}
		if d.StableID != "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_"+d.Serial {
			t.Errorf("%s stable id %q", n, d.StableID)
		}
	}
	if d := inv.Find("nvme1n1"); d.Serial != "NVME2" || d.Role != blockdev.RoleNVMe {
		t.Errorf("nvme1n1: %+v", d)
	}
}

func TestBusyHost(t *testing.T) {
	inv := readTree(t, "busy-host")
	check := func(name string, busy, content string) {
		t.Helper()
		d := inv.Find(name)
		if d == nil {
			t.Fatalf("no %s", name)
		}
		b, c := strings.Join(d.Busy(), "; "), strings.Join(d.Content(), "; ")
		if !strings.Contains(b, busy) || !strings.Contains(c, content) {
			t.Errorf("%s: busy %q (want %q), content %q (want %q)", name, b, busy, c, content)
		}
	}
	check("sdg", "mounted at /backup", "xfs")
	check("sdh", "sdh1 in use as swap", "partitions sdh1")
	check("sdi", "", "LVM PV of VG vg-old")
	check("sdj", "", "ext4 signature at byte 1080")
	check("sdl2", "mounted at / (via sys-root)", "PV of VG sys")
	if d := inv.Find("sdl"); d.Role != blockdev.RoleSystem {
		t.Errorf("sdl role %s", d.Role)
	}
	if d := inv.Find("sdk"); d.BlockFormat() != "4Kn" {
		t.Errorf("sdk %s", d.BlockFormat())
	}
	if !inv.PVsKnown {
		t.Error("snapshot PVs not read")
	}
}

// A snapshot of a tree, replayed, gives the same inventory.
func TestSnapshotReplays(t *testing.T) {
	for _, name := range []string{"reference-host", "busy-host", "lab-guest"} {
		src := tree(t, name)
		dst := filepath.Join(t.TempDir(), "snap")
		orig, err := blockdev.Snapshot(context.Background(), blockdev.Options{Root: src}, dst)
		if err != nil {
			t.Fatal(err)
		}
		again, err := blockdev.Read(context.Background(), blockdev.Options{Root: dst})
		if err != nil {
			t.Fatal(err)
		}
		orig.Root, again.Root = "", ""
		a, _ := json.Marshal(orig)
		b, _ := json.Marshal(again)
		if string(a) != string(b) {
			t.Errorf("%s: replay differs:\n%s\n%s", name, a, b)
		}
		if again.Fingerprint != orig.Fingerprint {
			t.Errorf("%s: fingerprint changed", name)
		}
	}
}

func TestFingerprintChangesWithADisk(t *testing.T) {
	h := fixture.LabGuest()
	dir := t.TempDir()
	if err := h.Write(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	h.Disks[2].Serial = "HDD9" // a disk swapped
	if err := h.Write(filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	a, _ := blockdev.Read(context.Background(), blockdev.Options{Root: filepath.Join(dir, "a")})
	b, _ := blockdev.Read(context.Background(), blockdev.Options{Root: filepath.Join(dir, "b")})
	if a.Fingerprint == b.Fingerprint {
		t.Error("swapping a disk must change the fingerprint")
	}
}

func TestMissingRootIsAnError(t *testing.T) {
	_, err := blockdev.Read(context.Background(), blockdev.Options{Root: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "sys/block") {
		t.Fatalf("err %v", err)
	}
	if _, err := os.Stat(filepath.Join(tree(t, "reference-host"), blockdev.SnapshotMeta)); err != nil {
		t.Fatal(err)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Snapshots taken by tbhost itself inside the VM lab guest (real kernel
// sysfs, no udev): before and after `tbhost lvm apply`.
func TestRealLabGuestSnapshots(t *testing.T) {
	before := readTree(t, "lab-guest-real")
	synthetic := readTree(t, "lab-guest")
	if before.Fingerprint != synthetic.Fingerprint {
		t.Errorf("the lab-guest fixture is not faithful to the real guest: fingerprint %s vs %s", synthetic.Fingerprint, before.Fingerprint)
	}
	for _, d := range before.Disks {
		if d.Serial == "" || d.StableID == "" || len(d.Busy())+len(d.Content()) != 0 {
			t.Errorf("%s before apply: serial %q id %q busy %v content %v", d.Name, d.Serial, d.StableID, d.Busy(), d.Content())
		}
	}
	after := readTree(t, "lab-guest-real-applied")
	for _, d := range after.Disks {
		vg := "vg-hdd"
		if d.Transport == "nvme" {
			vg = "vg-nvme"
		}
		if d.PV == nil || d.PV.VG != vg || len(d.Holders) == 0 || !d.HasSignature("LVM2_member") {
			t.Errorf("%s after apply: pv %+v holders %v signatures %v", d.Name, d.PV, d.Holders, d.Signatures)
		}
	}
	if h := after.Find("sdd").Holders; len(h) != 3 || !strings.HasPrefix(h[0].Name, "vg--hdd-tables_r") {
		t.Errorf("sdd holders %v", h)
	}
}

// StableIDUnder (what tbhost monitor names member disks by) must pick the
// same link as the inventory, for every disk and partition of every tree.
func TestStableIDUnderAgreesWithInventory(t *testing.T) {
	named, parts := 0, 0
	for _, name := range treeNames(t) {
		root := tree(t, name)
		inv, err := blockdev.Read(context.Background(), blockdev.Options{Root: root})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range inv.All() {
			got := blockdev.StableIDUnder(root, d.Name)
			if got != d.StableID {
				t.Errorf("%s %s: StableIDUnder %q, inventory %q", name, d.Name, got, d.StableID)
			}
			if got != "" {
				named++
				if d.Kind == "part" {
					parts++
				}
			}
		}
	}
	if named < 10 || parts == 0 {
		t.Errorf("only %d devices (%d partitions) had an id: the trees lack by-id links", named, parts)
	}
	ref := tree(t, "reference-host")
	if got := blockdev.StableIDUnder(ref, "sda"); got != "/dev/disk/by-id/wwn-0x5000c500a1b2c301" {
		t.Errorf("reference sda: %q, want its wwn- link", got)
	}
	if got := blockdev.StableIDUnder(ref, "sdzz"); got != "" {
		t.Errorf("unknown disk: %q", got)
	}
}

// Without a wwn- link the link holding the disk's serial wins, for the disk
// and its partitions (whose serial is read from the disk).
func TestStableIDUnderUsesTheSerial(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(s+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sys/block/sdq/dev", "65:0")
	write("sys/block/sdq/device/serial", "ZAD0A1B9")
	write("sys/block/sdq/sdq1/partition", "1")
	byID := filepath.Join(root, "dev/disk/by-id")
	if err := os.MkdirAll(byID, 0o755); err != nil {
		t.Fatal(err)
	}
	// "a-alias" sorts first and has no serial: it must not win
	for link, target := range map[string]string{"a-alias": "sdq", "ata-ST6000_ZAD0A1B9": "sdq",
		"a-alias-part1": "sdq1", "ata-ST6000_ZAD0A1B9-part1": "sdq1"} {
		if err := os.Symlink("../../"+target, filepath.Join(byID, link)); err != nil {
			t.Fatal(err)
		}
	}
	for dev, want := range map[string]string{"sdq": "/dev/disk/by-id/ata-ST6000_ZAD0A1B9", "sdq1": "/dev/disk/by-id/ata-ST6000_ZAD0A1B9-part1"} {
		if got := blockdev.StableIDUnder(root, dev); got != want {
			t.Errorf("%s: %q, want %q", dev, got, want)
		}
	}
}
