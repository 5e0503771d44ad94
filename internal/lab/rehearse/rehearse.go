package rehearse

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tbhost/tbhost/internal/lab"
	"github.com/tbhost/tbhost/lvm"
	"github.com/tbhost/tbhost/monitor"
)

// Options shape a rehearsal.
type Options struct {
	// HDDSizeMiB and NVMeSizeMiB are the virtual size of the largest
	// planned device of each role; the others keep their ratio to it.
	HDDSizeMiB, NVMeSizeMiB int64
	// MonitorFor is how long monitor check samples under a read load.
	MonitorFor time.Duration
}

// Device maps one planned device to its virtual stand-in.
type Device struct {
	PlanID    string `json:"plan_id"`
	Role      string `json:"role"`
	Kind      string `json:"kind"` // disk or part
	Serial    string `json:"serial"`
	RealSize  int64  `json:"real_size"`
	LabSize   int64  `json:"lab_size"`
	Disk      string `json:"lab_disk"`
	Partition int    `json:"partition,omitempty"`
	// Guest is how the guest's tbhost lvm plan names it.
	Guest string `json:"guest_device"`
}

// Scale says how much one role's devices were scaled down.
type Scale struct {
	Role   string  `json:"role"`
	Factor float64 `json:"factor"` // real bytes per virtual byte
	Real   int64   `json:"largest_real"`
	Lab    int64   `json:"largest_lab"`
}

// Rehearsal is a plan turned into virtual disks and guest steps.
type Rehearsal struct {
	Plan    *lvm.Plan
	Disks   []lab.Disk
	Devices []Device
	Scales  []Scale
	Steps   []lab.Step
	Notes   []string
}

const (
	rehearsePlanPath = "/lab/out/steps/plan/plan.yaml"
	minPartitionMiB  = 16
)

