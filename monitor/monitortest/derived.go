// Package monitortest writes the derived fixture trees of tbhost monitor's
// tests (a --root each: sys/block, dev/disk/by-id, proc/diskstats.N,
// lvm/lvs.json and lvm/pvs.json). They are DERIVED, not captured: built
// from the numbers of the VM lab's reference run
// (../shared/lab-reference/sample-run.log: lvm2 2.03.16, kernel 6.1, 6 x
// 256 MiB HDDs + 2 x 128 MiB NVMe under qemu), which predates the lab's
// real captures (internal/lab/testdata/captures). monitor/testdata/README.md
// says what is real and what is made up. Test code only: the binary does
// not link it.
package monitortest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Trees are the derived trees Write knows.
var Trees = []string{"balanced", "misbuilt", "missing", "slow", "nvmeparts"}

// Write writes the derived tree name (one of Trees) at root.
func Write(root, name string) error {
	var t tree
	switch name {
	case "balanced":
		t = balanced()
	case "misbuilt":
		t = misbuilt()
	case "missing":
		t = missing()
	case "slow":
		t = slow()
	case "nvmeparts":
		t = nvmeParts()
	default:
		return fmt.Errorf("no derived tree %q (have %s)", name, strings.Join(Trees, ", "))
	}
	if err := t.write(root); err != nil {
		return fmt.Errorf("derived tree %s: %w", name, err)
	}
	return nil
}

var (
	hdds  = []string{"sda", "sdb", "sdc", "sdd", "sde", "sdf"}
	nvmes = []string{"nvme0n1", "nvme1n1"}
	devno = map[string]string{"sda": "8:0", "sdb": "8:16", "sdc": "8:32", "sdd": "8:48", "sde": "8:64", "sdf": "8:80",
		"nvme0n1": "259:0", "nvme1n1": "259:1"}
)

// step5 is /proc/diskstats of the run's STEP 5 (after the initial sync),
// verbatim.
const step5 = `   8      16 sdb 58791 22613 1682997 283225 449 148 25076 903 0 28532 284742 0 0 0 0 297 613
   8       0 sda 59035 22543 1694228 282035 441 111 23660 990 0 28824 283623 0 0 0 0 294 597
   8      32 sdc 58692 22675 1682613 280957 479 133 25548 1121 0 28480 282810 0 0 0 0 299 730
   8      48 sdd 54510 7635 1445922 249964 395 210 47671 913 0 24772 251332 0 0 0 0 202 454
   8      80 sdf 54429 7716 1446050 252493 370 163 45431 1387 0 25644 254481 0 0 0 0 196 600
   8      64 sde 54687 7475 1445794 255950 393 193 39287 1054 0 25844 257488 0 0 0 0 192 483
 259       1 nvme1n1 139 1 11120 118 12 0 837 6 0 104 125 0 0 0 0 0 0
 259       0 nvme0n1 161 2 11912 134 13 0 845 15 0 120 149 0 0 0 0 0 0`

// step6 is each disk's (reads, sectors) of the run's full O_DIRECT read of
// vg-hdd/tables (STEP 6), verbatim.
var step6 = map[string][2]int{"sda": {3173, 411888}, "sdb": {3151, 412032}, "sdc": {3185, 412160},
	"sdd": {3160, 411776}, "sde": {3181, 412160}, "sdf": {3160, 412928}}

// line is one /proc/diskstats line: major, minor and the 17 counters.
type line struct {
	major, minor int
	v            [17]int
}

// stats is one /proc/diskstats sample, in the order of its lines.
type stats struct {
	order []string
	lines map[string]line
}

func (s stats) clone() stats {
	c := stats{order: append([]string(nil), s.order...), lines: map[string]line{}}
	for k, v := range s.lines {
		c.lines[k] = v
	}
	return c
}

func (s *stats) set(name string, l line) {
	if _, ok := s.lines[name]; !ok {
		s.order = append(s.order, name)
	}
	s.lines[name] = l
}

