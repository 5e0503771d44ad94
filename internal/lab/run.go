package lab

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Lab boots guests from a prepared base.
type Lab struct {
	Base *Base
	Log  *slog.Logger
	// Console, when set, receives the serial console as it streams.
	Console io.Writer
}

// Result is what one boot produced.
type Result struct {
	// ExitCode is the scenario's exit status.
	ExitCode int
	// LogPath is the serial console log.
	LogPath string
	// Outputs are the files the scenario left in $LAB_OUT.
	Outputs map[string][]byte
	// Images maps each disk name to its image file (reuse them for a
	// second boot via Disk.Image).
	Images   map[string]string
	Duration time.Duration
	// HostRequests lists the scenario's lab_throttle and lab_dirty
	// requests and how each ended ("THROTTLE ID BYTES_PER_S DISK...: ok",
	// "DIRTY ID count DISK...: ok hdd1=0 ..." or ": error: ...").
	HostRequests []string
}

// Run boots one guest with cfg's disks, runs its scenario and returns the
// results. qemu is killed on every path out of Run: ctx cancellation, the
// config's timeout, an error, a panic.
func (l *Lab) Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if l.Base == nil {
		return nil, errors.New("lab: no base (call Cache.Prepare first)")
	}
	log := l.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := os.MkdirAll(cfg.WorkDir, 0o755); err != nil {
		return nil, fmt.Errorf("lab work dir: %w", err)
	}
	images, err := prepareImages(cfg)
	if err != nil {
		return nil, err
	}
	mark, err := newMark()
	if err != nil {
		return nil, err
	}
	initrd := filepath.Join(cfg.WorkDir, "initrd-"+cfg.Name+".img")
	if err := writeRunInitrd(l.Base.Initrd, initrd, cfg, mark); err != nil {
		return nil, err
	}
	defer os.Remove(initrd)
	logPath := filepath.Join(cfg.WorkDir, "serial-"+cfg.Name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("serial log: %w", err)
	}
	defer logFile.Close()
	var out io.Writer = logFile
	if l.Console != nil {
		out = io.MultiWriter(logFile, newConsoleFilter(l.Console, mark))
	}
	args := qemuArgs(cfg, l.Base.Kernel, initrd, images)
	// QMP for lab_throttle and lab_dirty, on a unix socket
	qmpDir, err := qmpSocketDir()
	if err != nil {
		return nil, fmt.Errorf("qmp socket dir: %w", err)
	}
	defer os.RemoveAll(qmpDir)
	qmpPath := filepath.Join(qmpDir, qmpSocketName)
	args = append(args, qmpArgs(qmpPath)...)
	fmt.Fprintf(logFile, "# %s %s\n", QemuBinary, strings.Join(args, " "))

	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	// a guest kernel hang ends the boot with the blocked tasks' stacks
	ctx, endBoot := context.WithCancelCause(ctx)
	defer endBoot(nil)
	out = io.MultiWriter(out, newHangWatcher(mark, func(report string) {
		endBoot(&HangError{Report: report, LogPath: logPath})
	}))
	// the serial console's input: the answers to lab_throttle and lab_dirty
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("console input pipe: %w", err)
	}
	defer inW.Close()
	qmp := &qmpHost{ctx: ctx, path: qmpPath}
	defer qmp.Close()
	watch := newRequestWatcher(out, mark, map[string]requestHandler{
		"THROTTLE": throttleHandler(cfg.Disks, qmp.throttle),
		"DIRTY":    dirtyHandler(cfg.Disks, qmp.dirty),
	}, inW)
	start := time.Now()
	log.Info("booting lab VM", "disks", len(cfg.Disks), "log", logPath)
	p, err := startQemu(ctx, args, inR, watch)
	inR.Close() // qemu has its own copy
	if err != nil {
		return nil, err
	}
	defer p.Kill() // also on panic
	waitErr := p.Wait()
	watch.Wait()
	res := &Result{ExitCode: -1, LogPath: logPath, Images: images, Duration: time.Since(start), HostRequests: watch.Handled()}
	for _, h := range res.HostRequests {
		log.Info("lab host request", "request", h)
	}
	logFile.Sync()
	data, err := os.ReadFile(logPath)
	if err != nil {
		return res, fmt.Errorf("read serial log: %w", err)
	}
	rep := parseSerial(data, mark)
	res.Outputs = rep.Outputs
	res.ExitCode = rep.ExitCode
	log.Info("lab VM done", "took", res.Duration.Round(time.Second), "exit", rep.ExitCode)
	if ctxErr := ctx.Err(); ctxErr != nil && rep.ExitCode < 0 {
		var hang *HangError
		if errors.As(context.Cause(ctx), &hang) {
			return res, hang
		}
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return res, fmt.Errorf("lab VM timed out after %v (killed); serial log %s ends with:\n%s", cfg.Timeout, logPath, tailLines(data, 15))
		}
		return res, fmt.Errorf("lab VM cancelled (killed): %w", ctxErr)
	}
	if err := reportError(rep, data, logPath); err != nil {
		if waitErr != nil {
			return res, fmt.Errorf("qemu: %v: %w", waitErr, err)
		}
		return res, err
	}
	return res, nil
}