var unsafeSerial = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// New builds virtual disks shaped like the plan's devices (same
// count, role, block sizes, serials and WWNs; sizes scaled down per role)
// and the steps that re-plan the same arrays for them inside the guest,
// apply, apply again (must change nothing), check status and run the
// monitor under a read load.
func New(p *lvm.Plan, opts Options) (*Rehearsal, error) {
	if opts.HDDSizeMiB == 0 {
		opts.HDDSizeMiB = 256
	}
	if opts.NVMeSizeMiB == 0 {
		opts.NVMeSizeMiB = 128
	}
	if opts.MonitorFor == 0 {
		opts.MonitorFor = 20 * time.Second
	}
	r := &Rehearsal{Plan: p}
	largest := map[string]int64{}
	for _, d := range p.Devices {
		if d.Role != "hdd" && d.Role != "nvme" {
			return nil, fmt.Errorf("plan device %s: role %q: want hdd or nvme", d.ID, d.Role)
		}
		if d.Size > largest[d.Role] {
			largest[d.Role] = d.Size
		}
	}
	target := map[string]int64{"hdd": opts.HDDSizeMiB << 20, "nvme": opts.NVMeSizeMiB << 20}
	for _, role := range []string{"hdd", "nvme"} {
		if largest[role] == 0 {
			continue
		}
		lab := target[role]
		if lab > largest[role] {
			lab = largest[role] / (1 << 20) * (1 << 20)
		}
		r.Scales = append(r.Scales, Scale{Role: role, Real: largest[role], Lab: lab, Factor: float64(largest[role]) / float64(lab)})
	}
	factor := map[string]float64{}
	for _, s := range r.Scales {
		factor[s.Role] = s.Factor
	}

	// one virtual disk per planned disk; planned partitions of the same
	// disk (same serial) share one virtual disk
	type partDisk struct {
		idx   int // in r.Disks
		parts map[int]int64
	}
	byserial := map[string]*partDisk{}
	n := map[string]int{}
	for _, d := range p.Devices {
		kind := lab.HDD
		if d.Role == "nvme" {
			kind = lab.NVMe
		}
		mib := int64(math.Floor(float64(d.Size) / factor[d.Role] / (1 << 20)))
		if mib < minPartitionMiB {
			mib = minPartitionMiB
		}
		serial := unsafeSerial.ReplaceAllString(d.Serial, "_")
		if serial == "" {
			serial = strings.ToUpper(d.Name)
		}
		if len(serial) > 20 {
			serial = serial[len(serial)-20:]
		}
		rd := Device{PlanID: d.ID, Role: d.Role, Kind: d.Kind, Serial: serial, RealSize: d.Size, LabSize: mib << 20}
		if d.Kind == "part" {
			if d.Partition < 1 || d.Partition > 4 {
				return nil, fmt.Errorf("plan device %s: partition %d: the lab makes DOS partitions 1-4 only", d.ID, d.Partition)
			}
			pd := byserial[serial]
			if pd == nil {
				n[d.Role]++
				r.Disks = append(r.Disks, labDisk(kind, n[d.Role], serial, d))
				pd = &partDisk{idx: len(r.Disks) - 1, parts: map[int]int64{}}
				byserial[serial] = pd
			}
			if _, dup := pd.parts[d.Partition]; dup {
				return nil, fmt.Errorf("plan device %s: partition %d planned twice", d.ID, d.Partition)
			}
			pd.parts[d.Partition] = mib
			rd.Disk, rd.Partition = r.Disks[pd.idx].Name, d.Partition
			rd.Guest = fmt.Sprintf("/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_%s-part%d", serial, d.Partition)
			if kind == lab.HDD {
				rd.Guest = fmt.Sprintf("/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_%s-part%d", serial, d.Partition)
			}
		} else {
			n[d.Role]++
			disk := labDisk(kind, n[d.Role], serial, d)
			disk.SizeMiB = mib
			r.Disks = append(r.Disks, disk)
			rd.Disk = disk.Name
			rd.Guest = "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_" + serial
			if kind == lab.HDD {
				rd.Guest = "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_" + serial
				if disk.WWN != 0 {
					rd.Guest = fmt.Sprintf("/dev/disk/by-id/wwn-0x%x", disk.WWN)
				}
			}
		}
		r.Devices = append(r.Devices, rd)
	}
	for _, pd := range byserial {
		max := 0
		for k := range pd.parts {
			if k > max {
				max = k
			}
		}
		var sizes []int64
		for k := 1; k <= max; k++ {
			if s, ok := pd.parts[k]; ok {
				sizes = append(sizes, s)
			} else {
				sizes = append(sizes, 4) // stands for the host's other partitions
			}
		}
		d := &r.Disks[pd.idx]
		d.PartitionsMiB = sizes
		d.SizeMiB = lab.PartitionedSize(mibs(sizes)) >> 20
	}
	steps, notes, err := rehearseSteps(p, r.Devices, opts)
	if err != nil {
		return nil, err
	}
	r.Steps, r.Notes = steps, notes
	return r, nil
}

func mibs(m []int64) []int64 {
	out := make([]int64, len(m))
	for i, v := range m {
		out[i] = v << 20
	}
	return out
}

func labDisk(kind lab.DiskKind, i int, serial string, d lvm.PlanDevice) lab.Disk {
	disk := lab.Disk{Name: fmt.Sprintf("%s%d", kind, i), Kind: kind, Serial: serial,
		LogicalBlockSize: int(d.LogicalBlockSize), PhysicalBlockSize: int(d.PhysicalBlockSize)}
	if disk.LogicalBlockSize == 0 {
		disk.LogicalBlockSize = 512
	}
	if disk.PhysicalBlockSize < disk.LogicalBlockSize {
		disk.PhysicalBlockSize = disk.LogicalBlockSize
	}
	if kind == lab.HDD {
		if w, err := strconv.ParseUint(strings.TrimPrefix(d.WWN, "0x"), 16, 64); err == nil && strings.HasPrefix(d.WWN, "0x") {
			disk.WWN = w
		}
	}
	return disk
}