func (s *stats) del(name string) {
	delete(s.lines, name)
	for i, n := range s.order {
		if n == name {
			s.order = append(s.order[:i], s.order[i+1:]...)
			return
		}
	}
}

func parseStats(text string) stats {
	s := stats{lines: map[string]line{}}
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(l)
		var ln line
		ln.major, _ = strconv.Atoi(f[0])
		ln.minor, _ = strconv.Atoi(f[1])
		for i, x := range f[3:] {
			ln.v[i], _ = strconv.Atoi(x)
		}
		s.set(f[2], ln)
	}
	return s
}

func (s stats) format() string {
	var b strings.Builder
	for _, name := range s.order {
		l := s.lines[name]
		vals := make([]string, len(l.v))
		for i, x := range l.v {
			vals[i] = strconv.Itoa(x)
		}
		fmt.Fprintf(&b, "%4d %7d %s %s\n", l.major, l.minor, name, strings.Join(vals, " "))
	}
	return b.String()
}

// add counts reads and sectors more for name, with HDD-like ticks: 4 ms per
// read, 85 % busy over secs seconds.
func (s *stats) add(name string, reads, sectors int) {
	const secs = 5
	l := s.lines[name]
	l.v[0] += reads
	l.v[2] += sectors
	l.v[3] += 4 * reads
	if reads != 0 {
		l.v[9] += 850 * secs
		l.v[10] += 4 * reads
	}
	s.set(name, l)
}

// withDM adds an all-zero line for each dm device not in s yet.
func withDM(base stats, n int) stats {
	s := base.clone()
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("dm-%d", i)
		if _, ok := s.lines[name]; !ok {
			s.set(name, line{major: 254, minor: i})
		}
	}
	return s
}

type dev struct {
	dev        string
	dmName     string
	slaves     []string
	rotational int
	parent     string // a partition's disk: it lives at sys/block/<parent>/<name>
}

type tree struct {
	devs    map[string]*dev
	byID    map[string]string
	lvs     [][][2]string
	pvs     [][][2]string
	samples []stats
}

func (t tree) write(root string) error {
	if err := os.RemoveAll(root); err != nil {
		return err
	}
	w := func(p, s string) error {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, []byte(s), 0o644)
	}
	link := func(target, p string) error {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.Symlink(target, p)
	}
	// sysfs dir of a device, relative to sys/block: a partition's is under its disk
	rel := func(name string) string {
		if d, ok := t.devs[name]; ok && d.parent != "" {
			return d.parent + "/" + name
		}
		return name
	}
	for name, d := range t.devs {
		if d.parent != "" {
			b := filepath.Join("sys", "block", d.parent, name)
			if err := w(filepath.Join(b, "partition"), strings.TrimPrefix(name, d.parent+"p")+"\n"); err != nil {
				return err
			}
			if err := w(filepath.Join(b, "dev"), d.dev+"\n"); err != nil {
				return err
			}
			continue
		}
		b := filepath.Join("sys", "block", name)
		for _, sub := range []string{"slaves", "holders", "queue"} {
			if err := os.MkdirAll(filepath.Join(root, b, sub), 0o755); err != nil {
				return err
			}
		}
		if err := w(filepath.Join(b, "dev"), d.dev+"\n"); err != nil {
			return err
		}
		if err := w(filepath.Join(b, "queue", "rotational"), strconv.Itoa(d.rotational)+"\n"); err != nil {
			return err
		}
		if d.dmName != "" {
			if err := w(filepath.Join(b, "dm", "name"), d.dmName+"\n"); err != nil {
				return err
			}
			if err := w(filepath.Join(b, "dm", "uuid"), "LVM-derived"+d.dmName+"\n"); err != nil {
				return err
			}
		}
		for _, s := range d.slaves {
			if err := link("../../"+rel(s), filepath.Join(b, "slaves", s)); err != nil {
				return err
			}
			up := "../../"
			if strings.Contains(rel(s), "/") {
				up = "../../../"
			}
			if err := link(up+name, filepath.Join("sys", "block", rel(s), "holders", name)); err != nil {
				return err
			}
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "dev", "disk", "by-id"), 0o755); err != nil {
		return err
	}
	for l, target := range t.byID {
		if err := link("../../"+target, filepath.Join("dev", "disk", "by-id", l)); err != nil {
			return err
		}
	}
	if err := w(filepath.Join("lvm", "lvs.json"), lvmJSON("lv", t.lvs)); err != nil {
		return err
	}
	if err := w(filepath.Join("lvm", "pvs.json"), lvmJSON("pv", t.pvs)); err != nil {
		return err
	}
	for i, s := range t.samples {
		if err := w(filepath.Join("proc", fmt.Sprintf("diskstats.%d", i)), s.format()); err != nil {
			return err
		}
	}
	return w(filepath.Join("proc", "diskstats"), t.samples[len(t.samples)-1].format())
}

