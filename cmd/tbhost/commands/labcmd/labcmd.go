// Package labcmd is the `tbhost lab` command group: a throwaway qemu VM
// with real LVM, device-mapper and virtual disks shaped like the host.
package labcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/lab"
	"github.com/tbhost/tbhost/internal/sizes"
	"github.com/urfave/cli/v2"
)

// Command returns `tbhost lab`.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "lab",
		Usage: "a throwaway VM with real LVM and virtual disks: run scripts, rehearse plans",
		Description: `The lab boots a Debian bookworm kernel under qemu (software emulation, no KVM
needed) with virtual HDDs (virtio-scsi, rotational, 7200 rpm) and NVMe disks, a
busybox userland with lvm2, dmsetup, kmod, e2fsprogs, wipefs/blkid/sfdisk, and a
static tbhost at /usr/bin/tbhost. Nothing on this machine's disks is touched: the
virtual disks are sparse image files in a work directory.

First use downloads about 80 MB of Debian packages (apt-get download, never
installed) into $XDG_CACHE_HOME/tbhost/lab and builds an initramfs there; as
root it installs qemu-system-x86 when missing. A boot takes 1-3 minutes.`,
		Action: cliutil.GroupAction,
		Subcommands: []*cli.Command{
			runCommand(),
			rehearseCommand(),
		},
	}
}

// vmFlags are the flags shared by run and rehearse.
func vmFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "work-dir", Usage: "keep disk images, serial log and outputs in `DIR` (default: a new directory under the lab cache, removed after a successful run unless --keep)"},
		&cli.BoolFlag{Name: "keep", Usage: "keep the work directory after a successful run"},
		&cli.StringFlag{Name: "cache", Usage: "lab cache `DIR` (default $XDG_CACHE_HOME/tbhost/lab)"},
		&cli.StringFlag{Name: "tbhost", Usage: "static tbhost `BINARY` to install in the guest (default: this one if static, else built from the source tree in the current directory)"},
		&cli.IntFlag{Name: "mem", Value: 1024, Usage: "guest memory in `MiB`"},
		&cli.IntFlag{Name: "smp", Value: 2, Usage: "guest CPUs"},
		&cli.DurationFlag{Name: "timeout", Value: 30 * time.Minute, Usage: "kill the VM after `DURATION`"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "do not stream the serial console to stderr (it is always saved)"},
		&cli.StringFlag{Name: "log", Usage: "also copy the serial console log to `FILE`"},
		cliutil.JSONFlag(),
	}
}

func runCommand() *cli.Command {
	flags := append([]cli.Flag{
		&cli.IntFlag{Name: "hdd", Value: 6, Usage: "number of virtual HDDs (serials HDD1..HDDn)"},
		&cli.IntFlag{Name: "nvme", Value: 2, Usage: "number of virtual NVMe disks (serials NVME1..NVMEn)"},
		&cli.StringFlag{Name: "hdd-size", Value: "256MiB", Usage: "size of each HDD"},
		&cli.StringFlag{Name: "nvme-size", Value: "128MiB", Usage: "size of each NVMe disk"},
		&cli.StringFlag{Name: "block", Value: "512n", Usage: "block sizes of every disk: 512n, 512e (512 logical / 4096 physical) or 4kn"},
		&cli.StringSliceFlag{Name: "file", Usage: "copy host file into the guest: `GUEST_PATH=HOST_FILE` (repeatable)"},
		&cli.StringFlag{Name: "out", Usage: "write the files the script left in $LAB_OUT under `DIR`"},
	}, vmFlags()...)
	return &cli.Command{
		Name:      "run",
		Usage:     "boot the lab VM, run a shell script with tbhost inside, exit with the script's status",
		ArgsUsage: "SCRIPT",
		Description: `Boots the VM with --hdd virtual HDDs and --nvme NVMe disks, runs SCRIPT with
busybox sh as root inside the guest and powers off. The exit status of tbhost lab run
is the script's (3 when the VM itself failed). The serial console streams to stderr.

Inside the guest: /usr/bin/tbhost, lvm (pvcreate, lvcreate, lvs...), dmsetup,
/sbin/mke2fs, wipefs, blkid, sfdisk, busybox. udev is absent: lvm.conf is set up for
that, and /dev/disk/by-id links are created the way udev names them
(scsi-0QEMU_QEMU_HARDDISK_HDD1, wwn-0x..., nvme-QEMU_NVMe_Ctrl_NVME1).
'. /lab/lib.sh' gives helpers: lab_disks hdd|nvme, lab_dev SERIAL, lab_wait_sync VG/LV,
lab_out NAME (stdin to a result file), lab_capture DIR (sysfs/proc/lvm snapshot).
Files written under $LAB_OUT come back to the host (--out DIR).

EXAMPLE:
cat > t.sh <<'EOS'
. /lab/lib.sh
pvcreate -y $(lab_disks hdd) && vgcreate vg-hdd $(lab_disks hdd)
lvcreate -y --type raid5 --stripes 5 --name tables -l 100%FREE vg-hdd
lvs -a --reportformat json | lab_out lvs.json
EOS
tbhost lab run --hdd 6 --nvme 0 --out results t.sh`,
		Flags:  flags,
		Action: runAction,
	}
}

