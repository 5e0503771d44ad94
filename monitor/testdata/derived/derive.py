#!/usr/bin/env python3
"""Builds the derived fixture trees in this folder from the numbers in
../shared/lab-reference/sample-run.log (lvm2 2.03.16, kernel 6.1, 6 HDDs + 2 NVMe
in the VM lab). See README.md for what is real and what is derived.
Run from this folder: python3 derive.py"""
import json, os, shutil

HDD = ["sda", "sdb", "sdc", "sdd", "sde", "sdf"]
NVME = ["nvme0n1", "nvme1n1"]
DEVNO = {"sda": "8:0", "sdb": "8:16", "sdc": "8:32", "sdd": "8:48", "sde": "8:64", "sdf": "8:80",
         "nvme0n1": "259:0", "nvme1n1": "259:1"}
# /proc/diskstats of STEP 5 (after the initial sync), verbatim
STEP5 = """   8      16 sdb 58791 22613 1682997 283225 449 148 25076 903 0 28532 284742 0 0 0 0 297 613
   8       0 sda 59035 22543 1694228 282035 441 111 23660 990 0 28824 283623 0 0 0 0 294 597
   8      32 sdc 58692 22675 1682613 280957 479 133 25548 1121 0 28480 282810 0 0 0 0 299 730
   8      48 sdd 54510 7635 1445922 249964 395 210 47671 913 0 24772 251332 0 0 0 0 202 454
   8      80 sdf 54429 7716 1446050 252493 370 163 45431 1387 0 25644 254481 0 0 0 0 196 600
   8      64 sde 54687 7475 1445794 255950 393 193 39287 1054 0 25844 257488 0 0 0 0 192 483
 259       1 nvme1n1 139 1 11120 118 12 0 837 6 0 104 125 0 0 0 0 0 0
 259       0 nvme0n1 161 2 11912 134 13 0 845 15 0 120 149 0 0 0 0 0 0"""
# per-disk deltas of the full O_DIRECT read of vg-hdd/tables (STEP 6), verbatim
STEP6 = {"sda": (3173, 411888), "sdb": (3151, 412032), "sdc": (3185, 412160),
         "sdd": (3160, 411776), "sde": (3181, 412160), "sdf": (3160, 412928)}


def parse(text):
    out = {}
    for line in text.strip().splitlines():
        f = line.split()
        out[f[2]] = [int(x) for x in f[:2]] + [f[2]] + [int(x) for x in f[3:]]
    return out


def fmt(stats):
    lines = []
    for name, f in stats.items():
        lines.append("%4d %7d %s %s" % (f[0], f[1], name, " ".join(str(x) for x in f[3:])))
    return "\n".join(lines) + "\n"


def add(stats, name, reads, sectors, secs=5):
    """reads/sectors more, with HDD-like ticks: 4 ms per read, 85 % busy."""
    f = list(stats[name])
    f[3] += reads; f[5] += sectors; f[6] += 4 * reads
    if reads:
        f[12] += int(850 * secs); f[13] += 4 * reads
    stats[name] = f


def dmline(major, minor, name):
    return [major, minor, name] + [0] * 17


def lvmjson(key, rows):
    """LVM 2.03.16's own layout: one object per line, "k":"v" pairs joined by ", "."""
    lines = ["                  {" + ", ".join('"%s":%s' % (k, json.dumps(v)) for k, v in r.items()) + "}" for r in rows]
    return ('{\n      "report": [\n          {\n              "%s": [\n' % key + ",\n".join(lines) +
            "\n              ]\n          }\n      ]\n  }\n")


def tree(root, devs, byid, lvs, pvs, samples):
    """devs: kernel name -> dict(dev=, dmname=, slaves=[...], rotational=)"""
    if os.path.exists(root):
        shutil.rmtree(root)
    for name, d in devs.items():
        b = os.path.join(root, "sys/block", name)
        os.makedirs(os.path.join(b, "slaves"))
        os.makedirs(os.path.join(b, "holders"))
        os.makedirs(os.path.join(b, "queue"))
        open(os.path.join(b, "dev"), "w").write(d["dev"] + "\n")
        open(os.path.join(b, "queue/rotational"), "w").write(str(d.get("rotational", 0)) + "\n")
        if d.get("dmname"):
            os.makedirs(os.path.join(b, "dm"))
            open(os.path.join(b, "dm/name"), "w").write(d["dmname"] + "\n")
            open(os.path.join(b, "dm/uuid"), "w").write("LVM-derived" + d["dmname"] + "\n")
        for s in d.get("slaves", []):
            os.symlink("../../" + s, os.path.join(b, "slaves", s))
    for name, d in devs.items():
        for s in d.get("slaves", []):
            os.symlink("../../" + name, os.path.join(root, "sys/block", s, "holders", name))
    os.makedirs(os.path.join(root, "dev/disk/by-id"))
    for link, target in byid.items():
        os.symlink("../../" + target, os.path.join(root, "dev/disk/by-id", link))
    os.makedirs(os.path.join(root, "lvm"))
    open(os.path.join(root, "lvm/lvs.json"), "w").write(lvmjson("lv", lvs))
    open(os.path.join(root, "lvm/pvs.json"), "w").write(lvmjson("pv", pvs))
    os.makedirs(os.path.join(root, "proc"))
    for i, s in enumerate(samples):
        open(os.path.join(root, "proc/diskstats.%d" % i), "w").write(fmt(s))
    open(os.path.join(root, "proc/diskstats"), "w").write(fmt(samples[-1]))


