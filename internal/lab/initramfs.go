package lab

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tbhost/tbhost/internal/execx"
)

//go:embed guest/init.sh
var guestInitScript []byte

//go:embed guest/lib.sh
var guestLibScript []byte

// guestInit is the guest's /init (busybox sh).
func guestInit() []byte { return append([]byte(nil), guestInitScript...) }

// guestLib is /lab/lib.sh, the helpers a scenario script sources.
func guestLib() []byte { return append([]byte(nil), guestLibScript...) }

// guestTool is a dynamically linked program copied from the unpacked
// packages into the guest's /sbin, with extra names linked to it.
type guestTool struct {
	Name  string
	Links []string
}

func guestTools() []guestTool {
	return []guestTool{
		{"lvm", []string{"pvcreate", "pvs", "pvdisplay", "pvremove", "pvscan", "pvchange", "pvmove", "pvresize",
			"vgcreate", "vgs", "vgdisplay", "vgremove", "vgchange", "vgscan", "vgextend", "vgreduce", "vgck",
			"lvcreate", "lvs", "lvdisplay", "lvremove", "lvchange", "lvconvert", "lvextend", "lvscan", "lvrename", "lvresize", "lvreduce"}},
		{"dmsetup", nil},
		{"kmod", []string{"modprobe", "insmod", "rmmod", "lsmod", "modinfo", "depmod"}},
		{"mke2fs", []string{"mkfs.ext4", "mkfs.ext3", "mkfs.ext2"}},
		{"e2fsck", []string{"fsck.ext4"}},
		{"wipefs", nil},
		{"blkid", nil},
		{"sfdisk", nil},
		{"rsync", nil},
	}
}

// guestModulePaths are the parts of /lib/modules/<kver> the guest needs:
// md/dm/raid/integrity, crypto, SCSI/virtio/NVMe disks, ext4.
func guestModulePaths() []string {
	return []string{
		"kernel/drivers/md", "kernel/crypto", "kernel/arch/x86/crypto", "kernel/lib", "kernel/block",
		"kernel/drivers/virtio", "kernel/drivers/nvme/host", "kernel/fs/ext4", "kernel/fs/jbd2",
		"kernel/fs/mbcache.ko", "kernel/drivers/scsi/scsi_mod.ko", "kernel/drivers/scsi/scsi_common.ko",
		"kernel/drivers/scsi/sd_mod.ko", "kernel/drivers/scsi/virtio_scsi.ko",
		"modules.order", "modules.builtin", "modules.builtin.modinfo",
	}
}

// treeBuilder assembles the base initramfs tree from the unpacked packages.
type treeBuilder struct {
	Stage, Root   string
	KernelVersion string
	Runner        execx.Runner
	Tools         string // where the depmod link lives
}

func (tb *treeBuilder) libPath() string {
	return "LD_LIBRARY_PATH=" + filepath.Join(tb.Stage, "lib/x86_64-linux-gnu") + ":" + filepath.Join(tb.Stage, "usr/lib/x86_64-linux-gnu")
}

func (tb *treeBuilder) run(ctx context.Context, argv ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	res, err := tb.Runner.Run(ctx, argv...)
	return res.Stdout, err
}

