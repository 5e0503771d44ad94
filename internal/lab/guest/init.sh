#!/bin/sh
# /init of the tbhost VM lab (busybox sh). Mounts the pseudo file systems,
# loads the md/dm/raid/integrity and disk modules, writes lvm.conf for a
# udev-less system, creates /dev/disk/by-id links the way udev names them,
# runs /lab/scenario, prints every file the scenario left in /lab/out between
# markers (base64), prints the scenario's exit status and powers off.
# Per-run settings come from /lab/config (appended archive): LAB_MARK (the
# unique marker prefix), LAB_DISKS ("name:SERIAL:kind ...").
export PATH=/sbin:/bin:/usr/sbin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm /run /tmp
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mkdir -p /run/lvm /run/lock/lvm /lab/out
# Debian's busybox ash prefers its own applets over $PATH: the kernel and
# scripts must call kmod/e2fsprogs by full path.
echo /sbin/modprobe > /proc/sys/kernel/modprobe

LAB_MARK=TBHOST-LAB
LAB_DISKS=
[ -r /lab/config ] && . /lab/config
export LAB_MARK LAB_DISKS LAB_OUT=/lab/out

lab_poweroff() {
  echo "$LAB_MARK POWEROFF"
  sync
  poweroff -f
  sleep 5
  echo o > /proc/sysrq-trigger
}

echo "$LAB_MARK BOOTED $(cut -d' ' -f1 /proc/uptime)"
for m in virtio_pci virtio_scsi scsi_mod sd_mod nvme \
         dm_mod dm_bufio dm_integrity raid0 raid1 raid10 raid456 dm_raid \
         crc32c_generic crc32c_intel ext4; do
  /sbin/modprobe "$m" 2>/dev/null || echo "lab: modprobe $m failed"
done

# wait for the asynchronous SCSI/NVMe probing to create every disk
want=$(echo $LAB_DISKS | wc -w)
i=0
while [ $i -lt 100 ]; do
  n=$(ls -d /sys/block/sd* /sys/block/nvme*n* 2>/dev/null | wc -l)
  [ "$n" -ge "$want" ] && break
  sleep 0.2; i=$((i+1))
done

mkdir -p /etc/lvm
cat > /etc/lvm/lvm.conf <<'LVMCONF'
devices {
    obtain_device_list_from_udev = 0
    external_device_info_source = "none"
    use_devicesfile = 0
}
activation {
    udev_sync = 0
    udev_rules = 0
    monitoring = 0
}
global {
    event_activation = 0
}
LVMCONF

