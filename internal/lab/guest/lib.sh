# /lab/lib.sh: helpers for lab scenario scripts (busybox sh). Source it:
#   . /lab/lib.sh
# Files a scenario writes under $LAB_OUT come back to the host as
# Result.Outputs (path relative to $LAB_OUT). Plain output goes to the
# serial log. Exit status of the scenario = Result.ExitCode.

# lab_step TITLE: a visible header in the serial log.
lab_step() { echo; echo "=== $* (t=$(cut -d' ' -f1 /proc/uptime)s)"; }

# lab_run CMD...: echo the command, run it, echo its exit status.
lab_run() { echo "+ $*"; "$@"; lab_rc=$?; echo "[rc=$lab_rc]"; return $lab_rc; }

# lab_dev SERIAL: the /dev node of the disk with that serial (HDD1, NVME2...).
lab_dev() {
  for l in /dev/disk/by-id/scsi-0*_"$1" /dev/disk/by-id/nvme-*_"$1"; do
    [ -e "$l" ] && { readlink -f "$l"; return 0; }
  done
  echo "lab_dev: no disk with serial $1" >&2
  return 1
}

# lab_disks KIND: the /dev nodes of the lab's disks of KIND (hdd|nvme), in
# the order of the run's configuration; absent disks are skipped.
lab_disks() {
  for e in $LAB_DISKS; do
    k=${e##*:}; s=${e#*:}; s=${s%%:*}
    [ "$k" = "$1" ] || continue
    lab_dev "$s" 2>/dev/null
  done | tr '\n' ' '
}

# lab_wait_sync VG/LV [TIMEOUT_S]: wait until sync_percent is 100.00.
lab_wait_sync() {
  t0=$(cut -d' ' -f1 /proc/uptime | cut -d. -f1)
  while :; do
    sp=$(lvs --noheadings -o sync_percent "$1" 2>/dev/null | tr -d ' ')
    now=$(cut -d' ' -f1 /proc/uptime | cut -d. -f1)
    [ "$sp" = "100.00" ] && { echo "lab: $1 in sync after $((now - t0))s"; return 0; }
    [ $(( (now - t0) % 10 )) -lt 2 ] && echo "lab: $1 sync $sp% (t+$((now - t0))s)"
    if [ $((now - t0)) -ge "${2:-900}" ]; then echo "lab: $1 not in sync after ${2:-900}s (at $sp%)"; return 1; fi
    sleep 2
  done
}

# lab_wait_idle VG/LV [TIMEOUT_S]: wait until raid_sync_action is idle.
lab_wait_idle() {
  t0=$(cut -d' ' -f1 /proc/uptime | cut -d. -f1)
  sleep 1
  while :; do
    a=$(lvs --noheadings -o raid_sync_action "$1" 2>/dev/null | tr -d ' ')
    [ "$a" = "idle" ] && return 0
    now=$(cut -d' ' -f1 /proc/uptime | cut -d. -f1)
    [ $((now - t0)) -ge "${2:-900}" ] && { echo "lab: $1 still $a after ${2:-900}s"; return 1; }
    sleep 2
  done
}

# lab_out NAME: stdin -> $LAB_OUT/NAME (creates directories).
lab_out() { mkdir -p "$(dirname "$LAB_OUT/$1")"; cat > "$LAB_OUT/$1"; }

# lab_tar NAME DIR: $LAB_OUT/NAME = tar.gz of DIR (symlinks kept).
lab_tar() { mkdir -p "$(dirname "$LAB_OUT/$1")"; tar -czf "$LAB_OUT/$1" -C "$2" .; }

# lab_lvs_fields: the lvs report fields the captures use, minus any this lvm
# rejects (those are written to $1/lvm/rejected-fields.txt when $1 is given).
lab_lvs_fields() {
  all=lv_name,vg_name,lv_attr,lv_size,segtype,stripes,data_stripes,stripe_size,devices,lv_health_status,sync_percent,raid_sync_action,raid_mismatch_count,integritymismatches,raidintegritymode,raidintegrityblocksize,lv_uuid,lv_dm_path
  if lvs --noheadings -o "$all" >/dev/null 2>&1; then echo "$all"; return 0; fi
  ok=""
  for f in lv_name vg_name lv_attr lv_size segtype stripes data_stripes stripe_size devices \
           lv_health_status sync_percent raid_sync_action raid_mismatch_count integritymismatches \
           raidintegritymode raidintegrityblocksize lv_uuid lv_dm_path; do
    if lvs --noheadings -o "$f" >/dev/null 2>&1; then ok="$ok,$f"
    elif [ -n "$1" ]; then mkdir -p "$1/lvm"; echo "$f" >> "$1/lvm/rejected-fields.txt"; fi
  done
  echo "${ok#,}"
}

# lab_capture DIR: a node_exporter-style fixture tree of this machine's
# block layer under DIR: sys/block subset, proc/{diskstats,mounts,swaps},
# dev/disk/by-id links, lvm reports (JSON, bytes) and dmsetup output.
lab_capture() {
  c=$1
  mkdir -p "$c/sys/block" "$c/proc" "$c/dev/disk/by-id" "$c/lvm"
  for d in /sys/block/sd* /sys/block/nvme*n* /sys/block/dm-*; do
    [ -e "$d" ] || continue
    n=${d##*/}; o=$c/sys/block/$n
    mkdir -p "$o/queue" "$o/device" "$o/slaves" "$o/holders"
    for f in dev size ro stat removable wwid queue/rotational queue/logical_block_size \
             queue/physical_block_size queue/scheduler queue/hw_sector_size queue/minimum_io_size \
             queue/optimal_io_size device/model device/vendor device/serial device/wwid device/rev \
             device/vpd_pg80 device/vpd_pg83 dm/name dm/uuid dm/suspended; do
      [ -f "$d/$f" ] || continue
      mkdir -p "$(dirname "$o/$f")"
      cat "$d/$f" > "$o/$f" 2>/dev/null
    done
    for l in "$d"/slaves/* "$d"/holders/*; do
      [ -e "$l" ] || [ -L "$l" ] || continue
      rel=${l#$d/}
      ln -s "$(readlink "$l")" "$o/$rel"
    done
    for p in "$d/$n"*; do
      [ -e "$p/partition" ] || continue
      pn=${p##*/}
      mkdir -p "$o/$pn"
      for f in dev size start partition ro stat; do [ -f "$p/$f" ] && cat "$p/$f" > "$o/$pn/$f"; done
    done
  done
  cp /proc/mounts "$c/proc/mounts"
  cp /proc/swaps "$c/proc/swaps"
  [ -f "$c/proc/diskstats" ] || cat /proc/diskstats > "$c/proc/diskstats"
  for l in /dev/disk/by-id/*; do
    [ -L "$l" ] && ln -s "$(readlink "$l")" "$c/dev/disk/by-id/${l##*/}"
  done
  fields=$(lab_lvs_fields "$c")
  lvs -a --reportformat json --units b --nosuffix -o "$fields" > "$c/lvm/lvs.json" 2> "$c/lvm/lvs.stderr"
  pvs --reportformat json --units b --nosuffix -o pv_name,vg_name,pv_size,pv_free,pv_pe_count,pv_uuid,dev_size \
    > "$c/lvm/pvs.json" 2> "$c/lvm/pvs.stderr"
  vgs --reportformat json --units b --nosuffix -o vg_name,pv_count,lv_count,vg_size,vg_free,vg_extent_size,vg_extent_count,vg_free_count,vg_uuid,vg_attr \
    > "$c/lvm/vgs.json" 2> "$c/lvm/vgs.stderr"
  dmsetup table > "$c/lvm/dmsetup-table.txt" 2>&1
  dmsetup status > "$c/lvm/dmsetup-status.txt" 2>&1
  lvm version > "$c/lvm/version.txt" 2>&1
  for f in "$c"/lvm/*.stderr; do [ -s "$f" ] || rm -f "$f"; done
}

# lab_diskstats_under_load DIR DEV [GAP_S]: start an O_DIRECT read of DEV,
# sample /proc/diskstats twice GAP_S (5) seconds apart while it runs, into
# DIR/proc/diskstats.0, .1 and diskstats (= the second); the read keeps
# running until lab_stop_load.
lab_diskstats_under_load() {
  mkdir -p "$1/proc"
  (while :; do dd if="$2" of=/dev/null bs=1M iflag=direct 2>/dev/null || exit; done) &
  lab_load_pid=$!
  sleep 2
  cat /proc/diskstats > "$1/proc/diskstats.0"
  sleep "${3:-5}"
  cat /proc/diskstats > "$1/proc/diskstats.1"
  cp "$1/proc/diskstats.1" "$1/proc/diskstats"
}

# lab_stop_load: stop the read started by lab_diskstats_under_load.
lab_stop_load() {
  [ -n "$lab_load_pid" ] || return 0
  kill "$lab_load_pid" 2>/dev/null; killall dd 2>/dev/null
  wait "$lab_load_pid" 2>/dev/null; lab_load_pid=
}

# lab_host KIND ARGS...: ask the host (internal/lab/throttle.go): the
# request is a marker line on the console, the answer "lab-kind ID ok
# [REPLY]" or "lab-kind ID error: ..." comes in on the console's input.
# Prints REPLY and returns 0 on ok; 1 with the reason on stderr (an error,
# no answer in 60 s).
lab_host() {
  lab_kind=$1; shift
  lab_word=lab-$(echo "$lab_kind" | tr A-Z a-z)
  lab_tid=$$.$RANDOM$RANDOM
  stty -echo < /dev/console 2>/dev/null
  echo "$LAB_MARK $lab_kind $lab_tid $*" > /dev/console
  lab_t0=$(cut -d. -f1 /proc/uptime)
  while :; do
    if read -r -t 5 lab_w lab_id lab_ok lab_rest < /dev/console; then
      [ "$lab_w" = "$lab_word" ] && [ "$lab_id" = "$lab_tid" ] || continue
      [ "$lab_ok" = ok ] && { [ -z "$lab_rest" ] || echo "$lab_rest"; return 0; }
      echo "lab: $lab_kind $*: $lab_ok $lab_rest" >&2; return 1
    fi
    [ $(( $(cut -d. -f1 /proc/uptime) - lab_t0 )) -ge 60 ] && { echo "lab: $lab_kind $*: no answer from the host in 60 s" >&2; return 1; }
  done
}

# lab_throttle BYTES_PER_S DISK...: the host caps the reads of the run's
# disks DISK... (their config names: hdd1, ...) at BYTES_PER_S while the
# guest runs (qemu's block_set_io_throttle over QMP; 0 lifts the cap, and
# every other limit of the drive is replaced). Returns 0 once the host says
# it is applied; 1 with the reason on stderr (an unknown disk, a QMP error,
# no answer in 60 s).
lab_throttle() {
  lab_host THROTTLE "$@" || return 1
  echo "lab: reads of $(echo $* | cut -d' ' -f2-) capped at $1 B/s (0: no cap)"
}

# lab_dirty start|count DISK...: qemu's dirty bitmaps of the run's disks
# DISK... (config names). start gives each a fresh bitmap, which marks every
# block the guest writes from then on (the same bytes again included);
# count prints "hdd1=BYTES hdd2=BYTES ..." (64 KiB blocks). sync first: a
# write still in the page cache has not reached the disk. Returns 1 with
# the reason on stderr (an unknown disk, count before start, no answer).
lab_dirty() { lab_host DIRTY "$@"; }

# lab_disk_names: the config names of the run's disks (hdd1 ...) that are
# present in the guest now.
lab_disk_names() {
  for e in $LAB_DISKS; do s=${e#*:}; s=${s%%:*}; lab_dev $s >/dev/null 2>&1 && echo ${e%%:*}; done
}

# lab_rebuild_rate KIB: cap every md/dm-raid resync and rebuild at KIB KiB/s
# per device (md's speed_limit_max; 0 puts back the kernel's default,
# 200000), with no table reload. lvchange --maxrecoveryrate reloads the
# RAID LV's table (a suspend and resume); one made while a rebuild of
# raid5 + integrity ran left lvchange blocked in the guest's 6.1 kernel for
# good twice on 2026-12-02 (CI: "blocked for more than 1208 seconds", and a
# TestLVMReplace run in case b): a running rebuild's rate is changed here
# instead. It applies to a RAID LV whose own max_recovery_rate is unset
# (0), as in the lab.
lab_rebuild_rate() {
  lab_r=$1; [ "$lab_r" = 0 ] && lab_r=200000
  echo "$lab_r" > /proc/sys/dev/raid/speed_limit_max && echo "lab: rebuild rate cap ${lab_r} KiB/s per device"
}
