package lab

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tbhost/tbhost/internal/execx"
	"golang.org/x/sys/unix"
)

// builderVersion changes whenever the way the base initramfs is assembled
// changes, so caches built by an older tbhost are rebuilt.
const builderVersion = "lab-base-3"

// Cache is the lab's download and build cache
// ($XDG_CACHE_HOME/tbhost/lab): Debian .debs, their unpacked tree, and the
// base initramfs + kernel built from them.
type Cache struct {
	Dir    string
	Runner execx.Runner
	Log    *slog.Logger
	// AsRoot allows apt-get update / apt-get install on the host.
	AsRoot bool
}

// Base is a built kernel + base initramfs, ready to boot.
type Base struct {
	Kernel        string   `json:"kernel"`
	Initrd        string   `json:"initrd"`
	KernelVersion string   `json:"kernel_version"`
	Debs          []string `json:"debs"`
	Stamp         string   `json:"stamp"`
	// Lists identifies the apt package lists the packages were resolved
	// from; while they are unchanged the base is current without asking
	// apt-cache again.
	Lists string `json:"apt_lists,omitempty"`
}

// DefaultCacheDir is $XDG_CACHE_HOME/tbhost/lab (~/.cache/tbhost/lab).
func DefaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find the cache directory (set XDG_CACHE_HOME): %w", err)
	}
	return filepath.Join(d, "tbhost", "lab"), nil
}