// rehearseSteps are the guest steps: the plan's choices become tbhost lvm
// plan flags for the virtual devices.
func rehearseSteps(p *lvm.Plan, devs []Device, opts Options) ([]lab.Step, []string, error) {
	guest := map[string]string{}
	for _, d := range devs {
		guest[d.PlanID] = d.Guest
	}
	args := []string{"tbhost", "lvm", "plan"}
	var notes []string
	hasNVMe := false
	var lvs []string
	for _, a := range p.Arrays {
		flag := "--hdd"
		switch a.Role {
		case "tables":
		case "prefix":
			flag, hasNVMe = "--nvme", true
		default:
			return nil, nil, fmt.Errorf("plan array %s/%s: role %q: the lab rehearses tables and prefix arrays", a.VG, a.LV, a.Role)
		}
		for _, id := range a.Devices {
			g, ok := guest[id]
			if !ok {
				return nil, nil, fmt.Errorf("plan array %s/%s names device %s, which is not among the plan's devices", a.VG, a.LV, id)
			}
			args = append(args, flag, g)
		}
		lvs = append(lvs, a.VG+"/"+a.LV)
		if a.RequestedSize > 0 {
			notes = append(notes, fmt.Sprintf("%s/%s: --tables-size %d is not rehearsed: on the scaled disks the LV takes all of the VG", a.VG, a.LV, a.RequestedSize))
		}
		if a.Role == "tables" && a.Integrity.Enabled && a.Integrity.Mode != "" {
			args = append(args, "--integrity-mode", a.Integrity.Mode)
		}
		if a.Filesystem != nil {
			fl := "--tables-fs"
			if a.Role == "prefix" {
				fl = "--prefix-fs"
			}
			if a.Filesystem.Type == "ext4" {
				args = append(args, fl, "ext4")
			} else {
				notes = append(notes, fmt.Sprintf("%s/%s: the %s file system is not rehearsed (the guest has mkfs.ext4 only)", a.VG, a.LV, a.Filesystem.Type))
			}
		}
	}
	if !hasNVMe {
		args = append(args, "--no-nvme")
	}
	for _, d := range devs {
		for _, pd := range p.Devices {
			if pd.ID == d.PlanID && pd.Wipe {
				args = append(args, "--wipe", d.Guest)
			}
		}
	}
	planCmd := shellJoin(append(args, "-o", "$LAB_OUT/plan.yaml"))
	loads := ""
	for _, lv := range lvs {
		loads += fmt.Sprintf("(while :; do dd if=/dev/%s of=/dev/null bs=1M iflag=direct 2>/dev/null || exit; done) &\n", lv)
	}
	secs := int(opts.MonitorFor.Seconds())
	steps := []lab.Step{
		{Name: "plan", StopOnFailure: true, Script: "set -e\n" + planCmd + "\n" +
			shellJoin(append(args, "--json")) + " > $LAB_OUT/plan.json\ntbhost lvm apply --dry-run " + rehearsePlanPath},
		{Name: "apply", StopOnFailure: true, Script: "tbhost lvm apply --yes --wait-sync --poll 5s --json " + rehearsePlanPath + " > $LAB_OUT/apply.json"},
		{Name: "reapply", Script: "tbhost lvm apply --yes --json " + rehearsePlanPath + " > $LAB_OUT/apply.json"},
		{Name: "status", Script: "tbhost lvm status --plan " + rehearsePlanPath + " --json > $LAB_OUT/status.json"},
		{Name: "monitor", Script: loads + "sleep 2\n" +
			fmt.Sprintf("tbhost monitor check --for %ds --interval 5s --json %s > $LAB_OUT/monitor.json\nrc=$?\n", secs, strings.Join(lvs, " ")) +
			"killall dd 2>/dev/null; kill $(jobs -p) 2>/dev/null\nexit $rc"},
		{Name: "lvs", Script: "lvs -a --reportformat json --units b --nosuffix -o lv_name,vg_name,lv_attr,lv_size,segtype,stripes,data_stripes,devices,lv_health_status,sync_percent,raidintegritymode,raidintegrityblocksize > $LAB_OUT/lvs.json"},
	}
	return steps, notes, nil
}

