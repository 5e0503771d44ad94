package prefix

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Issue 15: extract and plan count the space the running user can really
// write, f_bavail, and never ext4's root reserve (f_bfree - f_bavail), for
// root neither.
func TestWritableIsBavailInFragmentUnits(t *testing.T) {
	st := unix.Statfs_t{Bsize: 1 << 20, Frsize: 4096, Blocks: 1000, Bfree: 500, Bavail: 450}
	if got, want := Writable(&st), int64(450*4096); got != want {
		t.Errorf("Writable = %d, want f_bavail x f_frsize = %d (not f_bfree %d, not f_bsize units)", got, want, 500*4096)
	}
	st.Frsize = 0 // kernels that leave it unset: f_bsize
	if got, want := Writable(&st), int64(450<<20); got != want {
		t.Errorf("without f_frsize: %d, want %d", got, want)
	}
	st = unix.Statfs_t{Frsize: 4096, Bavail: 1 << 62}
	if got := Writable(&st); got != 0 {
		t.Errorf("overflowing f_bavail: %d, want 0 (nothing trusted)", got)
	}
}

// A real ext4 with a root reserve, filled by root up to the reserve:
// root could still write there, but extract refuses before writing
// anything, as root too, and prefix plan's capacity (StoreUsable) does not
// count the reserve either.
func TestExtractDoesNotUseRootReserve(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP: mounting a small ext4 image needs root (the rule itself: TestWritableIsBavailInFragmentUnits)")
	}
	t.Setenv("PATH", os.Getenv("PATH")+":/usr/sbin:/sbin")
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		t.Skip("SKIP: mkfs.ext4 is not installed (Debian: e2fsprogs)")
	}
	img := filepath.Join(t.TempDir(), "store.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 64<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-m", "25", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v %s", err, out)
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		t.Skipf("SKIP: no loop mount here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	var st unix.Statfs_t
	if err := unix.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	// root fills what an ordinary user could write, less one block
	fill := int64(st.Bavail-1) * st.Frsize
	f, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Fallocate(int(f.Fd()), 0, 0, fill); err != nil {
		f.Close()
		t.Skipf("SKIP: fallocate: %v", err)
	}
	f.Close()
	if err := unix.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(mnt, "store")
	if err := os.Mkdir(store, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	reserve := int64(st.Bfree-st.Bavail) * st.Frsize
	tables, _ := writeSet(t)
	srcs, _ := FindTables([]string{tables})
	rep, err := Extract(context.Background(), ParseAll(context.Background(), srcs, 1), ExtractOptions{Store: store})
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("extract as root into the root reserve: %v, want ErrNoSpace", err)
	}
	if rep.NeededBytes >= reserve {
		t.Fatalf("the test proves nothing: the set needs %d, the reserve is only %d", rep.NeededBytes, reserve)
	}
	if rep.FreeBytes != int64(st.Bavail)*st.Frsize {
		t.Errorf("extract counted %d free, want f_bavail %d (the reserve %d is root's)", rep.FreeBytes, int64(st.Bavail)*st.Frsize, reserve)
	}
	ents, _ := os.ReadDir(store)
	for _, e := range ents {
		if e.Name() != LockName {
			t.Errorf("refused run wrote %s", e.Name())
		}
	}
	usable, err := StoreUsable(store)
	if err != nil || usable >= rep.NeededBytes {
		t.Errorf("StoreUsable = %d, %v; want f_bavail only, below the %d the set needs", usable, err, rep.NeededBytes)
	}
	if _, err := StoreUsable(filepath.Join(mnt, "not-there")); err == nil || !strings.Contains(err.Error(), "not-there") {
		t.Errorf("a missing store: %v", err)
	}
}

// StoreUsable adds the blocks the store's own files hold (a rerun keeps or
// rewrites them) and nothing else in the directory.
func TestStoreUsableCountsTheStoresOwnFiles(t *testing.T) {
	store := t.TempDir()
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = 1
	}
	var want int64
	for _, n := range []string{"KQvK.rtbw" + PrefixSuffix, ".KRvK.rtbw" + PrefixSuffix + ".tmp", ManifestName, "unrelated.iso", "KQvK.rtbw"} {
		p := filepath.Join(store, n)
		if err := os.WriteFile(p, big, 0o644); err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(n, "prefix") || n == ManifestName {
			want += st.Blocks * 512
		}
	}
	if err := os.Mkdir(filepath.Join(store, "dir"+PrefixSuffix), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := storeFilesBytes(store)
	if err != nil || got != want || want < 3<<20 {
		t.Errorf("storeFilesBytes = %d, %v; want %d (the two prefixes and the manifest, not the others)", got, err, want)
	}
	if _, err := storeFilesBytes(filepath.Join(store, "gone")); err == nil {
		t.Error("a missing store must be an error")
	}
}