// NewCache returns the cache at dir (DefaultCacheDir when empty).
func NewCache(dir string, runner execx.Runner, log *slog.Logger) (*Cache, error) {
	if dir == "" {
		d, err := DefaultCacheDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Cache{Dir: dir, Runner: runner, Log: log, AsRoot: os.Geteuid() == 0}, nil
}

func (c *Cache) debDir() string   { return filepath.Join(c.Dir, "debs") }
func (c *Cache) stageDir() string { return filepath.Join(c.Dir, "stage") }
func (c *Cache) baseDir() string  { return filepath.Join(c.Dir, "base") }

func (c *Cache) run(ctx context.Context, timeout time.Duration, argv ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := c.Runner.Run(ctx, argv...)
	return res.Stdout, err
}

// MissingError says what the lab lacks on this host, in one line.
type MissingError struct{ What string }

func (e *MissingError) Error() string { return "VM lab cannot run: " + e.What }

// CheckHost finds qemu and the Debian tools the cache needs; as root it
// installs qemu-system-x86 when it is missing.
func (c *Cache) CheckHost(ctx context.Context) error {
	var missing []string
	for _, p := range []string{"apt-get", "apt-cache", "dpkg", "ldd", "env"} {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return &MissingError{What: "not a Debian host: missing " + strings.Join(missing, ", ")}
	}
	if _, err := exec.LookPath(QemuBinary); err == nil {
		return nil
	}
	if !c.AsRoot {
		return &MissingError{What: QemuBinary + " not installed and not root (apt-get install qemu-system-x86)"}
	}
	c.Log.Info("installing qemu-system-x86 on the host")
	if err := c.aptListsPresent(); err != nil {
		if _, err := c.run(ctx, 10*time.Minute, "apt-get", "update", "-q"); err != nil {
			return &MissingError{What: fmt.Sprintf("apt-get update failed: %v", err)}
		}
	}
	if _, err := c.run(ctx, 20*time.Minute, "env", "DEBIAN_FRONTEND=noninteractive",
		"apt-get", "install", "-y", "-q", "--no-install-recommends", "qemu-system-x86"); err != nil {
		return &MissingError{What: fmt.Sprintf("apt-get install qemu-system-x86 failed: %v", err)}
	}
	if _, err := exec.LookPath(QemuBinary); err != nil {
		return &MissingError{What: QemuBinary + " still missing after apt-get install qemu-system-x86"}
	}
	return nil
}

func (c *Cache) aptListsPresent() error {
	m, _ := filepath.Glob("/var/lib/apt/lists/*Packages*")
	if len(m) == 0 {
		return errors.New("no apt package lists")
	}
	return nil
}

// resolve runs the package resolution, with one apt-get update (as root)
// when a lookup fails.
func (c *Cache) resolve(ctx context.Context) (map[string]string, string, error) {
	run := func(ctx context.Context, argv ...string) ([]byte, error) {
		return c.run(ctx, 2*time.Minute, argv...)
	}
	versions, kpkg, err := resolvePackages(ctx, run)
	if err == nil || !c.AsRoot {
		if err != nil {
			return nil, "", &MissingError{What: fmt.Sprintf("Debian packages not resolvable: %v", err)}
		}
		return versions, kpkg, nil
	}
	c.Log.Info("package lookup failed; running apt-get update", "err", err)
	if _, uerr := c.run(ctx, 10*time.Minute, "apt-get", "update", "-q"); uerr != nil {
		return nil, "", &MissingError{What: fmt.Sprintf("Debian packages not reachable: %v (after %v)", uerr, err)}
	}
	versions, kpkg, err = resolvePackages(ctx, run)
	if err != nil {
		return nil, "", &MissingError{What: fmt.Sprintf("Debian packages not resolvable: %v", err)}
	}
	return versions, kpkg, nil
}

// debFile finds the downloaded .deb of pkg at version.
func (c *Cache) debFile(pkg, version string) string {
	for _, v := range []string{debFileVersion(version), version} {
		m, _ := filepath.Glob(filepath.Join(c.debDir(), pkg+"_"+v+"_*.deb"))
		if len(m) > 0 {
			return m[0]
		}
	}
	return ""
}

// download fetches the .debs that are not in the cache yet and removes
// other versions of the same packages. It returns the .deb paths.
func (c *Cache) download(ctx context.Context, versions map[string]string) ([]string, error) {
	if err := os.MkdirAll(c.debDir(), 0o755); err != nil {
		return nil, err
	}
	var need []string
	for p, v := range versions {
		if c.debFile(p, v) == "" {
			need = append(need, p+"="+v)
		}
	}
	sort.Strings(need)
	if len(need) > 0 {
		c.Log.Info("apt-get download", "packages", len(need), "dir", c.debDir())
		if c.AsRoot { // avoids apt's "download is performed unsandboxed as root" warning
			_ = os.Chown(c.debDir(), aptUID(), -1)
		}
		argv := append([]string{"env", "-C", c.debDir(), "apt-get", "download", "-q"}, need...)
		if _, err := c.run(ctx, 30*time.Minute, argv...); err != nil {
			if !c.AsRoot {
				return nil, &MissingError{What: fmt.Sprintf("apt-get download failed: %v", err)}
			}
			c.Log.Info("download failed; running apt-get update", "err", err)
			if _, uerr := c.run(ctx, 10*time.Minute, "apt-get", "update", "-q"); uerr != nil {
				return nil, &MissingError{What: fmt.Sprintf("apt-get update failed: %v", uerr)}
			}
			if _, err := c.run(ctx, 30*time.Minute, argv...); err != nil {
				return nil, &MissingError{What: fmt.Sprintf("apt-get download failed: %v", err)}
			}
		}
	}
	keep := map[string]bool{}
	var debs []string
	for p, v := range versions {
		f := c.debFile(p, v)
		if f == "" {
			return nil, fmt.Errorf("apt-get download did not produce %s %s in %s", p, v, c.debDir())
		}
		keep[f] = true
		debs = append(debs, f)
	}
	sort.Strings(debs)
	all, _ := filepath.Glob(filepath.Join(c.debDir(), "*.deb"))
	for _, f := range all {
		if !keep[f] {
			os.Remove(f) // an older version, or a package no longer needed
		}
	}
	return debs, nil
}

// aptUID is the uid of the _apt user, or 0.
func aptUID() int {
	data, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Split(l, ":")
		if len(f) > 2 && f[0] == "_apt" {
			var uid int
			fmt.Sscan(f[2], &uid)
			return uid
		}
	}
	return 0
}