// shellJoin quotes argv for busybox sh, leaving $LAB_OUT expandable.
func shellJoin(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && !strings.ContainsAny(a, " \t\n'\"\\`*?[]{}();&|<>!#~") {
			parts[i] = a
			continue
		}
		parts[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(parts, " ")
}

// ArrayShape is an array's shape as planned or as rehearsed.
type ArrayShape struct {
	Type               string `json:"type"`
	Stripes            int    `json:"stripes"`
	DataStripes        int    `json:"data_stripes"`
	Devices            int    `json:"devices"`
	Integrity          bool   `json:"integrity"`
	IntegrityBlockSize int    `json:"integrity_blocksize,omitempty"`
	IntegrityMode      string `json:"integrity_mode,omitempty"`
	Size               int64  `json:"size"`
}

// ArrayComparison puts an array of the real plan next to its rehearsal.
type ArrayComparison struct {
	Array       string     `json:"array"`
	Planned     ArrayShape `json:"planned"`
	Rehearsed   ArrayShape `json:"rehearsed"`
	State       string     `json:"state"`
	Differences []string   `json:"differences,omitempty"`
}

// StepSummary is one guest step's exit status.
type StepSummary struct {
	Name     string `json:"name"`
	ExitCode int    `json:"exit_code"`
}

// Report is what `tbhost lab rehearse` reports.
type Report struct {
	Plan          string             `json:"plan"`
	Scales        []Scale            `json:"scales"`
	Devices       []Device           `json:"devices"`
	Steps         []StepSummary      `json:"steps"`
	Arrays        []ArrayComparison  `json:"arrays"`
	ReapplyNoop   bool               `json:"reapply_changed_nothing"`
	MonitorStatus string             `json:"monitor_status"`
	MonitorLine   string             `json:"monitor_summary,omitempty"`
	Monitor       *monitor.CheckJSON `json:"monitor,omitempty"`
	Notes         []string           `json:"notes,omitempty"`
	Problems      []string           `json:"problems,omitempty"`
	OK            bool               `json:"ok"`
	Log           string             `json:"log,omitempty"`
	WorkDir       string             `json:"work_dir,omitempty"`
	Duration      string             `json:"duration,omitempty"`
}

// Report judges a rehearsal's step results.
func (r *Rehearsal) Report(steps map[string]lab.StepResult) *Report {
	rep := &Report{Scales: r.Scales, Devices: r.Devices, Notes: r.Notes}
	for _, s := range r.Steps {
		res := steps[s.Name]
		rep.Steps = append(rep.Steps, StepSummary{Name: s.Name, ExitCode: res.ExitCode})
		if res.ExitCode != 0 && s.Name != "monitor" {
			msg := fmt.Sprintf("step %s exited %d", s.Name, res.ExitCode)
			if res.ExitCode == -1 {
				msg = fmt.Sprintf("step %s did not run", s.Name)
			}
			if tail := res.LogTail(6); tail != "" && res.ExitCode > 0 {
				msg += ":\n" + tail
			}
			rep.Problems = append(rep.Problems, msg)
		}
	}
	// reapply: every step skipped
	var ap lvm.ApplyReport
	if err := json.Unmarshal(steps["reapply"].Outputs["apply.json"], &ap); err == nil && len(ap.Steps) > 0 {
		rep.ReapplyNoop = true
		for _, s := range ap.Steps {
			if s.Action != "skip" {
				rep.ReapplyNoop = false
				rep.Problems = append(rep.Problems, fmt.Sprintf("apply again did %s: %s", s.Action, strings.Join(s.Argv, " ")))
			}
		}
	} else if steps["reapply"].ExitCode >= 0 {
		rep.Problems = append(rep.Problems, "apply again: no JSON report")
	}
	// shapes
	var st lvm.StatusReport
	stErr := json.Unmarshal(steps["status"].Outputs["status.json"], &st)
	for _, a := range r.Plan.Arrays {
		c := ArrayComparison{Array: a.VG + "/" + a.LV, Planned: ArrayShape{Type: a.Type, Stripes: a.Stripes, DataStripes: a.DataStripes,
			Devices: len(a.Devices), Integrity: a.Integrity.Enabled, IntegrityBlockSize: a.Integrity.BlockSize, IntegrityMode: a.Integrity.Mode, Size: a.Size}}
		var got *lvm.ArrayStatus
		for i := range st.Arrays {
			if st.Arrays[i].VG == a.VG && st.Arrays[i].LV == a.LV {
				got = &st.Arrays[i]
			}
		}
		if stErr != nil || got == nil || !got.Exists {
			c.State = "missing"
			c.Differences = append(c.Differences, "not built in the lab")
		} else {
			c.State = got.State
			c.Rehearsed = ArrayShape{Type: got.SegType, Stripes: got.Stripes, DataStripes: got.DataStripes, Devices: len(got.Images), Size: got.Size}
			if got.Integrity != nil {
				c.Rehearsed.Integrity = got.Integrity.Enabled
				c.Rehearsed.IntegrityBlockSize = got.Integrity.BlockSize
				c.Rehearsed.IntegrityMode = got.Integrity.Mode
			}
			p, g := c.Planned, c.Rehearsed
			diff := func(what string, want, have any) {
				if fmt.Sprint(want) != fmt.Sprint(have) {
					c.Differences = append(c.Differences, fmt.Sprintf("%s: planned %v, rehearsed %v", what, want, have))
				}
			}
			diff("type", p.Type, g.Type)
			diff("stripes", p.Stripes, g.Stripes)
			diff("data stripes", p.DataStripes, g.DataStripes)
			diff("devices", p.Devices, g.Devices)
			diff("integrity", p.Integrity, g.Integrity)
			if p.Integrity {
				diff("integrity block size", p.IntegrityBlockSize, g.IntegrityBlockSize)
				diff("integrity mode", p.IntegrityMode, g.IntegrityMode)
			}
			if got.State != "ok" {
				c.Differences = append(c.Differences, "state "+got.State+": "+strings.Join(got.Problems, "; "))
			}
		}
		for _, d := range c.Differences {
			rep.Problems = append(rep.Problems, c.Array+": "+d)
		}
		rep.Arrays = append(rep.Arrays, c)
	}
	mon := steps["monitor"]
	rep.MonitorStatus = fmt.Sprintf("exit %d", mon.ExitCode)
	if mon.ExitCode >= 0 && mon.ExitCode <= int(lvm.Unknown) {
		rep.MonitorStatus = lvm.Severity(mon.ExitCode).String()
	}
	var mj monitor.CheckJSON
	if json.Unmarshal(mon.Outputs["monitor.json"], &mj) == nil {
		rep.Monitor = &mj
		var parts []string
		for _, a := range mj.Arrays {
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, m := range a.Members {
				lo, hi = math.Min(lo, m.ReadsPerS), math.Max(hi, m.ReadsPerS)
			}
			p := fmt.Sprintf("%s: %d members", a.Name, len(a.Members))
			if len(a.Members) > 0 {
				p += fmt.Sprintf(" at %.0f-%.0f reads/s", lo, hi)
			}
			if len(a.Problems) > 0 {
				p += " (" + strings.Join(a.Problems, "; ") + ")"
			}
			parts = append(parts, p)
		}
		rep.MonitorLine = strings.Join(parts, "; ")
	}
	if mon.ExitCode != 0 {
		rep.Problems = append(rep.Problems, "monitor check under a read load: "+rep.MonitorStatus+" "+rep.MonitorLine)
	}
	sort.Strings(rep.Notes)
	rep.OK = len(rep.Problems) == 0
	return rep
}
