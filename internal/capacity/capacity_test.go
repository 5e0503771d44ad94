package capacity

import (
	"testing"
)

// The reference host's LVs (tbhost lvm plan --example): vg-nvme/prefix is
// 102,910 extents of 4 MiB, vg-hdd/tables 7,097,085.
const (
	refPrefixLV = 102910 * 4 << 20
	refTablesLV = 7097085 * 4 << 20
)

// Figures read with dumpe2fs -h and statfs of a loop mount after the real
// mkfs.ext4 1.47.0 on sparse files of these sizes (capacity_real_test.go
// repeats the measurement wherever mkfs.ext4 is installed).
func TestExt4MatchesMeasuredMkfs(t *testing.T) {
	cases := []struct {
		name               string
		size               int64
		o                  Ext4Options
		overhead, inodes   int64 // blocks, inodes (dumpe2fs)
		fBlocks, available int64 // statfs f_blocks, f_bavail (blocks)
	}{
		// plain mkfs.ext4 (Debian defaults: 16 KiB per inode, 5 % reserve):
		// 105379840 blocks in 3216 groups of 8192 inodes (512 inode-table
		// blocks + 2 bitmaps) = 1,653,024; 18 backup groups (0, 1, 3^1..7,
		// 5^1..5, 7^1..4) of 1 + 51 GDT + 1024 reserved GDT = 19,368; a 1 GiB
		// journal = 262,144: 1,934,536 blocks. f_bavail = 105379840 -
		// 1934536 - 7 used - 5268992 reserved - 4096 delalloc = 98,172,209.
		{"prefix plain mkfs", refPrefixLV, Ext4Options{4096, 256, 16384, 5}, 1934536, 26345472, 103445304, 98172209},
		{"prefix tbhost", refPrefixLV, Ext4Options{4096, 256, 1 << 20, 0}, 313672, 411648, 105066168, 105062065},
		// 7,267,415,040 blocks: above 2^32, so no resize inode; 221,784
		// groups of 32 inodes (2 inode-table blocks + 2 bitmaps) = 887,136;
		// 26 backup groups of 1 + 3466 GDT = 90,142; journal 262,144.
		{"tables tbhost", refTablesLV, Ext4Options{4096, 256, 4 << 20, 1}, 1239422, 7097088, 7266175618, 7193497366},
	}
	for _, c := range cases {
		u, err := Ext4(c.size, c.o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := u.Overhead / 4096; got != c.overhead {
			t.Errorf("%s: overhead %d blocks, mkfs made %d", c.name, got, c.overhead)
		}
		if u.Inodes != c.inodes {
			t.Errorf("%s: %d inodes, mkfs made %d", c.name, u.Inodes, c.inodes)
		}
		if got := u.Size / 4096; got != c.fBlocks {
			t.Errorf("%s: f_blocks %d, statfs said %d", c.name, got, c.fBlocks)
		}
		if got := u.Available / 4096; got != c.available {
			t.Errorf("%s: f_bavail %d, statfs said %d", c.name, got, c.available)
		}
	}
}

func TestXFSNeverPromisesMoreThanMeasured(t *testing.T) {
	cases := []struct {
		name               string
		size               int64
		o                  XFSOptions
		fBlocks, available int64
	}{
		// mkfs.xfs 6.1 on sparse files, mounted read-write (statfs).
		{"prefix plain", refPrefixLV, XFSOptions{}, 105328385, 104585760},
		{"prefix raid0 su=64k sw=2", refPrefixLV, XFSOptions{64 << 10, 128 << 10}, 105328128, 104585342},
		{"tables plain", refTablesLV, XFSOptions{}, 7266893312, 7216219018},
		{"tables raid5 su=64k sw=5", refTablesLV, XFSOptions{64 << 10, 320 << 10}, 7266892800, 7216218445},
	}
	for _, c := range cases {
		u, err := XFS(c.size, c.o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := u.Size / 4096; got != c.fBlocks {
			t.Errorf("%s: f_blocks %d, statfs said %d", c.name, got, c.fBlocks)
		}
		got := u.Available / 4096
		if got > c.available {
			t.Errorf("%s: model promises %d blocks, the kernel gives %d", c.name, got, c.available)
		}
		if slack := float64(c.available-got) / float64(c.fBlocks); slack > 0.0005 {
			t.Errorf("%s: model %d blocks, kernel %d: %.4f %% too pessimistic", c.name, got, c.available, 100*slack)
		}
	}
}

// The bug of issue 15: plain mkfs.ext4 leaves 374.5 GiB of the reference
// host's prefix LV, the full prefix store needs 385.41 GiB.
func TestFullPrefixStoreFitsOnlyWithTbhostOptions(t *testing.T) {
	set := FullSet()
	if set.Files != 3022 || set.Bytes != 18_550_113_699_360 {
		t.Fatalf("full set: %d files, %d bytes; want 3022 and 18550113699360 (syzygy-tables.info bytes.tsv)", set.Files, set.Bytes)
	}
	need := Need(set.Files, set.PrefixBytes, 4096)
	plain, err := Ext4(refPrefixLV, Ext4Options{4096, 256, 16384, 5})
	if err != nil {
		t.Fatal(err)
	}
	if f := Check("prefix store 3-7", need, plain.Available); f.Fits {
		t.Errorf("plain mkfs.ext4: %s; want does not fit", f.Message)
	}
	for _, fs := range []string{"ext4", "xfs"} {
		u, err := Usable(RolePrefix, fs, refPrefixLV, XFSOptions{64 << 10, 128 << 10})
		if err != nil {
			t.Fatal(err)
		}
		f := Check("prefix store 3-7", need, u.Available)
		if !f.Fits || f.Headroom < 10<<30 {
			t.Errorf("%s: %s; want a fit with at least 10 GiB headroom", fs, f.Message)
		}
		tables, err := Usable(RoleTables, fs, refTablesLV, XFSOptions{64 << 10, 320 << 10})
		if err != nil {
			t.Fatal(err)
		}
		if f := Check("tables 3-7", Need(set.Files, set.Bytes, 4096), tables.Available); !f.Fits {
			t.Errorf("%s: %s", fs, f.Message)
		}
	}
}

func TestSuperBackupGroups(t *testing.T) {
	var got []uint64
	for g := uint64(0); g < 130; g++ {
		if hasSuperBackup(g) {
			got = append(got, g)
		}
	}
	want := []uint64{0, 1, 3, 5, 7, 9, 25, 27, 49, 81, 125}
	if len(got) != len(want) {
		t.Fatalf("backup groups %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("backup groups %v, want %v", got, want)
		}
	}
}

func TestMkfsArgs(t *testing.T) {
	a, err := MkfsArgs(RolePrefix, "ext4")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := join(a), "-b 4096 -I 256 -i 1048576 -m 0"; got != want {
		t.Errorf("prefix ext4 args %q, want %q", got, want)
	}
	a, _ = MkfsArgs(RoleTables, "ext4")
	if got, want := join(a), "-b 4096 -I 256 -i 4194304 -m 1"; got != want {
		t.Errorf("tables ext4 args %q, want %q", got, want)
	}
	if a, _ := MkfsArgs(RoleTables, "xfs"); len(a) != 0 {
		t.Errorf("xfs args %q, want none", a)
	}
	if _, err := MkfsArgs(RoleTables, "btrfs"); err == nil {
		t.Error("btrfs accepted")
	}
	if _, err := Ext4(1<<30, Ext4Options{4096, 256, 100, 0}); err == nil {
		t.Error("inode ratio 100 accepted")
	}
}

func join(a []string) string {
	s := ""
	for i, x := range a {
		if i > 0 {
			s += " "
		}
		s += x
	}
	return s
}