def disks(exclude=()):
    devs, byid = {}, {}
    for i, n in enumerate(HDD):
        if n in exclude:
            continue
        devs[n] = {"dev": DEVNO[n], "rotational": 1}
        byid["scsi-0QEMU_QEMU_HARDDISK_HDD%d" % (i + 1)] = n
    byid["wwn-0x5000c500a0000001"] = "sda"  # a wwn- link too: it wins (internal/blockdev's rule)
    for i, n in enumerate(NVME):
        devs[n] = {"dev": DEVNO[n], "rotational": 0}
        byid["nvme-QEMU_NVMe_Ctrl_NVME%d" % (i + 1)] = n
        byid["nvme-eui.%016x" % (i + 1)] = n
    return devs, byid


def lv(name, vg, attr, segtype, stripes, devices, health="", sync="", action="", integ="", mode="", bs="-1", size="0", dstripes=None):
    return {"lv_name": name, "vg_name": vg, "lv_attr": attr, "lv_size": size, "segtype": segtype,
            "stripes": str(stripes), "data_stripes": str(dstripes if dstripes is not None else stripes),
            "stripe_size": "65536" if segtype.startswith("raid") else "0", "devices": devices,
            "lv_health_status": health, "sync_percent": sync, "raid_sync_action": action,
            "raid_mismatch_count": "0" if segtype.startswith("raid") else "",
            "integritymismatches": integ, "raidintegritymode": mode, "raidintegrityblocksize": bs,
            "lv_uuid": "derived-" + name.strip("[]"), "lv_dm_path": ""}


def pv(name, vg, free="0"):
    return {"pv_name": name, "vg_name": vg, "pv_size": "264241152", "pv_free": free,
            "pv_pe_count": "63", "pv_uuid": "derived-" + name, "dev_size": "268435456"}


def tables_lvs(missing=None):
    attr = "rwi-a-r-p-" if missing else "rwi-a-r---"
    out = [lv("tables", "vg-hdd", attr, "raid5", 6, ",".join("tables_rimage_%d(0)" % i for i in range(6)),
              health="partial" if missing else "", sync="100.00", action="idle", integ="0", mode="journal", bs="512", dstripes=5)]
    for i, d in enumerate(HDD):
        dev = "[unknown]" if d == missing else "/dev/" + d
        out += [lv("[tables_rimage_%d]" % i, "vg-hdd", "gwi-aor---", "integrity", 1, "tables_rimage_%d_iorig(0)" % i, integ="0", mode="journal", bs="512"),
                lv("[tables_rimage_%d_imeta]" % i, "vg-hdd", "ewi-ao----", "linear", 1, "%s(61)" % dev),
                lv("[tables_rimage_%d_iorig]" % i, "vg-hdd", "-wi-ao----", "linear", 1, "%s(1)" % dev)]
    for i, d in enumerate(HDD):
        dev = "[unknown]" if d == missing else "/dev/" + d
        out.append(lv("[tables_rmeta_%d]" % i, "vg-hdd", "ewi-aor---", "linear", 1, "%s(0)" % dev))
    out += [lv("prefix", "vg-nvme", "rwi-a-r---", "raid0", 2, "prefix_rimage_0(0),prefix_rimage_1(0)"),
            lv("[prefix_rimage_0]", "vg-nvme", "iwi-aor---", "linear", 1, "/dev/nvme0n1(0)"),
            lv("[prefix_rimage_1]", "vg-nvme", "iwi-aor---", "linear", 1, "/dev/nvme1n1(0)")]
    return out


def tables_devs(devs, missing=None):
    """dm-0..dm-27 exactly as in the sample run's /dev/mapper listing and dmsetup deps."""
    n = 0
    top = []
    for i, d in enumerate(HDD):
        base = "vg--hdd-tables_"
        slave = [] if d == missing else [d]
        devs["dm-%d" % n] = {"dev": "254:%d" % n, "dmname": base + "rmeta_%d" % i, "slaves": slave}
        devs["dm-%d" % (n + 1)] = {"dev": "254:%d" % (n + 1), "dmname": base + "rimage_%d_imeta" % i, "slaves": slave}
        devs["dm-%d" % (n + 2)] = {"dev": "254:%d" % (n + 2), "dmname": base + "rimage_%d_iorig" % i, "slaves": slave}
        devs["dm-%d" % (n + 3)] = {"dev": "254:%d" % (n + 3), "dmname": base + "rimage_%d" % i, "slaves": ["dm-%d" % (n + 1), "dm-%d" % (n + 2)]}
        top += ["dm-%d" % n, "dm-%d" % (n + 3)]
        n += 4
    devs["dm-24"] = {"dev": "254:24", "dmname": "vg--hdd-tables", "slaves": top}
    devs["dm-25"] = {"dev": "254:25", "dmname": "vg--nvme-prefix_rimage_0", "slaves": ["nvme0n1"]}
    devs["dm-26"] = {"dev": "254:26", "dmname": "vg--nvme-prefix_rimage_1", "slaves": ["nvme1n1"]}
    devs["dm-27"] = {"dev": "254:27", "dmname": "vg--nvme-prefix", "slaves": ["dm-25", "dm-26"]}


