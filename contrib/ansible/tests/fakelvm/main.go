// Command fakelvm stands in for lvm(8) in the Ansible collection's test: it
// answers like lvm2 2.03.16 (lvm/lvmfake, the fake the Go tests use) on the
// disks of the VM lab guest, and keeps its state between calls by recording
// every successful write command in $FAKE_LVM_STATE/writes and replaying
// them on the next call. Installed as "lvm" on PATH.
//
//	fakelvm fake-setup DIR    write the lab guest as a --root tree into DIR/root
//	lvm ARGS...               (FAKE_LVM_STATE=DIR) one lvm2 command
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tbhost/tbhost/internal/blockdev/fixture"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/lvm/lvmfake"
)

func main() { os.Exit(run(os.Args[1:])) }

func labLVM() *lvmfake.LVM {
	fake := lvmfake.New()
	for i := 1; i <= 6; i++ {
		fake.Disk("/dev/sd"+string(rune('a'+i-1)), fixture.LabHDDSize, "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_HDD"+string(rune('0'+i)))
	}
	fake.Disk("/dev/nvme0n1", fixture.LabNVMeSize, "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME1")
	fake.Disk("/dev/nvme1n1", fixture.LabNVMeSize, "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME2")
	return fake
}

func run(args []string) int {
	if len(args) == 2 && args[0] == "fake-setup" {
		if err := fixture.LabGuest().Write(filepath.Join(args[1], "root")); err != nil {
			fmt.Fprintln(os.Stderr, "fakelvm:", err)
			return 3
		}
		return 0
	}
	state := os.Getenv("FAKE_LVM_STATE")
	if state == "" {
		fmt.Fprintln(os.Stderr, "fakelvm: set FAKE_LVM_STATE to the state directory")
		return 3
	}
	log := filepath.Join(state, "writes")
	fake := labLVM()
	ctx := context.Background()
	if f, err := os.Open(log); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var argv []string
			if err := json.Unmarshal(sc.Bytes(), &argv); err != nil {
				fmt.Fprintf(os.Stderr, "fakelvm: %s: %v\n", log, err)
				return 3
			}
			if _, err := fake.Run(ctx, argv...); err != nil {
				fmt.Fprintf(os.Stderr, "fakelvm: replaying %v: %v\n", argv, err)
				return 3
			}
		}
		f.Close()
	}
	argv := append([]string{"lvm"}, args...)
	res, err := fake.Run(ctx, argv...)
	os.Stdout.Write(res.Stdout)
	var ce *execx.CommandError
	if errors.As(err, &ce) {
		fmt.Fprintln(os.Stderr, ce.Stderr)
		if ce.ExitCode > 0 {
			return ce.ExitCode
		}
		return 5
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 5
	}
	if len(lvmfake.Writes([][]string{argv})) > 0 {
		b, _ := json.Marshal(argv)
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fakelvm:", err)
			return 3
		}
		defer f.Close()
		if _, err := f.Write(append(b, '\n')); err != nil {
			fmt.Fprintln(os.Stderr, "fakelvm:", err)
			return 3
		}
	}
	return 0
}