# /dev/disk/by-id the way udev's 60-persistent-storage.rules names them
clean() { tr -s ' ' | sed 's/^ //; s/ $//; s/ /_/g'; }
mkdir -p /dev/disk/by-id
for d in /sys/block/sd* /sys/block/nvme*n*; do
  [ -e "$d" ] || continue
  n=${d##*/}
  ids=""
  case "$n" in
  sd*)
    vendor=$(clean < $d/device/vendor)
    model=$(clean < $d/device/model)
    serial=$(tail -c +5 $d/device/vpd_pg80 2>/dev/null | tr -cd 'A-Za-z0-9_.-')
    [ -n "$serial" ] && ids="scsi-0${vendor}_${model}_${serial}"
    wwid=$(cat $d/device/wwid 2>/dev/null)
    case "$wwid" in naa.*) ids="$ids wwn-0x${wwid#naa.}" ;; esac
    ;;
  nvme*)
    model=$(clean < $d/device/model)
    serial=$(clean < $d/device/serial)
    ids="nvme-${model}_${serial}"
    wwid=$(cat $d/wwid 2>/dev/null)
    [ -n "$wwid" ] && ids="$ids nvme-$wwid"
    ;;
  esac
  for id in $ids; do
    ln -sf ../../$n /dev/disk/by-id/$id
    for p in $d/$n*; do
      [ -e "$p/partition" ] || continue
      ln -sf ../../${p##*/} /dev/disk/by-id/$id-part$(cat $p/partition)
    done
  done
done

echo "lab: kernel $(uname -r), $(/sbin/lvm version 2>/dev/null | head -1 | tr -s ' ')"
printf "lab: %-8s %8s %3s %-22s %s\n" DEV MiB ROT SCHEDULER BY-ID
for d in /sys/block/sd* /sys/block/nvme*n*; do
  [ -e "$d" ] || continue
  n=${d##*/}
  printf "lab: %-8s %8s %3s %-22s %s\n" "$n" $(( $(cat $d/size) / 2048 )) "$(cat $d/queue/rotational)" \
    "$(cat $d/queue/scheduler)" "$(ls -l /dev/disk/by-id | awk -v n="../../$n" '$NF==n{printf "%s ", $(NF-2)}')"
done

# hang watch: the kernel reports a task blocked (D state) for over
# hung_task_timeout_secs at KERN_ERR, every 120 s, but its stack at
# KERN_INFO, below this console's loglevel. Once a task has been blocked
# for 300 s (no scenario waits that long in one system call: a capped lvs
# takes seconds), print the
# blocked tasks' stacks (sysrq w) from the kernel log between markers: the
# host then ends the boot with them (HangError) instead of waiting out its
# timeout with nothing but "blocked for more than" to show.
# A scenario may lower the threshold in /run/lab-hang-secs (the lab test of
# the watch does, with a hang of its own making).
lab_hang_watch() {
  while sleep 5; do
    t=$(cat /run/lab-hang-secs 2>/dev/null); t=${t:-300}
    dmesg 2>/dev/null | awk -v t="$t" '/blocked for more than [0-9]+ seconds/ { for (i = 1; i < NF; i++) if ($i == "than" && $(i+1) + 0 >= t + 0) f = 1 } END { exit !f }' || continue
    echo w > /proc/sysrq-trigger; sleep 2
    echo "$LAB_MARK HUNG"
    dmesg | grep 'blocked for more than' | tail -n 5
    # which command each blocked task runs, and its parent's (a blocked
    # "lvm" says nothing about which lvm command or which tbhost step):
    # read in the background, so that a read blocking too cannot stop the
    # report
    ( for p in $(dmesg | sed -n 's/.*task [^ ]*:\([0-9][0-9]*\) blocked for more than.*/\1/p' | sort -u); do
        pp=$(sed -n 's/^PPid:[[:space:]]*//p' /proc/$p/status 2>/dev/null)
        echo "blocked task $p: $(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null); parent ${pp:-?}: $(tr '\0' ' ' < /proc/${pp:-0}/cmdline 2>/dev/null)"
      done > /tmp/lab-hung-cmds 2>&1 ) &
    sleep 3; cat /tmp/lab-hung-cmds 2>/dev/null
    dmesg | sed -n '/Show Blocked State/,$p' | head -n 400
    echo "$LAB_MARK HUNG-END"
    return
  done
}
lab_hang_watch &
hang_watch=$!

rc=127
if [ -r /lab/scenario ]; then
  echo "$LAB_MARK SCENARIO-START $(cut -d' ' -f1 /proc/uptime)"
  (cd /lab && exec sh /lab/scenario) </dev/null
  rc=$?
  echo "$LAB_MARK SCENARIO-END $(cut -d' ' -f1 /proc/uptime)"
else
  echo "lab: no /lab/scenario"
fi

# results: keep kernel messages and the hang watch off the console while
# printing them
kill $hang_watch 2>/dev/null
echo 1 > /proc/sys/kernel/printk
sync
(cd /lab/out && find . -type f | sed 's,^\./,,' | sort) > /tmp/lab-outputs
while read -r f; do
  sum=$(sha256sum "/lab/out/$f" | cut -d' ' -f1)
  size=$(wc -c < "/lab/out/$f" | tr -d ' ')
  echo "$LAB_MARK BEGIN $f $size $sum"
  base64 "/lab/out/$f"
  echo "$LAB_MARK END $f"
done < /tmp/lab-outputs
echo "$LAB_MARK EXIT $rc"
lab_poweroff
