package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// QemuBinary is the emulator the lab runs.
const QemuBinary = "qemu-system-x86_64"

// kernelCmdline boots straight into the initramfs /init; a kernel panic
// ends qemu (panic=-1 with -no-reboot).
const kernelCmdline = "console=ttyS0 rdinit=/init panic=-1 loglevel=4"

// qmpArgs puts qemu's QMP monitor on the unix socket path (the host
// applies lab_throttle's requests there).
func qmpArgs(path string) []string {
	return []string{"-qmp", "unix:" + path + ",server=on,wait=off"}
}

// qemuArgs builds qemu's argv (without the program name). images maps a
// disk name to its image path. TCG only: KVM cannot run guests on the
// machines this targets.
func qemuArgs(cfg Config, kernel, initrd string, images map[string]string) []string {
	args := []string{
		"-machine", "q35", "-accel", "tcg,thread=multi", "-cpu", "max",
		"-smp", strconv.Itoa(cfg.SMP), "-m", strconv.Itoa(cfg.MemMiB),
		"-display", "none", "-no-reboot", "-serial", "stdio", "-monitor", "none", "-nic", "none",
		"-kernel", kernel, "-initrd", initrd, "-append", kernelCmdline,
	}
	hasHDD := false
	for _, d := range cfg.Disks {
		if d.Kind == HDD {
			hasHDD = true
		}
	}
	if hasHDD {
		args = append(args, "-device", "virtio-scsi-pci,id=scsi0,num_queues=1")
	}
	scsiID := 0
	for _, d := range cfg.Disks {
		drive := fmt.Sprintf("if=none,id=%s,file=%s,format=raw,cache=unsafe", d.Name, images[d.Name])
		if d.ReadIOPS > 0 {
			drive += fmt.Sprintf(",throttling.iops-read=%d", d.ReadIOPS)
		}
		var dev []string
		switch d.Kind {
		case HDD:
			scsiID++
			dev = []string{"scsi-hd", "bus=scsi0.0", "drive=" + d.Name, "serial=" + d.serial(),
				"channel=0", fmt.Sprintf("scsi-id=%d", scsiID), "lun=0", "rotation_rate=7200",
				fmt.Sprintf("wwn=0x%x", d.wwn())}
		case NVMe:
			dev = []string{"nvme", "drive=" + d.Name, "serial=" + d.serial()}
		}
		if d.LogicalBlockSize != 0 {
			dev = append(dev, fmt.Sprintf("logical_block_size=%d", d.LogicalBlockSize))
		}
		if d.PhysicalBlockSize != 0 {
			dev = append(dev, fmt.Sprintf("physical_block_size=%d", d.PhysicalBlockSize))
		}
		args = append(args, "-drive", drive, "-device", strings.Join(dev, ","))
	}
	return args
}

// qemuProcess is a running qemu in its own process group. Kill ends the
// whole group; it is safe to call more than once and after exit.
type qemuProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startQemu starts qemu with stdout+stderr going to out and stdin (the
// serial console's input; nil: none) from in. The process is killed
// (SIGKILL to its process group) when ctx ends, and when this process dies
// (Pdeathsig).
func startQemu(ctx context.Context, args []string, in *os.File, out io.Writer) (*qemuProcess, error) {
	cmd := exec.CommandContext(ctx, QemuBinary, args...)
	if in != nil {
		cmd.Stdin = in
	}
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", QemuBinary, err)
	}
	p := &qemuProcess{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// Kill ends qemu now and waits for it.
func (p *qemuProcess) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = killGroup(p.cmd)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// Wait waits for qemu to exit.
func (p *qemuProcess) Wait() error {
	<-p.done
	return p.err
}

// LiveQemus lists the pids of running qemu processes whose command line
// contains substr (e.g. a run's work dir): what a test checks to prove no
// qemu outlived it.
func LiveQemus(substr string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(data) == 0 {
			continue
		}
		argv := strings.Split(string(data), "\x00")
		if !strings.Contains(filepath.Base(argv[0]), "qemu-system") {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if _, rest, ok := strings.Cut(string(st), ") "); ok && strings.HasPrefix(rest, "Z") {
				continue // a zombie is not running
			}
		}
		if strings.Contains(string(data), substr) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// GuardedTestRun is the TestMain of a lab test package: it puts every
// work dir of the run under one new temporary directory (TMPDIR), calls
// run (m.Run), and then fails the run (exit 1) if any qemu started from
// there is still alive after 10 s, killing it: no qemu outlives a test
// run. The directory is removed unless keep is set. It takes run rather
// than *testing.M so the binary that links this package links no testing.
func GuardedTestRun(name string, keep bool, run func() int) int {
	dir, err := os.MkdirTemp("", "tbhost-"+name+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	os.Setenv("TMPDIR", dir)
	code := run()
	deadline := time.Now().Add(10 * time.Second)
	pids := LiveQemus(dir)
	for len(pids) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		pids = LiveQemus(dir)
	}
	if len(pids) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: qemu processes outlived the %s tests: %v (killing them)\n", name, pids)
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		code = 1
	}
	if !keep {
		os.RemoveAll(dir)
	}
	return code
}