// lvmJSON is LVM 2.03.16's own layout: one object per line, "k":"v" pairs
// joined by ", ".
func lvmJSON(key string, rows [][][2]string) string {
	lines := make([]string, len(rows))
	for i, r := range rows {
		pairs := make([]string, len(r))
		for j, kv := range r {
			v, _ := json.Marshal(kv[1])
			pairs[j] = fmt.Sprintf("%q:%s", kv[0], v)
		}
		lines[i] = "                  {" + strings.Join(pairs, ", ") + "}"
	}
	return "{\n      \"report\": [\n          {\n              \"" + key + "\": [\n" + strings.Join(lines, ",\n") +
		"\n              ]\n          }\n      ]\n  }\n"
}

func disks(exclude string) (map[string]*dev, map[string]string) {
	devs, byID := map[string]*dev{}, map[string]string{}
	for i, n := range hdds {
		if n == exclude {
			continue
		}
		devs[n] = &dev{dev: devno[n], rotational: 1}
		byID[fmt.Sprintf("scsi-0QEMU_QEMU_HARDDISK_HDD%d", i+1)] = n
	}
	byID["wwn-0x5000c500a0000001"] = "sda" // a wwn- link too: it wins (internal/blockdev's rule)
	for i, n := range nvmes {
		devs[n] = &dev{dev: devno[n]}
		byID[fmt.Sprintf("nvme-QEMU_NVMe_Ctrl_NVME%d", i+1)] = n
		byID[fmt.Sprintf("nvme-eui.%016x", i+1)] = n
	}
	return devs, byID
}

// lvOpts are the optional columns of an lvs row.
type lvOpts struct {
	health, sync, action, integ, mode string
	bs                                string // default -1
	dataStripes                       int    // default stripes
}

func lv(name, vg, attr, segtype string, stripes int, devices string, o lvOpts) [][2]string {
	raid := strings.HasPrefix(segtype, "raid")
	stripeSize, mismatches := "0", ""
	if raid {
		stripeSize, mismatches = "65536", "0"
	}
	if o.bs == "" {
		o.bs = "-1"
	}
	if o.dataStripes == 0 {
		o.dataStripes = stripes
	}
	return [][2]string{{"lv_name", name}, {"vg_name", vg}, {"lv_attr", attr}, {"lv_size", "0"}, {"segtype", segtype},
		{"stripes", strconv.Itoa(stripes)}, {"data_stripes", strconv.Itoa(o.dataStripes)}, {"stripe_size", stripeSize},
		{"devices", devices}, {"lv_health_status", o.health}, {"sync_percent", o.sync}, {"raid_sync_action", o.action},
		{"raid_mismatch_count", mismatches}, {"integritymismatches", o.integ}, {"raidintegritymode", o.mode},
		{"raidintegrityblocksize", o.bs}, {"lv_uuid", "derived-" + strings.Trim(name, "[]")}, {"lv_dm_path", ""}}
}

func pv(name, vg string) [][2]string {
	return [][2]string{{"pv_name", name}, {"vg_name", vg}, {"pv_size", "264241152"}, {"pv_free", "0"},
		{"pv_pe_count", "63"}, {"pv_uuid", "derived-" + name}, {"dev_size", "268435456"}}
}