// stamp identifies a base build: the exact .debs, the guest init and the
// builder version.
func stamp(debs []string, init []byte) string {
	h := sha256.New()
	fmt.Fprintln(h, builderVersion)
	for _, d := range debs {
		fmt.Fprintln(h, filepath.Base(d))
	}
	h.Write(init)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Prepare makes sure the host can run the lab and the base is built and
// current, building what is missing. It holds a lock on the cache so
// concurrent runs do not build over each other.
func (c *Cache) Prepare(ctx context.Context) (*Base, error) {
	if err := c.CheckHost(ctx); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create lab cache: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(c.Dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lab cache lock: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return nil, fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)

	manifest := filepath.Join(c.baseDir(), "base.json")
	lists := aptListsStamp(guestInit())
	if b, err := readBase(manifest); err == nil && lists != "" && b.Lists == lists && fileExists(b.Kernel) && fileExists(b.Initrd) {
		c.Log.Debug("lab base is current (apt lists unchanged)", "stamp", b.Stamp)
		return b, nil
	}
	versions, kpkg, err := c.resolve(ctx)
	if err != nil {
		return nil, err
	}
	debs, err := c.download(ctx, versions)
	if err != nil {
		return nil, err
	}
	st := stamp(debs, guestInit())
	if b, err := readBase(manifest); err == nil && b.Stamp == st {
		if fileExists(b.Kernel) && fileExists(b.Initrd) {
			c.Log.Debug("lab base is current", "stamp", st)
			if b.Lists != lists {
				b.Lists = lists
				writeBase(manifest, b)
			}
			return b, nil
		}
	}
	c.Log.Info("building the lab base initramfs", "kernel", kpkg, "debs", len(debs))
	start := time.Now()
	b, err := c.build(ctx, debs, st)
	if err != nil {
		return nil, err
	}
	b.Lists = lists
	if err := writeBase(manifest, b); err != nil {
		return nil, err
	}
	c.Log.Info("lab base built", "took", time.Since(start).Round(time.Second), "initrd", b.Initrd)
	return b, nil
}

func readBase(path string) (*Base, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var b Base
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &b, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Size() > 0
}

// build unpacks the debs, assembles the initramfs tree and writes the base.
func (c *Cache) build(ctx context.Context, debs []string, st string) (*Base, error) {
	stage := c.stageDir()
	if err := os.RemoveAll(stage); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(stage, 0o755); err != nil {
		return nil, err
	}
	for _, d := range debs {
		if _, err := c.run(ctx, 5*time.Minute, "dpkg", "-x", d, stage); err != nil {
			return nil, fmt.Errorf("unpack %s: %w", filepath.Base(d), err)
		}
	}
	kver, err := stageKernelVersion(stage)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(c.Dir, "initramfs-root")
	tb := &treeBuilder{Stage: stage, Root: root, KernelVersion: kver, Runner: c.Runner, Tools: filepath.Join(c.Dir, "tools")}
	if err := tb.Build(ctx); err != nil {
		return nil, fmt.Errorf("assemble initramfs tree: %w", err)
	}
	if err := os.MkdirAll(c.baseDir(), 0o755); err != nil {
		return nil, err
	}
	initrd := filepath.Join(c.baseDir(), "initramfs.cpio.gz")
	if err := writeGzipCpio(root, initrd); err != nil {
		return nil, err
	}
	kernel := filepath.Join(c.baseDir(), "vmlinuz")
	if err := copyFile(filepath.Join(stage, "boot", "vmlinuz-"+kver), kernel, 0o644); err != nil {
		return nil, fmt.Errorf("kernel image: %w", err)
	}
	b := &Base{Kernel: kernel, Initrd: initrd, KernelVersion: kver, Stamp: st}
	for _, d := range debs {
		b.Debs = append(b.Debs, filepath.Base(d))
	}
	return b, nil
}

func writeBase(path string, b *Base) error {
	data, _ := json.MarshalIndent(b, "", "  ")
	return os.WriteFile(path, data, 0o644)
}

// aptListsStamp identifies the state of apt's package lists (names, sizes,
// modification times) together with what the lab resolves from them and
// the guest init; "" when there are no lists.
func aptListsStamp(init []byte) string {
	m, _ := filepath.Glob("/var/lib/apt/lists/*Packages*")
	if len(m) == 0 {
		return ""
	}
	sort.Strings(m)
	h := sha256.New()
	fmt.Fprintln(h, builderVersion, KernelMetapackage, strings.Join(toolPackages(), " "))
	for _, f := range m {
		st, err := os.Stat(f)
		if err != nil {
			return ""
		}
		fmt.Fprintln(h, f, st.Size(), st.ModTime().UnixNano())
	}
	h.Write(init)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func stageKernelVersion(stage string) (string, error) {
	ents, err := os.ReadDir(filepath.Join(stage, "lib", "modules"))
	if err != nil || len(ents) == 0 {
		return "", fmt.Errorf("no kernel modules in the unpacked kernel package (%s/lib/modules)", stage)
	}
	return ents[0].Name(), nil
}

// writeGzipCpio archives root as gzip'd newc cpio at dst, padding the
// compressed file to a 4-byte boundary so a second archive can follow.
func writeGzipCpio(root, dst string) error {
	tmp := dst + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	cw := newCpioWriter(zw)
	if err := cw.CharDev("dev/console", 0o600, 5, 1); err != nil {
		f.Close()
		return err
	}
	if err := cw.Tree(root); err != nil {
		f.Close()
		return err
	}
	if err := cw.Close(); err != nil {
		f.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		f.Close()
		return err
	}
	if r := off % 512; r != 0 {
		if _, err := f.Write(make([]byte, 512-r)); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

func copyFile(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}