// findInStage returns the unpacked path of program name (sbin, bin, usr/...).
func findInStage(stage, name string) (string, error) {
	for _, d := range []string{"sbin", "bin", "usr/sbin", "usr/bin"} {
		p := filepath.Join(stage, d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in the unpacked packages (%s/{sbin,bin,usr/sbin,usr/bin})", name, stage)
}

// Build assembles the tree (it removes an old one first).
func (tb *treeBuilder) Build(ctx context.Context) error {
	if err := os.RemoveAll(tb.Root); err != nil {
		return err
	}
	for _, d := range []string{"bin", "sbin", "usr/bin", "usr/sbin", "etc/lvm", "proc", "sys", "dev", "run", "tmp", "mnt", "root", "lab",
		"lib/x86_64-linux-gnu", "lib64"} {
		if err := os.MkdirAll(filepath.Join(tb.Root, d), 0o755); err != nil {
			return err
		}
	}
	if err := tb.busybox(ctx); err != nil {
		return err
	}
	if err := tb.tools(ctx); err != nil {
		return err
	}
	if err := tb.modules(ctx); err != nil {
		return err
	}
	files := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\n",
		"etc/group":  "root:x:0:\ndisk:x:6:\n",
	}
	for p, s := range files {
		if err := os.WriteFile(filepath.Join(tb.Root, p), []byte(s), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(tb.Root, "init"), guestInit(), 0o755)
}

func (tb *treeBuilder) busybox(ctx context.Context) error {
	src, err := findInStage(tb.Stage, "busybox")
	if err != nil {
		return err
	}
	if err := copyFile(src, filepath.Join(tb.Root, "bin/busybox"), 0o755); err != nil {
		return err
	}
	out, err := tb.run(ctx, src, "--list")
	if err != nil {
		return fmt.Errorf("list busybox applets: %w", err)
	}
	real := map[string]bool{}
	for _, t := range guestTools() {
		real[t.Name] = true
		for _, l := range t.Links {
			real[l] = true
		}
	}
	for _, a := range strings.Fields(string(out)) {
		if a == "busybox" || real[a] || strings.Contains(a, "/") {
			continue
		}
		if err := os.Symlink("busybox", filepath.Join(tb.Root, "bin", a)); err != nil && !os.IsExist(err) {
			return err
		}
	}
	return nil
}

func (tb *treeBuilder) tools(ctx context.Context) error {
	libs := map[string]bool{}
	for _, t := range guestTools() {
		src, err := findInStage(tb.Stage, t.Name)
		if err != nil {
			return err
		}
		if err := copyFile(src, filepath.Join(tb.Root, "sbin", t.Name), 0o755); err != nil {
			return err
		}
		for _, l := range t.Links {
			if err := os.Symlink(t.Name, filepath.Join(tb.Root, "sbin", l)); err != nil {
				return err
			}
		}
		out, err := tb.run(ctx, "env", tb.libPath(), "ldd", src)
		if err != nil {
			return fmt.Errorf("ldd %s: %w", src, err)
		}
		paths, notFound := lddLibs(out)
		if len(notFound) > 0 {
			return fmt.Errorf("%s needs %s, which no downloaded package provides (add its package to the lab's package set)", t.Name, strings.Join(notFound, ", "))
		}
		for _, p := range paths {
			libs[p] = true
		}
	}
	for p := range libs {
		src := p
		if p == "/lib64/ld-linux-x86-64.so.2" {
			src = filepath.Join(tb.Stage, "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
		} else if !strings.HasPrefix(p, tb.Stage+"/") {
			return fmt.Errorf("library %s resolved from the host, not from the unpacked packages", p)
		}
		if err := copyFile(src, filepath.Join(tb.Root, "lib/x86_64-linux-gnu", filepath.Base(p)), 0o755); err != nil {
			return err
		}
	}
	return os.Symlink("../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", filepath.Join(tb.Root, "lib64/ld-linux-x86-64.so.2"))
}

func (tb *treeBuilder) modules(ctx context.Context) error {
	src := filepath.Join(tb.Stage, "lib/modules", tb.KernelVersion)
	dst := filepath.Join(tb.Root, "lib/modules", tb.KernelVersion)
	for _, p := range guestModulePaths() {
		matches, _ := filepath.Glob(filepath.Join(src, p) + "*") // mbcache.ko or mbcache.ko.xz
		found := false
		for _, m := range matches {
			rel, _ := filepath.Rel(src, m)
			if rel != p && !strings.HasPrefix(rel, p+".") {
				continue
			}
			found = true
			if err := copyTree(m, filepath.Join(dst, rel)); err != nil {
				return err
			}
		}
		if !found {
			return fmt.Errorf("kernel %s has no %s", tb.KernelVersion, p)
		}
	}
	os.RemoveAll(filepath.Join(dst, "kernel/drivers/md/bcache"))
	if err := os.MkdirAll(tb.Tools, 0o755); err != nil {
		return err
	}
	// the kernel .deb ships no modules.dep; kmod only acts as depmod when
	// invoked under that name
	depmod := filepath.Join(tb.Tools, "depmod")
	os.Remove(depmod)
	if err := os.Symlink(filepath.Join(tb.Stage, "bin/kmod"), depmod); err != nil {
		return err
	}
	if _, err := tb.run(ctx, "env", tb.libPath(), depmod, "-b", tb.Root, tb.KernelVersion); err != nil {
		return fmt.Errorf("depmod: %w", err)
	}
	return checkModulesDep(dst)
}

// checkModulesDep verifies every module modules.dep names is in the tree.
func checkModulesDep(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, "modules.dep"))
	if err != nil {
		return fmt.Errorf("depmod wrote no modules.dep: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		for _, f := range strings.Fields(strings.Replace(sc.Text(), ":", " ", 1)) {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				return fmt.Errorf("modules.dep names %s, which is not in the initramfs", f)
			}
		}
	}
	return sc.Err()
}

// copyTree copies a file or directory (symlinks as symlinks).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		t := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			os.MkdirAll(filepath.Dir(t), 0o755)
			return os.Symlink(l, t)
		case d.IsDir():
			return os.MkdirAll(t, 0o755)
		default:
			return copyFile(p, t, info.Mode().Perm())
		}
	})
}