func tablesLVs(missing string) [][][2]string {
	attr, health := "rwi-a-r---", ""
	if missing != "" {
		attr, health = "rwi-a-r-p-", "partial"
	}
	images := make([]string, len(hdds))
	for i := range hdds {
		images[i] = fmt.Sprintf("tables_rimage_%d(0)", i)
	}
	out := [][][2]string{lv("tables", "vg-hdd", attr, "raid5", 6, strings.Join(images, ","),
		lvOpts{health: health, sync: "100.00", action: "idle", integ: "0", mode: "journal", bs: "512", dataStripes: 5})}
	device := func(d string) string {
		if d == missing {
			return "[unknown]"
		}
		return "/dev/" + d
	}
	for i, d := range hdds {
		out = append(out,
			lv(fmt.Sprintf("[tables_rimage_%d]", i), "vg-hdd", "gwi-aor---", "integrity", 1, fmt.Sprintf("tables_rimage_%d_iorig(0)", i), lvOpts{integ: "0", mode: "journal", bs: "512"}),
			lv(fmt.Sprintf("[tables_rimage_%d_imeta]", i), "vg-hdd", "ewi-ao----", "linear", 1, device(d)+"(61)", lvOpts{}),
			lv(fmt.Sprintf("[tables_rimage_%d_iorig]", i), "vg-hdd", "-wi-ao----", "linear", 1, device(d)+"(1)", lvOpts{}))
	}
	for i, d := range hdds {
		out = append(out, lv(fmt.Sprintf("[tables_rmeta_%d]", i), "vg-hdd", "ewi-aor---", "linear", 1, device(d)+"(0)", lvOpts{}))
	}
	return append(out,
		lv("prefix", "vg-nvme", "rwi-a-r---", "raid0", 2, "prefix_rimage_0(0),prefix_rimage_1(0)", lvOpts{}),
		lv("[prefix_rimage_0]", "vg-nvme", "iwi-aor---", "linear", 1, "/dev/nvme0n1(0)", lvOpts{}),
		lv("[prefix_rimage_1]", "vg-nvme", "iwi-aor---", "linear", 1, "/dev/nvme1n1(0)", lvOpts{}))
}

// tablesDevs adds dm-0..dm-27 exactly as in the sample run's /dev/mapper
// listing and dmsetup deps.
func tablesDevs(devs map[string]*dev, missing string) {
	dm := func(n int) string { return fmt.Sprintf("dm-%d", n) }
	var top []string
	n := 0
	for i, d := range hdds {
		const base = "vg--hdd-tables_"
		slave := []string{d}
		if d == missing {
			slave = nil
		}
		devs[dm(n)] = &dev{dev: fmt.Sprintf("254:%d", n), dmName: fmt.Sprintf(base+"rmeta_%d", i), slaves: slave}
		devs[dm(n+1)] = &dev{dev: fmt.Sprintf("254:%d", n+1), dmName: fmt.Sprintf(base+"rimage_%d_imeta", i), slaves: slave}
		devs[dm(n+2)] = &dev{dev: fmt.Sprintf("254:%d", n+2), dmName: fmt.Sprintf(base+"rimage_%d_iorig", i), slaves: slave}
		devs[dm(n+3)] = &dev{dev: fmt.Sprintf("254:%d", n+3), dmName: fmt.Sprintf(base+"rimage_%d", i), slaves: []string{dm(n + 1), dm(n + 2)}}
		top = append(top, dm(n), dm(n+3))
		n += 4
	}
	devs["dm-24"] = &dev{dev: "254:24", dmName: "vg--hdd-tables", slaves: top}
	devs["dm-25"] = &dev{dev: "254:25", dmName: "vg--nvme-prefix_rimage_0", slaves: []string{"nvme0n1"}}
	devs["dm-26"] = &dev{dev: "254:26", dmName: "vg--nvme-prefix_rimage_1", slaves: []string{"nvme1n1"}}
	devs["dm-27"] = &dev{dev: "254:27", dmName: "vg--nvme-prefix", slaves: []string{"dm-25", "dm-26"}}
}

