// Package lvmfake is an execx.Runner that behaves like lvm2 2.03.16 for
// the commands tbhost runs (pvcreate, vgcreate, lvcreate with raid5 +
// integrity or raid0; pvs/vgs/lvs JSON reports), for tests of apply and
// status without device-mapper. Its allocation follows lvm2 (rmeta at
// extent 0 of each PV, the image after it, the integrity metadata after
// the image, sized by lvm2's own formula) and it fails like lvm2 when the
// extents do not fit.
package lvmfake

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/tbhost/tbhost/internal/execx"
)

// pvExtents: pvcreate starts data at 1 MiB.
func pvExtents(size, ext int64) int64 { return (size - 1<<20) / ext }

// imetaExtents is lvm2 2.03.16's _lv_size_bytes_to_integrity_meta_bytes.
func imetaExtents(img, ext int64) int64 {
	const mib = 1 << 20
	b := img * ext
	m := (b/(500*mib) + 1) * 4 * mib
	switch {
	case b <= 512*mib:
		m += 4 * mib
	case b <= 1<<30:
		m += 8 * mib
	case b <= 4<<30:
		m += 32 * mib
	default:
		m += 64 * mib
	}
	return m / ext
}

// LVM keeps PVs, VGs and LVs and answers like lvm2 2.03.16 (JSON reports
// with every value a string, --units b --nosuffix).
type LVM struct {
	mu      sync.Mutex
	devSize map[string]int64  // /dev/sda -> bytes
	alias   map[string]string // /dev/disk/by-id/... -> /dev/sda
	pvs     map[string]*fakePV
	vgs     map[string]*fakeVG
	rows    []map[string]string // lvs -a rows
	Calls   [][]string
	// FailOn makes a command whose argv contains it fail with exit 5.
	FailOn string
	// Sync are the sync_percent values successive `lvs VG/LV` calls report
	// for a raid5 LV (the last repeats).
	Sync []string
}

type fakePV struct {
	name, vg string
	pe, used int64
}

type fakeVG struct {
	name   string
	extent int64
	pvs    []string
}

// New returns an LVM with no disks.
func New() *LVM {
	return &LVM{devSize: map[string]int64{}, alias: map[string]string{}, pvs: map[string]*fakePV{}, vgs: map[string]*fakeVG{}}
}

// Disk adds a block device (and other names of it, e.g. by-id links).
func (f *LVM) Disk(path string, size int64, aliases ...string) *LVM {
	f.devSize[path] = size
	for _, a := range aliases {
		f.alias[a] = path
	}
	return f
}

func (f *LVM) resolve(p string) string {
	if r, ok := f.alias[p]; ok {
		return r
	}
	return p
}

// Writes are the calls that are not reports (pvs, vgs, lvs).
func Writes(calls [][]string) [][]string {
	var out [][]string
	for _, c := range calls {
		if len(c) > 1 && c[0] == "lvm" && (c[1] == "pvs" || c[1] == "vgs" || c[1] == "lvs") {
			continue
		}
		out = append(out, c)
	}
	return out
}

func fail(msg string) (execx.Result, error) {
	return execx.Result{}, &execx.CommandError{ExitCode: 5, Stderr: "  " + msg}
}