// session is one lab invocation: cache, base, work dir, streams.
type session struct {
	g       *cliutil.Globals
	c       *cli.Context
	ctx     context.Context
	cache   *lab.Cache
	base    *lab.Base
	workDir string
	ownWork bool
	tbhost  string
}

func newSession(c *cli.Context, ctx context.Context) (*session, error) {
	g := cliutil.Get(c)
	s := &session{g: g, c: c, ctx: ctx}
	cache, err := lab.NewCache(c.String("cache"), g.Runner, g.Log)
	if err != nil {
		return nil, cliutil.CannotRun(err)
	}
	s.cache = cache
	fmt.Fprintln(g.Stderr, "lab: preparing the VM image (the first use downloads ~80 MB of Debian packages; later runs reuse the cache)")
	base, err := cache.Prepare(ctx)
	if err != nil {
		var me *lab.MissingError
		if errors.As(err, &me) {
			return nil, cliutil.CannotRun(err)
		}
		return nil, cliutil.CannotRun(fmt.Errorf("prepare the lab: %w", err))
	}
	s.base = base
	s.workDir = c.String("work-dir")
	if s.workDir == "" {
		runs := filepath.Join(cache.Dir, "runs")
		if err := os.MkdirAll(runs, 0o755); err != nil {
			return nil, cliutil.CannotRun(err)
		}
		d, err := os.MkdirTemp(runs, time.Now().UTC().Format("20060102-150405-"))
		if err != nil {
			return nil, cliutil.CannotRun(err)
		}
		s.workDir, s.ownWork = d, true
	} else if err := os.MkdirAll(s.workDir, 0o755); err != nil {
		return nil, cliutil.CannotRun(err)
	}
	self, _ := os.Executable()
	cwd, _ := os.Getwd()
	bin, err := lab.StaticTbhost(ctx, g.Runner, c.String("tbhost"), self, cwd, s.workDir)
	if err != nil {
		s.cleanup(false)
		return nil, cliutil.CannotRun(err)
	}
	s.tbhost = bin
	return s, nil
}

func (s *session) lab() *lab.Lab {
	l := &lab.Lab{Base: s.base, Log: s.g.Log}
	if !s.c.Bool("quiet") {
		l.Console = s.g.Stderr
	}
	return l
}

func (s *session) config(name string) lab.Config {
	return lab.Config{
		Name: name, WorkDir: s.workDir, Tbhost: s.tbhost,
		MemMiB: s.c.Int("mem"), SMP: s.c.Int("smp"), Timeout: s.c.Duration("timeout"),
	}
}

// cleanup removes a work dir tbhost created, after success, unless --keep.
func (s *session) cleanup(ok bool) {
	if s.ownWork && ok && !s.c.Bool("keep") {
		os.RemoveAll(s.workDir)
		return
	}
	fmt.Fprintf(s.g.Stderr, "lab: work directory kept: %s\n", s.workDir)
}

func (s *session) copyLog(res *lab.Result) error {
	dst := s.c.String("log")
	if dst == "" || res == nil {
		return nil
	}
	data, err := os.ReadFile(res.LogPath)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}

type runReport struct {
	ExitCode int      `json:"exit_code"`
	Duration string   `json:"duration"`
	Log      string   `json:"log"`
	WorkDir  string   `json:"work_dir,omitempty"`
	Outputs  []string `json:"outputs"`
	OutDir   string   `json:"out_dir,omitempty"`
}