func pvsOf(vg string, names []string) [][][2]string {
	var out [][][2]string
	for _, n := range names {
		out = append(out, pv("/dev/"+n, vg))
	}
	return out
}

// balanced: raid5 + integrity over 6 HDDs (--stripes 5), raid0 over 2 NVMe.
func balanced() tree {
	devs, byID := disks("")
	tablesDevs(devs, "")
	samples := []stats{withDM(parseStats(step5), 28)}
	for k := 0; k < 2; k++ {
		s := samples[len(samples)-1].clone()
		for _, d := range hdds {
			s.add(d, step6[d][0]+7*k, step6[d][1])
		}
		s.add("dm-24", 1200, 2457600)
		samples = append(samples, s)
	}
	return tree{devs: devs, byID: byID, lvs: tablesLVs(""),
		pvs: append(pvsOf("vg-hdd", hdds), pvsOf("vg-nvme", nvmes)...), samples: samples}
}

// slow: balanced, but sdc is a fail-slow disk: it serves its share of the
// reads (the same count as its siblings) at 30 ms per read instead of 4,
// 100 % busy, with a deep queue (issue 20: WARNING, 7.5x the siblings).
func slow() tree {
	t := balanced()
	for k := 1; k < len(t.samples); k++ {
		s := t.samples[k].clone()
		l := s.lines["sdc"]
		reads := l.v[0] - t.samples[k-1].lines["sdc"].v[0]
		prev := t.samples[k-1].lines["sdc"]
		// replace this interval's ticks: 30 ms per read, busy 5000 ms of 5 s
		l.v[3] = prev.v[3] + 30*reads
		l.v[9] = prev.v[9] + 5000
		l.v[10] = prev.v[10] + 30*reads
		s.set("sdc", l)
		// later samples build on this one
		for j := k + 1; j < len(t.samples); j++ {
			n := t.samples[j].lines["sdc"]
			d := n.v
			for _, f := range []int{3, 9, 10} {
				d[f] += l.v[f] - t.samples[k].lines["sdc"].v[f]
			}
			n.v = d
			t.samples[j].set("sdc", n)
		}
		t.samples[k] = s
	}
	return t
}

// misbuilt: raid5 WITHOUT --stripes over 6 HDDs (STEP 3a): 3 images, each
// two disks concatenated (sda+sdd, sdb+sde, sdc+sdf); a sequential read of
// the first half of the LV touches sda, sdb, sdc only.
func misbuilt() tree {
	devs, byID := disks("")
	var top []string
	for i := 0; i < 3; i++ {
		a, b := hdds[i], hdds[i+3]
		devs[fmt.Sprintf("dm-%d", 2*i)] = &dev{dev: fmt.Sprintf("254:%d", 2*i), dmName: fmt.Sprintf("vg--hdd-probe_rmeta_%d", i), slaves: []string{a}}
		devs[fmt.Sprintf("dm-%d", 2*i+1)] = &dev{dev: fmt.Sprintf("254:%d", 2*i+1), dmName: fmt.Sprintf("vg--hdd-probe_rimage_%d", i), slaves: []string{a, b}}
		top = append(top, fmt.Sprintf("dm-%d", 2*i), fmt.Sprintf("dm-%d", 2*i+1))
	}
	devs["dm-6"] = &dev{dev: "254:6", dmName: "vg--hdd-probe", slaves: top}
	lvs := [][][2]string{lv("probe", "vg-hdd", "rwi-a-r---", "raid5", 3, "probe_rimage_0(0),probe_rimage_1(0),probe_rimage_2(0)",
		lvOpts{sync: "100.00", action: "idle", dataStripes: 2})}
	for i := 0; i < 3; i++ {
		lvs = append(lvs,
			lv(fmt.Sprintf("[probe_rimage_%d]", i), "vg-hdd", "iwi-aor---", "linear", 1, fmt.Sprintf("/dev/%s(1)", hdds[i]), lvOpts{}),
			lv(fmt.Sprintf("[probe_rimage_%d]", i), "vg-hdd", "iwi-aor---", "linear", 1, fmt.Sprintf("/dev/%s(0)", hdds[i+3]), lvOpts{}))
	}
	for i := 0; i < 3; i++ {
		lvs = append(lvs, lv(fmt.Sprintf("[probe_rmeta_%d]", i), "vg-hdd", "ewi-aor---", "linear", 1, fmt.Sprintf("/dev/%s(0)", hdds[i]), lvOpts{}))
	}
	samples := []stats{withDM(parseStats(step5), 7)}
	for k := 0; k < 2; k++ {
		s := samples[len(samples)-1].clone()
		for _, d := range hdds[:3] {
			s.add(d, 4700+11*k, 1202000)
		}
		s.add("dm-6", 2800, 5734400)
		samples = append(samples, s)
	}
	return tree{devs: devs, byID: byID, lvs: lvs, pvs: pvsOf("vg-hdd", hdds), samples: samples}
}

