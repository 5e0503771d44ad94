// Package lab is the VM lab: it boots a throwaway Debian bookworm kernel
// under qemu (TCG software emulation, no KVM needed) with real lvm2,
// dmsetup and the md/dm-raid/dm-integrity modules in a busybox initramfs,
// virtual disks shaped like a real host's (HDDs as scsi-hd with serials,
// WWNs, rotational and 512n/512e/4Kn block sizes; NVMe as qemu nvme) and a
// static tbhost inside. The machines tbhost is developed on have no
// device-mapper: this is where its LVM commands run for real.
//
// The package is the harness only and imports no domain package (lvm,
// monitor, integrity, prefix, playbooks): what a scenario does is up to its
// caller. The plan rehearsal of `tbhost lab rehearse`, which needs lvm and
// monitor, is internal/lab/rehearse.
//
// # What it needs
//
// Cache (NewCache, Cache.Prepare) downloads with apt-get the kernel, lvm2,
// busybox-static and their libraries into $XDG_CACHE_HOME/tbhost/lab,
// unpacks them without installing and builds a base (vmlinuz plus an
// initramfs; Base), rebuilt only when its inputs change. What is missing
// (qemu, apt, root) is a *MissingError that names it.
//
// # How a scenario runs
//
// Lab.Run(ctx, Config) is one boot: it creates sparse disk images (or
// reuses Disk.Image from an earlier boot), appends a small cpio with
// /lab/config, the scenario script, tbhost and Config.Files to the base
// initramfs, and starts qemu in its own process group. The guest's /init
// (guest/init.sh) loads the modules, makes the /dev/disk/by-id links udev
// would, runs the scenario and prints every file the scenario left in
// $LAB_OUT between per-run markers with its size and SHA-256, then its exit
// status. Run streams the serial console to serial-<name>.log and returns a
// Result (exit code, checked outputs, disk images, duration). qemu is
// killed when the context ends, at Config.Timeout, when Run returns, and
// when the calling process dies. Lab.RunBatch runs several named Steps in
// one boot and returns a StepResult per step, so tests and rehearsals pay
// for one boot instead of many.
//
// # Tests
//
// The unit tests (cpio and MBR writers, qemu argv, console parsing, batch
// scripts) run in every `go test`. The integration suite boots VMs and is
// behind the build tag lab: `make lab-test`, or
//
//	go test -tags lab -count=1 -timeout 80m -v ./internal/lab/...
//
// It needs qemu-system-x86 and apt (it skips, naming what is missing) and
// takes minutes per boot; its TestMain fails the run if a qemu outlives it.
// docs/lab.md has the details and timings.
package lab