func parseDisks(c *cli.Context) ([]lab.Disk, error) {
	hs, err := sizes.Parse(c.String("hdd-size"))
	if err != nil {
		return nil, cliutil.Usagef("--hdd-size: %v", err)
	}
	ns, err := sizes.Parse(c.String("nvme-size"))
	if err != nil {
		return nil, cliutil.Usagef("--nvme-size: %v", err)
	}
	if c.Int("hdd") < 0 || c.Int("nvme") < 0 || c.Int("hdd")+c.Int("nvme") > 24 {
		return nil, cliutil.Usagef("--hdd %d --nvme %d: between 0 and 24 disks in all", c.Int("hdd"), c.Int("nvme"))
	}
	for _, s := range []struct {
		flag string
		n    int64
	}{{"--hdd-size", int64(hs)}, {"--nvme-size", int64(ns)}} {
		if s.n < 16<<20 || s.n%(1<<20) != 0 {
			return nil, cliutil.Usagef("%s: at least 16MiB, in whole MiB", s.flag)
		}
	}
	hdd, err := lab.Disks(lab.HDD, c.Int("hdd"), int64(hs)>>20, c.String("block"))
	if err != nil {
		return nil, cliutil.Usagef("--block: %v", err)
	}
	nvme, _ := lab.Disks(lab.NVMe, c.Int("nvme"), int64(ns)>>20, c.String("block"))
	return append(hdd, nvme...), nil
}

func parseFiles(specs []string) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, f := range specs {
		guest, host, ok := strings.Cut(f, "=")
		if !ok || !strings.HasPrefix(guest, "/") || host == "" {
			return nil, cliutil.Usagef("--file %q: want GUEST_PATH=HOST_FILE with an absolute guest path", f)
		}
		data, err := os.ReadFile(host)
		if err != nil {
			return nil, cliutil.CannotRun(fmt.Errorf("--file %s: %w", guest, err))
		}
		files[filepath.Clean(guest)] = data
	}
	return files, nil
}

func runAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return cliutil.Usagef("lab run needs exactly one SCRIPT (see tbhost lab run --help)")
	}
	script, err := os.ReadFile(c.Args().First())
	if err != nil {
		return cliutil.CannotRun(fmt.Errorf("script: %w", err))
	}
	disks, err := parseDisks(c)
	if err != nil {
		return err
	}
	files, err := parseFiles(c.StringSlice("file"))
	if err != nil {
		return err
	}
	ctx, stop := cliutil.SignalContext(c)
	defer stop()
	s, err := newSession(c, ctx)
	if err != nil {
		return err
	}
	cfg := s.config("run")
	cfg.Disks, cfg.Script, cfg.Files = disks, script, files
	res, err := s.lab().Run(ctx, cfg)
	if lerr := s.copyLog(res); lerr != nil && err == nil {
		err = lerr
	}
	if err != nil {
		s.cleanup(false)
		return cliutil.CannotRun(err)
	}
	rep := runReport{ExitCode: res.ExitCode, Duration: res.Duration.Round(time.Second).String(), Log: res.LogPath}
	for n := range res.Outputs {
		rep.Outputs = append(rep.Outputs, n)
	}
	sort.Strings(rep.Outputs)
	if out := c.String("out"); out != "" {
		if err := lab.WriteOutputs(res.Outputs, out); err != nil {
			s.cleanup(false)
			return cliutil.CannotRun(fmt.Errorf("--out: %w", err))
		}
		rep.OutDir = out
	}
	keep := res.ExitCode != 0 || c.Bool("keep") || !s.ownWork
	if keep {
		rep.WorkDir = s.workDir
	} else {
		rep.Log = ""
	}
	s.cleanup(res.ExitCode == 0)
	err = s.g.Output(rep, func(w io.Writer) error {
		fmt.Fprintf(w, "lab run: script exit status %d after %s\n", rep.ExitCode, rep.Duration)
		if rep.Log != "" {
			fmt.Fprintf(w, "serial log: %s\n", rep.Log)
		}
		if len(rep.Outputs) > 0 {
			where := "(use --out DIR to save them)"
			if rep.OutDir != "" {
				where = "in " + rep.OutDir
			}
			fmt.Fprintf(w, "outputs %s: %s\n", where, strings.Join(rep.Outputs, " "))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return cliutil.WithCode(res.ExitCode, nil)
	}
	return nil
}
