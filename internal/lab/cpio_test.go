package lab

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

type cpioEntry struct {
	Mode uint32
	Data string
	Rdev [2]uint32
}

// readNewc parses a newc archive (test-only reader) and checks alignment.
func readNewc(t *testing.T, b []byte) map[string]cpioEntry {
	t.Helper()
	out := map[string]cpioEntry{}
	off := 0
	field := func(i int) uint32 {
		v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
		if err != nil {
			t.Fatalf("bad header field at %d: %v", off, err)
		}
		return uint32(v)
	}
	for {
		if off%4 != 0 {
			t.Fatalf("header at %d not 4-byte aligned", off)
		}
		if string(b[off:off+6]) != "070701" {
			t.Fatalf("bad magic at %d: %q", off, b[off:off+6])
		}
		mode, size, namesize := field(1), int(field(6)), int(field(11))
		rdev := [2]uint32{field(9), field(10)}
		name := string(b[off+110 : off+110+namesize-1])
		p := off + 110 + namesize
		p = (p + 3) &^ 3
		data := string(b[p : p+size])
		off = (p + size + 3) &^ 3
		if name == "TRAILER!!!" {
			break
		}
		out[name] = cpioEntry{Mode: mode, Data: data, Rdev: rdev}
	}
	if len(b)%512 != 0 {
		t.Errorf("archive length %d not padded to 512", len(b))
	}
	for _, c := range b[off:] {
		if c != 0 {
			t.Fatal("non-zero bytes after the trailer")
		}
	}
	return out
}

func TestCpioTreeRoundTrip(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "sbin"), 0o755)
	os.MkdirAll(filepath.Join(root, "lib/modules/6.1.0/kernel"), 0o755)
	os.WriteFile(filepath.Join(root, "sbin/lvm"), []byte("ELF..."), 0o755)
	os.WriteFile(filepath.Join(root, "init"), []byte("#!/bin/sh\necho hi\n"), 0o755)
	os.WriteFile(filepath.Join(root, "lib/modules/6.1.0/kernel/a.ko"), bytes.Repeat([]byte{7}, 1001), 0o644)
	os.Symlink("lvm", filepath.Join(root, "sbin/lvs"))
	var buf bytes.Buffer
	cw := newCpioWriter(&buf)
	if err := cw.CharDev("dev/console", 0o600, 5, 1); err != nil {
		t.Fatal(err)
	}
	if err := cw.Tree(root); err != nil {
		t.Fatal(err)
	}
	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}
	got := readNewc(t, buf.Bytes())
	checks := map[string]cpioEntry{
		"dev/console":                   {Mode: 0o020600, Rdev: [2]uint32{5, 1}},
		"sbin":                          {Mode: 0o040755},
		"sbin/lvm":                      {Mode: 0o100755, Data: "ELF..."},
		"sbin/lvs":                      {Mode: 0o120777, Data: "lvm"},
		"init":                          {Mode: 0o100755, Data: "#!/bin/sh\necho hi\n"},
		"lib/modules/6.1.0/kernel/a.ko": {Mode: 0o100644, Data: string(bytes.Repeat([]byte{7}, 1001))},
	}
	for name, want := range checks {
		if g, ok := got[name]; !ok || g != want {
			t.Errorf("%s: got %+v (present %v), want %+v", name, g, ok, want)
		}
	}
	// the real cpio tool agrees (a subtest that skips, naming cpio, without it)
	t.Run("cpio -it agrees", func(t *testing.T) {
		if _, err := exec.LookPath("cpio"); err != nil {
			t.Skip("cpio not installed (Debian package cpio; .ci/install-deps installs it): cannot cross-check the archive with cpio -it")
		}
		cmd := exec.Command("cpio", "-it", "--quiet")
		cmd.Stdin = bytes.NewReader(buf.Bytes())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("cpio -it: %v", err)
		}
		names := strings.Fields(string(out))
		sort.Strings(names)
		if !strings.Contains(strings.Join(names, " "), "lib/modules/6.1.0/kernel/a.ko") || len(names) != len(got) {
			t.Errorf("cpio -it lists %v", names)
		}
	})
}

func TestRunArchiveHoldsConfigScenarioAndFiles(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "tbhost")
	os.WriteFile(bin, []byte("static-binary"), 0o755)
	cfg := Config{
		Disks:  []Disk{{Name: "hdd1", Kind: HDD, SizeMiB: 8}, {Name: "nvme1", Kind: NVMe, SizeMiB: 8, Serial: "S1"}},
		Script: []byte("echo scenario\n"),
		Tbhost: bin,
		Files:  map[string][]byte{"/etc/tbhost/plan.yaml": []byte("devices: []\n"), "/lab/bin/x": []byte("#!/bin/sh\n")},
	}
	var buf bytes.Buffer
	if err := runArchive(&buf, cfg, "TBHOST-LAB-abc"); err != nil {
		t.Fatal(err)
	}
	got := readNewc(t, buf.Bytes())
	if c := got["lab/config"].Data; !strings.Contains(c, "LAB_MARK=TBHOST-LAB-abc") || !strings.Contains(c, `LAB_DISKS="hdd1:HDD1:hdd nvme1:S1:nvme"`) {
		t.Errorf("config %q", c)
	}
	if got["lab/scenario"].Data != "echo scenario\n" || got["lab/scenario"].Mode != 0o100755 {
		t.Errorf("scenario %+v", got["lab/scenario"])
	}
	if got["usr/bin/tbhost"].Data != "static-binary" {
		t.Errorf("tbhost %+v", got["usr/bin/tbhost"])
	}
	if got["etc/tbhost/plan.yaml"].Mode != 0o100644 || got["lab/bin/x"].Mode != 0o100755 {
		t.Errorf("file modes: %o %o", got["etc/tbhost/plan.yaml"].Mode, got["lab/bin/x"].Mode)
	}
	if got["etc/tbhost"].Mode != 0o040755 {
		t.Error("parent directories of extra files must be in the archive")
	}
	if !strings.Contains(got["lab/lib.sh"].Data, "lab_capture()") {
		t.Error("lib.sh missing")
	}
	cfg.Files = map[string][]byte{"relative/x": nil}
	if err := runArchive(&bytes.Buffer{}, cfg, "m"); err == nil {
		t.Error("a relative guest path must be refused")
	}
}

func TestGzipBaseIsPaddedForAppending(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "init"), []byte("x"), 0o755)
	dst := filepath.Join(t.TempDir(), "base.cpio.gz")
	if err := writeGzipCpio(root, dst); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(dst)
	if st.Size()%4 != 0 {
		t.Errorf("gzip base is %d bytes: not 4-byte aligned, the kernel would not find the appended archive", st.Size())
	}
	// gzip and cpio read it back (a subtest that skips, naming the missing
	// tool, without them)
	t.Run("gzip -dc | cpio -it lists it", func(t *testing.T) {
		for _, tool := range []string{"sh", "gzip", "cpio"} {
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("%s not installed (Debian package %s; .ci/install-deps installs it): cannot read the gzip base back", tool, map[string]string{"sh": "dash", "gzip": "gzip", "cpio": "cpio"}[tool])
			}
		}
		out, err := exec.Command("sh", "-c", "gzip -dc < "+dst+" 2>/dev/null | cpio -it --quiet").Output()
		if err != nil && len(out) == 0 {
			t.Fatalf("gzip|cpio: %v", err)
		}
		if !strings.Contains(string(out), "init") || !strings.Contains(string(out), "dev/console") {
			t.Errorf("listing %q", out)
		}
	})
}