// missing: the balanced array booted without sdf, activated degraded. How
// LVM names the error-target device of the missing PV is a guess.
func missing() tree {
	devs, byID := disks("sdf")
	tablesDevs(devs, "sdf")
	// LVM maps the missing PV's extents to error targets: dm devices with no slaves
	for _, n := range []string{"dm-20", "dm-21", "dm-22"} {
		devs[n].slaves = []string{"dm-28"}
	}
	devs["dm-28"] = &dev{dev: "254:28", dmName: "vg--hdd-tables_rimage_5_iorig-missing_0_0"}
	base := parseStats(step5)
	base.del("sdf")
	samples := []stats{withDM(base, 29)}
	for k := 0; k < 2; k++ {
		s := samples[len(samples)-1].clone()
		for _, d := range hdds[:5] {
			s.add(d, step6[d][0]+5*k, step6[d][1])
		}
		samples = append(samples, s)
	}
	pvs := append(pvsOf("vg-hdd", hdds[:5]), pv("[unknown]", "vg-hdd"))
	return tree{devs: devs, byID: byID, lvs: tablesLVs("sdf"), pvs: append(pvs, pvsOf("vg-nvme", nvmes)...), samples: samples}
}

// nvmeParts: balanced, laid out as the reference host is (tbhost lvm plan
// --example): vg-nvme's PVs are partition 4 of each NVMe disk
// (nvme0n1p4, nvme1n1p4: sys/block/nvme0n1/nvme0n1p4, the dm images'
// slaves link there, by-id links with -part4), and the prefix array reads:
// 2000 reads/s on each partition (and so on its disk), 5 s apart.
func nvmeParts() tree {
	t := balanced()
	for i, n := range nvmes {
		p := n + "p4"
		t.devs[p] = &dev{dev: fmt.Sprintf("259:%d", i+2), parent: n}
		t.devs[fmt.Sprintf("dm-%d", 25+i)].slaves = []string{p}
		t.byID[fmt.Sprintf("nvme-QEMU_NVMe_Ctrl_NVME%d-part4", i+1)] = p
	}
	for _, rows := range [][][][2]string{t.lvs, t.pvs} {
		for _, r := range rows {
			for j, kv := range r {
				if kv[0] == "devices" || kv[0] == "pv_name" || kv[0] == "pv_uuid" {
					for _, n := range nvmes {
						r[j][1] = strings.ReplaceAll(r[j][1], "/dev/"+n+"(", "/dev/"+n+"p4(")
						if r[j][1] == "/dev/"+n || r[j][1] == "derived-/dev/"+n {
							r[j][1] += "p4"
						}
					}
				}
			}
		}
	}
	for k := range t.samples {
		s := t.samples[k].clone()
		for i, n := range nvmes {
			l := s.lines[n]
			l.minor = i + 2
			for f := range l.v {
				l.v[f] = 0
			}
			s.set(n+"p4", l)
			for j := 0; j < k; j++ {
				s.add(n, 10000, 10000*8)
				s.add(n+"p4", 10000, 10000*8)
			}
		}
		t.samples[k] = s
	}
	return t
}