// Run implements execx.Runner.
func (f *LVM) Run(ctx context.Context, argv ...string) (execx.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Calls = append(f.Calls, append([]string(nil), argv...))
	res := execx.Result{Argv: argv}
	if f.FailOn != "" && strings.Contains(strings.Join(argv, " "), f.FailOn) {
		return res, &execx.CommandError{Argv: argv, ExitCode: 5, Stderr: "  injected failure"}
	}
	if argv[0] == "wipefs" || strings.HasPrefix(argv[0], "mkfs.") {
		return res, nil
	}
	if argv[0] != "lvm" || len(argv) < 2 {
		return res, &execx.CommandError{Argv: argv, ExitCode: -1, Err: fmt.Errorf("fake lvm: unexpected %v", argv)}
	}
	argv = endOfOptions(argv)
	switch argv[1] {
	case "pvs":
		var rows []map[string]string
		for _, n := range sortedKeys(f.pvs) {
			p := f.pvs[n]
			ext := int64(4 << 20)
			rows = append(rows, map[string]string{"pv_name": p.name, "vg_name": p.vg, "pv_uuid": "uuid-" + p.name,
				"pv_size": str(p.pe * ext), "pv_free": str((p.pe - p.used) * ext), "pv_pe_count": str(p.pe),
				"pv_pe_alloc_count": str(p.used), "dev_size": str(f.devSize[p.name]), "pv_attr": "a--"})
		}
		res.Stdout = report("pv", rows)
	case "vgs":
		var rows []map[string]string
		for _, n := range sortedKeys(f.vgs) {
			v := f.vgs[n]
			var pe, used int64
			for _, p := range v.pvs {
				pe += f.pvs[p].pe
				used += f.pvs[p].used
			}
			rows = append(rows, map[string]string{"vg_name": v.name, "vg_uuid": "uuid-" + v.name, "vg_size": str(pe * v.extent),
				"vg_free": str((pe - used) * v.extent), "vg_extent_size": str(v.extent), "vg_extent_count": str(pe),
				"vg_free_count": str(pe - used), "pv_count": str(int64(len(v.pvs))), "lv_count": "0", "vg_attr": "wz--n-"})
		}
		res.Stdout = report("vg", rows)
	case "lvs":
		last := argv[len(argv)-1]
		var rows []map[string]string
		for _, r := range f.rows {
			if !strings.HasPrefix(last, "-") && strings.Contains(last, "/") {
				if r["vg_name"]+"/"+strings.Trim(r["lv_name"], "[]") != last {
					continue
				}
				if len(f.Sync) > 0 && r["segtype"] == "raid5" {
					r["sync_percent"] = f.Sync[0]
					if len(f.Sync) > 1 {
						f.Sync = f.Sync[1:]
					}
				}
			}
			rows = append(rows, r)
		}
		res.Stdout = report("lv", rows)
	case "pvcreate":
		dev := f.resolve(argv[2])
		size, ok := f.devSize[dev]
		if !ok {
			return fail("No device found for " + argv[2] + ".")
		}
		if _, ok := f.pvs[dev]; ok {
			return fail("Can't initialize physical volume \"" + dev + "\" of volume group without -ff")
		}
		f.pvs[dev] = &fakePV{name: dev, pe: pvExtents(size, 4<<20)}
	case "vgcreate":
		ext, _ := strconv.ParseInt(strings.TrimSuffix(argv[3], "k"), 10, 64)
		vg := &fakeVG{name: argv[4], extent: ext * 1024}
		if _, ok := f.vgs[vg.name]; ok {
			return fail("A volume group called " + vg.name + " already exists.")
		}
		for _, p := range argv[5:] {
			dev := f.resolve(p)
			pv, ok := f.pvs[dev]
			if !ok || pv.vg != "" {
				return fail("Physical volume " + p + " is not an orphan PV")
			}
			pv.vg = vg.name
			vg.pvs = append(vg.pvs, dev)
		}
		f.vgs[vg.name] = vg
	case "lvcreate":
		return f.lvcreate(argv)
	default:
		return res, &execx.CommandError{Argv: argv, ExitCode: 3, Stderr: "fake lvm: unknown command " + argv[1]}
	}
	return res, nil
}

