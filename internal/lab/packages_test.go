package lab

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/execx"
)

// Real apt-cache output from a bookworm host (abridged only by package).
const dependsLvm2 = `lvm2
  Depends: libaio1
  Depends: libblkid1
  Depends: libc6
  Depends: libdevmapper-event1.02.1
  Depends: libedit2
  Depends: libselinux1
  Depends: libsystemd0
    libelogind0
  Depends: libudev1
  Depends: lsb-base
    sysvinit-utils
  Depends: dmsetup
  Depends: dmeventd
`

func TestParseDependsKeepsFirstAlternativeAndSkipsVirtual(t *testing.T) {
	out := dependsLvm2 + `util-linux
  PreDepends: libblkid1
  PreDepends: libc6
  PreDepends: zlib1g
  Depends: util-linux-extra
  Recommends: sensible-utils
libfoo
 |Depends: libbar1
  Depends: libbaz1
  Depends: <debconf-2.0>
    debconf
`
	got := parseDepends([]byte(out))
	want := map[string][]string{
		"lvm2": {"libaio1", "libblkid1", "libc6", "libdevmapper-event1.02.1", "libedit2", "libselinux1",
			"libsystemd0", "libudev1", "lsb-base", "dmsetup", "dmeventd"},
		"util-linux": {"libblkid1", "libc6", "zlib1g", "util-linux-extra"},
		"libfoo":     {"libbar1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}

func TestKernelPackageFromMetapackage(t *testing.T) {
	deps := parseDepends([]byte("linux-image-amd64\n  Depends: linux-image-6.1.0-57-amd64\n"))
	k, err := kernelPackage(deps)
	if err != nil || k != "linux-image-6.1.0-57-amd64" {
		t.Fatalf("got %q, %v", k, err)
	}
	if _, err := kernelPackage(parseDepends([]byte("linux-image-amd64\n"))); err == nil {
		t.Error("a metapackage without a kernel dependency must be an error")
	}
}

func TestParsePolicy(t *testing.T) {
	out := `busybox-static:
  Installed: (none)
  Candidate: 1:1.35.0-4+deb12u1+b1
  Version table:
     1:1.35.0-4+deb12u1+b1 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
libc6:amd64:
  Installed: 2.36-9+deb12u14
  Candidate: 2.36-9+deb12u14
gone:
  Installed: (none)
  Candidate: (none)
`
	got := parsePolicy([]byte(out))
	want := map[string]string{"busybox-static": "1:1.35.0-4+deb12u1+b1", "libc6": "2.36-9+deb12u14", "gone": ""}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v want %v", got, want)
	}
	if v := debFileVersion("1:1.35.0-4+deb12u1+b1"); v != "1%3a1.35.0-4+deb12u1+b1" {
		t.Errorf("deb file version %q", v)
	}
}

// resolveRunner records the apt-cache calls of one resolution: kernel,
// then one depends call per level, then policy.
func resolveRunner(policy string) *execx.Recorded {
	r := execx.NewRecorded()
	r.On(execx.Reply{Stdout: "linux-image-amd64\n  Depends: linux-image-6.1.0-57-amd64\n"}, aptDependsArgv(KernelMetapackage)...)
	level1 := `busybox-static
lvm2
  Depends: libaio1
  Depends: libc6
  Depends: dmsetup
dmsetup
  Depends: libc6
  Depends: libdevmapper1.02.1
kmod
  Depends: libkmod2
  Depends: libc6
e2fsprogs
  PreDepends: libext2fs2
util-linux
  PreDepends: zlib1g
  Depends: util-linux-extra
fdisk
  Depends: libfdisk1
rsync
  PreDepends: init-system-helpers
  Depends: libpopt0
  Depends: libc6
`
	r.On(execx.Reply{Stdout: level1}, aptDependsArgv(toolPackages()...)...)
	level2 := `libaio1
  Depends: libc6
libc6
  Depends: libgcc-s1
libdevmapper1.02.1
  Depends: libc6
libext2fs2
  Depends: libc6
libfdisk1
  Depends: libc6
libkmod2
  Depends: libssl3
libpopt0
  Depends: libc6
zlib1g
  Depends: libc6
`
	r.On(execx.Reply{Stdout: level2}, aptDependsArgv("libaio1", "libc6", "libdevmapper1.02.1", "libext2fs2", "libfdisk1", "libkmod2", "libpopt0", "zlib1g")...)
	r.On(execx.Reply{Stdout: "libgcc-s1\n  Depends: gcc-12-base\nlibssl3\n  Depends: libc6\n  Depends: debconf\n"},
		aptDependsArgv("libgcc-s1", "libssl3")...)
	all := []string{"busybox-static", "dmsetup", "e2fsprogs", "fdisk", "kmod", "libaio1", "libc6", "libdevmapper1.02.1",
		"libext2fs2", "libfdisk1", "libgcc-s1", "libkmod2", "libpopt0", "libssl3", "linux-image-6.1.0-57-amd64", "lvm2", "rsync", "util-linux", "zlib1g"}
	r.On(execx.Reply{Stdout: policy}, append([]string{"apt-cache", "policy"}, all...)...)
	return r
}

func policyFor(names []string, missing string) string {
	var b strings.Builder
	for _, n := range names {
		v := "1.0-1"
		if n == missing {
			v = "(none)"
		}
		b.WriteString(n + ":\n  Installed: (none)\n  Candidate: " + v + "\n")
	}
	return b.String()
}

func TestResolvePackagesFollowsLibrariesOnly(t *testing.T) {
	all := []string{"busybox-static", "dmsetup", "e2fsprogs", "fdisk", "kmod", "libaio1", "libc6", "libdevmapper1.02.1",
		"libext2fs2", "libfdisk1", "libgcc-s1", "libkmod2", "libpopt0", "libssl3", "linux-image-6.1.0-57-amd64", "lvm2", "rsync", "util-linux", "zlib1g"}
	r := resolveRunner(policyFor(all, ""))
	run := func(ctx context.Context, argv ...string) ([]byte, error) {
		res, err := r.Run(ctx, argv...)
		return res.Stdout, err
	}
	versions, kpkg, err := resolvePackages(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	if kpkg != "linux-image-6.1.0-57-amd64" {
		t.Errorf("kernel %q", kpkg)
	}
	if len(versions) != len(all) {
		t.Errorf("resolved %d packages, want %d: %v", len(versions), len(all), versions)
	}
	for _, no := range []string{"util-linux-extra", "gcc-12-base", "debconf", "init-system-helpers"} {
		if _, ok := versions[no]; ok {
			t.Errorf("%s is not a library and must not be followed", no)
		}
	}

	r = resolveRunner(policyFor(all, "libfdisk1"))
	run = func(ctx context.Context, argv ...string) ([]byte, error) {
		res, err := r.Run(ctx, argv...)
		return res.Stdout, err
	}
	if _, _, err := resolvePackages(context.Background(), run); err == nil || !strings.Contains(err.Error(), "libfdisk1") {
		t.Errorf("a package without candidate must be named in the error, got %v", err)
	}
}

func TestResolveFailsWhenAptCacheFails(t *testing.T) {
	r := execx.NewRecorded() // nothing recorded: every call fails
	run := func(ctx context.Context, argv ...string) ([]byte, error) {
		res, err := r.Run(ctx, argv...)
		return res.Stdout, err
	}
	if _, _, err := resolvePackages(context.Background(), run); err == nil || !strings.Contains(err.Error(), "kernel") {
		t.Errorf("got %v", err)
	}
}

func TestLddLibs(t *testing.T) {
	out := `	linux-vdso.so.1 (0x00007ffd5b9f2000)
	libaio.so.1 => /c/stage/lib/x86_64-linux-gnu/libaio.so.1 (0x00007f1)
	libc.so.6 => /c/stage/lib/x86_64-linux-gnu/libc.so.6 (0x00007f2)
	libedit.so.2 => not found
	/lib64/ld-linux-x86-64.so.2 (0x00007f3)
`
	paths, nf := lddLibs([]byte(out))
	want := []string{"/c/stage/lib/x86_64-linux-gnu/libaio.so.1", "/c/stage/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("paths %v", paths)
	}
	if !reflect.DeepEqual(nf, []string{"libedit.so.2"}) {
		t.Errorf("not found %v", nf)
	}
}

func TestStampChangesWithPackagesAndInit(t *testing.T) {
	a := stamp([]string{"/x/lvm2_2.03.16-2_amd64.deb"}, []byte("init"))
	if a != stamp([]string{"/y/lvm2_2.03.16-2_amd64.deb"}, []byte("init")) {
		t.Error("stamp must depend on file names, not the cache location")
	}
	if a == stamp([]string{"/x/lvm2_2.03.16-3_amd64.deb"}, []byte("init")) {
		t.Error("a new package version must change the stamp")
	}
	if a == stamp([]string{"/x/lvm2_2.03.16-2_amd64.deb"}, []byte("init2")) {
		t.Error("a changed init must change the stamp")
	}
}