def stats_with_dm(base, names):
    s = dict(base)
    for n in names:
        if n not in s:
            s[n] = dmline(254, int(n[3:]), n)
    return s


# 1. balanced: raid5 + integrity over 6 HDDs (--stripes 5), raid0 over 2 NVMe
devs, byid = disks()
tables_devs(devs)
s0 = stats_with_dm(parse(STEP5), ["dm-%d" % i for i in range(28)])
samples = [s0]
for k in range(2):
    s = dict(samples[-1])
    for d, (r, sec) in STEP6.items():
        add(s, d, r + 7 * k, sec)
    add(s, "dm-24", 1200, 2457600)
    samples.append(s)
tree("balanced", devs, byid, tables_lvs(),
     [pv("/dev/" + d, "vg-hdd") for d in HDD] + [pv("/dev/" + d, "vg-nvme") for d in NVME], samples)

# 2. misbuilt: raid5 WITHOUT --stripes over 6 HDDs (STEP 3a): 3 images, each two
# disks concatenated (sda+sdd, sdb+sde, sdc+sdf); a sequential read of the first
# half of the LV touches sda, sdb, sdc only.
devs, byid = disks()
top = []
for i in range(3):
    a, b = HDD[i], HDD[i + 3]
    devs["dm-%d" % (2 * i)] = {"dev": "254:%d" % (2 * i), "dmname": "vg--hdd-probe_rmeta_%d" % i, "slaves": [a]}
    devs["dm-%d" % (2 * i + 1)] = {"dev": "254:%d" % (2 * i + 1), "dmname": "vg--hdd-probe_rimage_%d" % i, "slaves": [a, b]}
    top += ["dm-%d" % (2 * i), "dm-%d" % (2 * i + 1)]
devs["dm-6"] = {"dev": "254:6", "dmname": "vg--hdd-probe", "slaves": top}
lvs = [lv("probe", "vg-hdd", "rwi-a-r---", "raid5", 3, "probe_rimage_0(0),probe_rimage_1(0),probe_rimage_2(0)", sync="100.00", action="idle", dstripes=2)]
rows = []
for i in range(3):
    rows.append(lv("[probe_rimage_%d]" % i, "vg-hdd", "iwi-aor---", "linear", 1, "/dev/%s(1)" % HDD[i]))
    rows.append(lv("[probe_rimage_%d]" % i, "vg-hdd", "iwi-aor---", "linear", 1, "/dev/%s(0)" % HDD[i + 3]))
lvs += rows + [lv("[probe_rmeta_%d]" % i, "vg-hdd", "ewi-aor---", "linear", 1, "/dev/%s(0)" % HDD[i]) for i in range(3)]
s0 = stats_with_dm(parse(STEP5), ["dm-%d" % i for i in range(7)])
samples = [s0]
for k in range(2):
    s = dict(samples[-1])
    for d in HDD[:3]:
        add(s, d, 4700 + 11 * k, 1202000)
    add(s, "dm-6", 2800, 5734400)
    samples.append(s)
tree("misbuilt", devs, byid, lvs, [pv("/dev/" + d, "vg-hdd") for d in HDD], samples)

# 3. missing: the balanced array booted without sdf, activated degraded.
devs, byid = disks(exclude=("sdf",))
tables_devs(devs, missing="sdf")
# LVM maps the missing PV's extents to error targets: dm devices with no slaves
devs["dm-20"]["slaves"] = ["dm-28"]
devs["dm-21"]["slaves"] = ["dm-28"]
devs["dm-22"]["slaves"] = ["dm-28"]
devs["dm-28"] = {"dev": "254:28", "dmname": "vg--hdd-tables_rimage_5_iorig-missing_0_0", "slaves": []}
base = parse(STEP5); del base["sdf"]
s0 = stats_with_dm(base, ["dm-%d" % i for i in range(29)])
samples = [s0]
for k in range(2):
    s = dict(samples[-1])
    for d in HDD[:5]:
        r, sec = STEP6[d]
        add(s, d, r + 5 * k, sec)
    samples.append(s)
tree("missing", devs, byid, tables_lvs(missing="sdf"),
     [pv("/dev/" + d, "vg-hdd") for d in HDD[:5]] + [pv("[unknown]", "vg-hdd")] + [pv("/dev/" + d, "vg-nvme") for d in NVME], samples)
print("derived: balanced misbuilt missing")