func newMark() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "TBHOST-LAB-" + hex.EncodeToString(b), nil
}

// prepareImages creates a sparse image for each disk that has none.
func prepareImages(cfg Config) (map[string]string, error) {
	images := map[string]string{}
	for _, d := range cfg.Disks {
		if d.Image != "" {
			st, err := os.Stat(d.Image)
			if err != nil {
				return nil, fmt.Errorf("lab disk %s: image: %w", d.Name, err)
			}
			if !st.Mode().IsRegular() {
				return nil, fmt.Errorf("lab disk %s: image %s is not a regular file", d.Name, d.Image)
			}
			images[d.Name] = d.Image
			continue
		}
		p := filepath.Join(cfg.WorkDir, d.Name+".img")
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, fmt.Errorf("lab disk %s: %w (reuse it with Disk.Image, or use a fresh work dir)", d.Name, err)
		}
		err = f.Truncate(d.SizeMiB << 20)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("lab disk %s: %w", d.Name, err)
		}
		if len(d.PartitionsMiB) > 0 {
			var sizes []int64
			for _, m := range d.PartitionsMiB {
				sizes = append(sizes, m<<20)
			}
			lbs := d.LogicalBlockSize
			if lbs == 0 {
				lbs = 512
			}
			if err := writeMBR(p, lbs, sizes); err != nil {
				return nil, fmt.Errorf("lab disk %s: %w", d.Name, err)
			}
		}
		images[d.Name] = p
	}
	return images, nil
}

// guestConfig is /lab/config: shell assignments read by /init.
func guestConfig(cfg Config, mark string) []byte {
	var ds []string
	for _, d := range cfg.Disks {
		ds = append(ds, d.Name+":"+d.serial()+":"+string(d.Kind))
	}
	return []byte(fmt.Sprintf("LAB_MARK=%s\nLAB_DISKS=%q\n", mark, strings.Join(ds, " ")))
}

// runArchive is the per-run cpio appended to the base: /lab/config,
// /lab/lib.sh, /lab/scenario, /usr/bin/tbhost and the extra files.
func runArchive(w io.Writer, cfg Config, mark string) error {
	cw := newCpioWriter(w)
	dirs := map[string]bool{}
	addDirs := func(p string) error {
		var parents []string
		for d := path.Dir(p); d != "/" && d != "." && !dirs[d]; d = path.Dir(d) {
			parents = append(parents, d)
		}
		for i := len(parents) - 1; i >= 0; i-- {
			dirs[parents[i]] = true
			if err := cw.Dir(parents[i], 0o755); err != nil {
				return err
			}
		}
		return nil
	}
	add := func(p string, mode os.FileMode, data []byte) error {
		if err := addDirs(p); err != nil {
			return err
		}
		return cw.File(p, mode, data)
	}
	if err := add("/lab/config", 0o644, guestConfig(cfg, mark)); err != nil {
		return err
	}
	if err := add("/lab/lib.sh", 0o644, guestLib()); err != nil {
		return err
	}
	if cfg.Script != nil {
		if err := add("/lab/scenario", 0o755, cfg.Script); err != nil {
			return err
		}
	}
	if cfg.Tbhost != "" {
		if err := addDirs("/usr/bin/tbhost"); err != nil {
			return err
		}
		if err := cw.FileFrom("/usr/bin/tbhost", 0o755, cfg.Tbhost); err != nil {
			return fmt.Errorf("tbhost binary: %w", err)
		}
	}
	names := make([]string, 0, len(cfg.Files))
	for p := range cfg.Files {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		if !path.IsAbs(p) || path.Clean(p) != p {
			return fmt.Errorf("lab file %q: want a clean absolute guest path", p)
		}
		mode := os.FileMode(0o644)
		if bytes.HasPrefix(cfg.Files[p], []byte("#!")) {
			mode = 0o755
		}
		if err := add(p, mode, cfg.Files[p]); err != nil {
			return err
		}
	}
	return cw.Close()
}

// writeRunInitrd writes base + the run archive to dst.
func writeRunInitrd(base, dst string, cfg Config, mark string) error {
	if err := copyFile(base, dst, 0o644); err != nil {
		return fmt.Errorf("initrd: %w", err)
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if err := runArchive(f, cfg, mark); err != nil {
		f.Close()
		return fmt.Errorf("initrd: %w", err)
	}
	return f.Close()
}

// qmpSocketName is the QMP socket's name inside its directory.
const qmpSocketName = "qmp.sock"

// maxUnixPath is the longest unix socket path Linux takes (sun_path is
// 108 bytes with its terminating NUL).
const maxUnixPath = 107

// qmpSocketDir makes the directory of a boot's QMP socket: under TMPDIR
// when the socket path fits a unix socket address there, else under /tmp.
// Nested test work dirs (a lab test that runs a lab test binary, each with
// its own TMPDIR) reach past 107 bytes, and qemu then refuses to start.
func qmpSocketDir() (string, error) {
	parent := os.TempDir()
	// MkdirTemp adds up to 10 digits to the pattern
	if len(filepath.Join(parent, "tbhost-qmp-0123456789", qmpSocketName)) > maxUnixPath {
		parent = "/tmp"
	}
	return os.MkdirTemp(parent, "tbhost-qmp-")
}