func (f *LVM) lvcreate(argv []string) (execx.Result, error) {
	opt := map[string]string{}
	var pos []string
	for i := 2; i < len(argv); i++ {
		a := argv[i]
		switch a {
		case "--yes":
		case "--type", "--stripes", "--raidintegrity", "--raidintegritymode", "--raidintegrityblocksize", "--extents", "--name", "--wipesignatures":
			opt[a] = argv[i+1]
			i++
		default:
			pos = append(pos, a)
		}
	}
	vg, ok := f.vgs[pos[0]]
	if !ok {
		return fail("Volume group \"" + pos[0] + "\" not found")
	}
	name, typ := opt["--name"], opt["--type"]
	for _, r := range f.rows {
		if r["vg_name"] == vg.name && r["lv_name"] == name {
			return fail("Logical Volume \"" + name + "\" already exists in volume group \"" + vg.name + "\"")
		}
	}
	var devs []string
	for _, p := range pos[1:] {
		devs = append(devs, f.resolve(p))
	}
	extents, _ := strconv.ParseInt(opt["--extents"], 10, 64)
	data, _ := strconv.Atoi(opt["--stripes"])
	if data == 0 {
		data = 1
	}
	images := data
	if typ == "raid5" {
		images = data + 1
	}
	if len(devs) < images {
		return fail(fmt.Sprintf("Insufficient suitable allocatable extents: %d PVs for %d images", len(devs), images))
	}
	devs = devs[:images]
	img := extents / int64(data)
	integrity := opt["--raidintegrity"] == "y"
	meta := int64(0)
	if integrity {
		meta = imetaExtents(img, vg.extent)
	}
	rmeta := int64(0)
	if typ == "raid5" {
		rmeta = 1
	}
	for _, d := range devs {
		pv := f.pvs[d]
		if pv.pe-pv.used < img+rmeta+meta {
			return fail(fmt.Sprintf("Insufficient free space: %d extents needed, but only %d available", img+rmeta+meta, pv.pe-pv.used))
		}
	}
	ext := vg.extent
	base := map[string]string{"vg_name": vg.name, "lv_health_status": "", "lv_kernel_major": "254", "lv_kernel_minor": "0",
		"stripe_size": "0", "seg_start_pe": "0", "sync_percent": "", "raid_sync_action": "", "raid_mismatch_count": "",
		"integritymismatches": "", "raidintegritymode": "", "raidintegrityblocksize": "-1", "data_stripes": "1", "stripes": "1"}
	row := func(kv ...string) map[string]string {
		r := map[string]string{}
		for k, v := range base {
			r[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			r[kv[i]] = kv[i+1]
		}
		r["lv_uuid"] = "uuid-" + r["lv_name"]
		return r
	}
	var imgNames []string
	for i := range devs {
		imgNames = append(imgNames, fmt.Sprintf("%s_rimage_%d(0)", name, i))
	}
	top := row("lv_name", name, "lv_attr", "rwi-a-r---", "lv_size", str(extents*ext), "segtype", typ,
		"stripes", str(int64(images)), "data_stripes", str(int64(data)), "stripe_size", "65536", "seg_size_pe", str(extents),
		"devices", strings.Join(imgNames, ","))
	if typ == "raid5" {
		top["sync_percent"], top["raid_sync_action"], top["raid_mismatch_count"] = "0.00", "resync", "0"
	}
	if integrity {
		top["integritymismatches"], top["raidintegritymode"], top["raidintegrityblocksize"] = "0", opt["--raidintegritymode"], opt["--raidintegrityblocksize"]
	}
	f.rows = append(f.rows, top)
	for i, d := range devs {
		pv := f.pvs[d]
		start := pv.used
		at := func(off int64) string { return fmt.Sprintf("%s(%d)", d, start+off) }
		rn := fmt.Sprintf("%s_rimage_%d", name, i)
		if integrity {
			f.rows = append(f.rows, row("lv_name", "["+rn+"]", "lv_attr", "gwi-aor---", "lv_size", str(img*ext), "segtype", "integrity",
				"devices", rn+"_iorig(0)", "integritymismatches", "0", "raidintegritymode", opt["--raidintegritymode"],
				"raidintegrityblocksize", opt["--raidintegrityblocksize"], "seg_size_pe", str(img)))
			f.rows = append(f.rows, row("lv_name", "["+rn+"_imeta]", "lv_attr", "ewi-ao----", "lv_size", str(meta*ext), "segtype", "linear",
				"devices", at(rmeta+img), "seg_size_pe", str(meta)))
			f.rows = append(f.rows, row("lv_name", "["+rn+"_iorig]", "lv_attr", "-wi-ao----", "lv_size", str(img*ext), "segtype", "linear",
				"devices", at(rmeta), "seg_size_pe", str(img)))
		} else {
			f.rows = append(f.rows, row("lv_name", "["+rn+"]", "lv_attr", "iwi-aor---", "lv_size", str(img*ext), "segtype", "linear",
				"devices", at(rmeta), "seg_size_pe", str(img)))
		}
		if rmeta > 0 {
			f.rows = append(f.rows, row("lv_name", fmt.Sprintf("[%s_rmeta_%d]", name, i), "lv_attr", "ewi-aor---", "lv_size", str(ext),
				"segtype", "linear", "devices", at(0), "seg_size_pe", "1"))
		}
		pv.used += img + rmeta + meta
	}
	return execx.Result{Argv: argv}, nil
}

// endOfOptions drops the "--" that ends the options, as lvm2's option
// parsing does (the positional arguments stay where they are).
func endOfOptions(argv []string) []string {
	for i, a := range argv {
		if a == "--" {
			return append(append([]string(nil), argv[:i]...), argv[i+1:]...)
		}
	}
	return argv
}

func report(key string, rows []map[string]string) []byte {
	if rows == nil {
		rows = []map[string]string{}
	}
	b, _ := json.MarshalIndent(map[string]any{"report": []map[string]any{{key: rows}}}, "  ", "    ")
	return b
}

func str(n int64) string { return strconv.FormatInt(n, 10) }

func sortedKeys[T any](m map[string]T) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// NonRootReply is lvm2 2.03.16's answer to a report (`lvm lvs -a ...`) run
// by a user other than root, recorded in the lab as nobody: its warning,
// an empty report, the global lock it cannot open, exit 5.
func NonRootReply() execx.Reply {
	return execx.Reply{
		Stdout:   "  {\n      \"report\": [\n          {\n              \"lv\": [\n              ]\n          }\n      ]\n  }\n",
		Stderr:   "  WARNING: Running as a non-root user. Functionality may be unavailable.\n  /run/lock/lvm/P_global:aux: open failed: Permission denied\n",
		ExitCode: 5,
	}
}
