package lvm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/clock"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/filelock"
	"github.com/tbhost/tbhost/internal/sizes"
)

// StepTimeout bounds each command apply runs.
const StepTimeout = 30 * time.Minute

// Applier applies plans. Every external program goes through Runner.
type Applier struct {
	Runner execx.Runner
	// Inventory re-reads the machine (blockdev.Read with InventoryOptions).
	Inventory func(ctx context.Context) (*blockdev.Inventory, error)
	// LockPath is the flock file that keeps two applies (not dry runs) on
	// one machine apart; "" takes no lock (a fake machine in tests).
	LockPath string
	// Out gets one line per step as it happens (human progress); may be nil.
	Out io.Writer
	// Confirm asks the operator; nil means there is no terminal to ask on.
	Confirm func(question string) error
	// ProbeLV reads an LV's signatures (to skip mkfs on a filesystem that
	// exists); nil reads the device node.
	ProbeLV func(path string) ([]blockdev.Signature, error)
	// Sleep waits between sync polls; nil uses time.Sleep with ctx.
	Sleep func(ctx context.Context, d time.Duration) error
	// Progress reports sync progress (percent 0..100) of an LV; may be nil.
	Progress func(lv string, percent float64)
}

// ApplyOptions are `tbhost lvm apply`'s flags.
type ApplyOptions struct {
	DryRun       bool
	Yes          bool
	WaitSync     bool
	PollInterval time.Duration
}

// Step is one plan command and what apply did with it.
type Step struct {
	Argv   Command `json:"argv"`
	Action string  `json:"action"` // run, skip, would-run, failed, not-reached
	Why    string  `json:"why,omitempty"`
	Stderr string  `json:"stderr,omitempty"`
}

// ApplyReport is the outcome of an apply.
type ApplyReport struct {
	Host         string   `json:"host"`
	DryRun       bool     `json:"dry_run"`
	Notes        []string `json:"notes,omitempty"`
	Steps        []Step   `json:"steps"`
	Verification []Check  `json:"verification,omitempty"`
	Verified     bool     `json:"verified"`
	Next         []string `json:"next,omitempty"`
}

// StepFailedError is a command that failed during apply.
type StepFailedError struct {
	Argv Command
	Err  error
}

func (e *StepFailedError) Error() string {
	return fmt.Sprintf("%s failed: %v; nothing after it ran. Fix the cause and run apply again: steps already done are skipped", execx.Quote(e.Argv), e.Err)
}
func (e *StepFailedError) Unwrap() error { return e.Err }

// VerifyFailedError means the arrays exist but are not what the plan says.
type VerifyFailedError struct{ Failed []Check }

func (e *VerifyFailedError) Error() string {
	var s []string
	for _, c := range e.Failed {
		s = append(s, c.String())
	}
	return "verification failed:\n  " + strings.Join(s, "\n  ")
}

func (a Applier) say(format string, args ...any) {
	if a.Out != nil {
		fmt.Fprintf(a.Out, format+"\n", args...)
	}
}

// current is the machine and LVM as apply sees them.
type current struct {
	inv      *blockdev.Inventory
	dev      map[string]*blockdev.Device // plan device id -> device now
	pvs      []PV
	vgs      []VG
	lvs      []LV
	pvOf     map[string]*PV // plan device id -> its PV now
	byPVPath func(string) string
}

// Apply runs the plan: it refuses a stale plan, devices that are in use or
// carry data (unless the plan says wipe and the operator agrees), and LVM
// objects whose shape conflicts with the plan; then it runs the plan's
// commands, skipping those already done, and verifies the arrays.
func (a Applier) Apply(ctx context.Context, p *Plan, opts ApplyOptions) (*ApplyReport, error) {
	rep := &ApplyReport{Host: p.Host, DryRun: opts.DryRun}
	if problems := p.validate(); len(problems) > 0 {
		return rep, &RefusedError{What: "lvm apply refused (nothing was run): not a plan tbhost lvm plan would write; re-plan", Problems: problems}
	}
	if !reflect.DeepEqual(BuildCommands(p), p.Commands) {
		return rep, &RefusedError{What: "lvm apply refused (nothing was run)", Problems: []string{"commands: they do not match the plan's devices and arrays; re-plan with tbhost lvm plan"}}
	}
	if !opts.DryRun {
		unlock, err := lockApply(a.LockPath)
		if err != nil {
			return rep, err
		}
		defer unlock()
	}
	cur, err := a.look(ctx, p) // under the lock: what another apply did is seen
	if err != nil {
		return rep, err
	}
	if cur.inv.Fingerprint != p.InventoryFingerprint {
		rep.Notes = append(rep.Notes, fingerprintNote(p, cur.inv))
	}
	if err := a.guard(p, cur, rep); err != nil {
		return rep, err
	}
	existedLV := map[string]bool{}
	for _, ar := range p.Arrays {
		if _, ok := Find(cur.lvs, ar.VG, ar.LV); ok {
			existedLV[ar.DevPath()] = true
		}
	}
	steps, wipes, err := a.decide(p, cur, existedLV)
	if err != nil {
		return rep, err
	}
	rep.Steps = steps
	toRun := 0
	for _, s := range steps {
		if s.Action == "would-run" {
			toRun++
		}
	}
	if opts.DryRun {
		for _, s := range steps {
			a.say("%-9s %s%s", s.Action, execx.Quote(s.Argv), why(s.Why))
		}
		if toRun == 0 {
			rep.Verification, rep.Verified = a.verify(p, cur)
		}
		rep.Next = a.next(p)
		return rep, nil
	}
	if toRun > 0 && !opts.Yes {
		q := fmt.Sprintf("run %d commands on %s (devices %s)", toRun, p.Host, planNames(p))
		if len(wipes) > 0 {
			q += fmt.Sprintf(", DESTROYING everything on %s", strings.Join(wipes, ", "))
		}
		if a.Confirm == nil {
			return rep, &RefusedError{What: "lvm apply refused", Problems: []string{q + ": no terminal to ask on; re-run with --yes to confirm (see --dry-run first)"}}
		}
		if err := a.Confirm(q + "?"); err != nil {
			return rep, err
		}
	}
	for i := range rep.Steps {
		s := &rep.Steps[i]
		if s.Action == "skip" {
			a.say("skip      %s%s", execx.Quote(s.Argv), why(s.Why))
			continue
		}
		a.say("run       %s", execx.Quote(s.Argv))
		// mkfs of a multi-TB LV can take minutes: more than the runner's default
		cctx, cancel := context.WithTimeout(ctx, StepTimeout)
		res, err := a.Runner.Run(cctx, s.Argv...)
		cancel()
		if err != nil {
			s.Action = "failed"
			var ce *execx.CommandError
			if errors.As(err, &ce) {
				s.Stderr = strings.TrimSpace(ce.Stderr)
			}
			for j := i + 1; j < len(rep.Steps); j++ {
				if rep.Steps[j].Action == "would-run" {
					rep.Steps[j].Action = "not-reached"
				}
			}
			return rep, &StepFailedError{Argv: s.Argv, Err: err}
		}
		_ = res
		s.Action = "run"
	}
	// verify from a fresh look at LVM
	cur2, err := a.look(ctx, p)
	if err != nil {
		return rep, err
	}
	rep.Verification, rep.Verified = a.verify(p, cur2)
	if !rep.Verified {
		var failed []Check
		for _, c := range rep.Verification {
			if !c.OK {
				failed = append(failed, c)
			}
		}
		return rep, &VerifyFailedError{Failed: failed}
	}
	if opts.WaitSync {
		if err := a.waitSync(ctx, p, opts.PollInterval); err != nil {
			return rep, err
		}
	}
	rep.Next = a.next(p)
	return rep, nil
}

func why(s string) string {
	if s == "" {
		return ""
	}
	return "   (" + s + ")"
}

func planNames(p *Plan) string {
	var n []string
	for _, d := range p.Devices {
		n = append(n, d.Name)
	}
	return strings.Join(n, ", ")
}

// look re-reads the machine and LVM and resolves the plan's devices,
// refusing a stale plan.
func (a Applier) look(ctx context.Context, p *Plan) (*current, error) {
	inv, err := a.Inventory(ctx)
	if err != nil {
		return nil, fmt.Errorf("re-read the machine: %w", err)
	}
	cur := &current{inv: inv, dev: map[string]*blockdev.Device{}, pvOf: map[string]*PV{}}
	if problems := resolveDevices(p, inv); len(problems) > 0 {
		return nil, &RefusedError{What: "lvm apply refused (nothing was run): the plan's devices do not name the devices its commands would touch; re-plan with tbhost lvm plan", Problems: problems}
	}
	var stale []string
	gone := 0
	for _, pd := range p.Devices {
		d := inv.Find(pd.ID)
		planned := fmt.Sprintf("serial %s, %s", orDash(pd.Serial), sizes.Format(pd.Size))
		if d == nil {
			gone++
			where := ""
			if other := inv.BySerial(pd.Serial, pd.WWN); other != nil && pd.Kind == "disk" && pd.Serial != "" {
				where = fmt.Sprintf("; a disk with that serial is now %s (%s)", other.Name, other.Ref())
			}
			stale = append(stale, fmt.Sprintf("%s (%s) is not on %s any more%s", pd.ID, planned, hostName(inv), where))
			continue
		}
		if diff := changedSince(pd, d); len(diff) > 0 {
			stale = append(stale, fmt.Sprintf("%s (now %s): %s", pd.ID, d.Name, strings.Join(diff, "; ")))
			continue
		}
		cur.dev[pd.ID] = d
	}
	if here := hostName(inv); gone == len(p.Devices) && gone > 0 && p.Host != "" && p.Host != here {
		// not a stale plan but another machine's: say it once (issue 18)
		this := "not this machine"
		if inv.Hostname != "" {
			this = "this is " + inv.Hostname
		}
		return nil, &RefusedError{What: "lvm apply refused (nothing was run)", Problems: []string{fmt.Sprintf(
			"this plan was made for host %s (%s): none of its %d devices is here; plan this machine with tbhost lvm plan (or apply the plan on %s)",
			p.Host, this, gone, p.Host)}}
	}
	if len(stale) > 0 {
		return nil, &RefusedError{What: "lvm apply refused: the plan is stale (a disk was swapped, resized, renamed or reformatted with other block sizes); run tbhost lvm plan again", Problems: stale}
	}
	c := Client{Runner: a.Runner}
	if cur.pvs, err = c.PVs(ctx); err != nil {
		return nil, lvmErr(err)
	}
	if cur.vgs, err = c.VGs(ctx); err != nil {
		return nil, lvmErr(err)
	}
	if cur.lvs, err = c.LVs(ctx); err != nil {
		return nil, lvmErr(err)
	}
	idOf := map[string]string{} // any name of a planned device -> plan id
	for id, d := range cur.dev {
		idOf[d.Path] = id
		idOf[d.Name] = id
		for _, l := range d.IDLinks {
			idOf[l] = id
		}
	}
	cur.byPVPath = func(path string) string {
		if id, ok := idOf[path]; ok {
			return id
		}
		return idOf[filepath.Base(path)]
	}
	for i := range cur.pvs {
		if id := cur.byPVPath(cur.pvs[i].Name); id != "" {
			cur.pvOf[id] = &cur.pvs[i]
		}
	}
	return cur, nil
}

// resolveDevices checks that each plan device's path names the same device
// as its id (both looked up in the inventory: kernel name, /dev path or
// /dev/disk/by-id link under the root; same major:minor), that no device is
// planned twice under two names, and that no partition is planned next to
// its own disk. A path that names no device of the host (an md or dm
// device, a file, an option) is refused here.
func resolveDevices(p *Plan, inv *blockdev.Inventory) []string {
	var problems []string
	planned := map[*blockdev.Device]string{}
	for i, pd := range p.Devices {
		byID := inv.Find(pd.ID)
		if byID == nil {
			continue // stale: said with the serial and size below
		}
		byPath := inv.Find(pd.Path)
		switch {
		case byPath == nil:
			problems = append(problems, fmt.Sprintf("devices[%d].path %s: not a disk or partition of %s (its id %s is %s, %s); the commands name the path, the guards check the id",
				i, pd.Path, hostName(inv), pd.ID, byID.Name, byID.MajMin))
			continue
		case byPath != byID && (byPath.MajMin == "" || byPath.MajMin != byID.MajMin):
			problems = append(problems, fmt.Sprintf("devices[%d].path %s is %s (%s) but its id %s is %s (%s): the commands would touch another device than the guards check",
				i, pd.Path, byPath.Name, byPath.MajMin, pd.ID, byID.Name, byID.MajMin))
			continue
		}
		if prev, twice := planned[byID]; twice {
			problems = append(problems, fmt.Sprintf("devices[%d] %s is %s, which the plan already names as %s: one PV cannot be two array members", i, pd.ID, byID.Name, prev))
			continue
		}
		planned[byID] = pd.ID
	}
	for d, id := range planned {
		if d.Kind != "part" {
			continue
		}
		for other, otherID := range planned {
			if other.Kind == "disk" && other.Name == d.Parent {
				problems = append(problems, fmt.Sprintf("%s (%s) and its disk %s (%s) are both in the plan", d.Name, id, other.Name, otherID))
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// changedSince lists how device d differs from what the plan saw: serial,
// WWN, size, kind, logical and physical block size, role.
func changedSince(pd PlanDevice, d *blockdev.Device) []string {
	var diff []string
	// An empty planned serial or WWN is compared too: a plan that leaves
	// out the serial of a disk that has one would otherwise skip the one
	// check that tells two disks of the same model and size apart. A WWN
	// the device does not report now is no difference: udev and sysfs do
	// not always show it.
	if d.Serial != pd.Serial {
		diff = append(diff, fmt.Sprintf("serial %s, planned %s", orDash(d.Serial), orDash(pd.Serial)))
	}
	if d.WWN != "" && d.WWN != pd.WWN {
		diff = append(diff, fmt.Sprintf("WWN %s, planned %s", d.WWN, orDash(pd.WWN)))
	}
	if d.Size != pd.Size {
		now, planned := sizes.FormatPair(d.Size, pd.Size)
		diff = append(diff, fmt.Sprintf("size %s, planned %s", now, planned))
	}
	if d.Kind != pd.Kind || d.Partition != pd.Partition {
		diff = append(diff, fmt.Sprintf("is a %s (partition %d), planned a %s (partition %d)", d.Kind, d.Partition, pd.Kind, pd.Partition))
	}
	if d.LogicalBlockSize != pd.LogicalBlockSize || d.PhysicalBlockSize != pd.PhysicalBlockSize {
		diff = append(diff, fmt.Sprintf("block sizes %d/%d (logical/physical), planned %d/%d: the integrity block size and the extents were chosen for those",
			d.LogicalBlockSize, d.PhysicalBlockSize, pd.LogicalBlockSize, pd.PhysicalBlockSize))
	}
	if role := mediaRole(d); role != pd.Role {
		diff = append(diff, fmt.Sprintf("is an %s device now, planned %s", role, pd.Role))
	}
	return diff
}

func lvmErr(err error) error {
	if execx.NotFound(err) {
		return fmt.Errorf("lvm is not installed (apt-get install lvm2): %w", err)
	}
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// guard refuses devices that are in use, carry data, or conflict.
func (a Applier) guard(p *Plan, cur *current, rep *ApplyReport) error {
	var problems []string
	vgOfDevice := map[string]string{}
	for _, ar := range p.Arrays {
		for _, id := range ar.Devices {
			vgOfDevice[id] = ar.VG
		}
	}
	for _, pd := range p.Devices {
		d := cur.dev[pd.ID]
		problem, note := GuardDevice(d, pd.ID, cur.pvOf[pd.ID], vgOfDevice[pd.ID], pd.Wipe, "re-plan with --wipe "+d.Name+" and apply with --yes")
		if problem != "" {
			problems = append(problems, problem)
		}
		if note != "" {
			rep.Notes = append(rep.Notes, note)
		}
	}
	// VGs and LVs that exist must have the planned shape
	for _, ar := range p.Arrays {
		for _, vg := range cur.vgs {
			if vg.Name != ar.VG {
				continue
			}
			var have, want []string
			for _, pv := range cur.pvs {
				if pv.VG == vg.Name {
					id := cur.byPVPath(pv.Name)
					if id == "" {
						id = pv.Name + " (not in the plan)"
					}
					have = append(have, id)
				}
			}
			want = append(want, ar.Devices...)
			sort.Strings(have)
			sort.Strings(want)
			if strings.Join(have, " ") != strings.Join(want, " ") {
				problems = append(problems, fmt.Sprintf("VG %s exists on %s, the plan puts it on %s; tbhost does not change an existing VG (vgremove it if nothing on it is needed, or re-plan with other names)",
					vg.Name, strings.Join(have, ", "), strings.Join(want, ", ")))
			}
			if vg.ExtentSize != 0 && vg.ExtentSize != p.ExtentSize {
				problems = append(problems, fmt.Sprintf("VG %s has %s extents, the plan was sized for %s", vg.Name, sizes.Format(vg.ExtentSize), sizes.Format(p.ExtentSize)))
			}
		}
		if _, ok := Find(cur.lvs, ar.VG, ar.LV); !ok {
			if half := halfBuiltProblem(ar, cur.lvs, nil); half != "" {
				problems = append(problems, half)
			}
		} else {
			checks := VerifyArray(ar, cur.lvs, p.ExtentSize, cur.byPVPath)
			var bad []string
			for _, c := range checks {
				if !c.OK {
					bad = append(bad, fmt.Sprintf("%s: want %s, got %s", c.Name, c.Want, c.Got))
				}
			}
			if half := halfBuiltProblem(ar, cur.lvs, checks); half != "" { // fails the integrity checks, so bad is not empty
				problems = append(problems, half)
			} else if len(bad) > 0 {
				problems = append(problems, fmt.Sprintf("LV %s/%s exists with another shape (%s); tbhost never reshapes it: lvremove %s/%s if its data may go, then apply again",
					ar.VG, ar.LV, strings.Join(bad, "; "), ar.VG, ar.LV))
			}
		}
	}
	if len(problems) > 0 {
		return &RefusedError{What: "lvm apply refused (nothing was run)", Problems: problems}
	}
	return nil
}

// GuardDevice is the one set of guards on a device tbhost is about to make
// a PV of (lvm apply's planned devices, lvm replace's new disk): it refuses
// the system disk, a device in use (mounted, swap, dm/md holders), a device
// that could not be probed, a PV of another VG (unless wipe) and a device
// carrying data (partitions, signatures; unless wipe). A PV of ourVG passes
// (already ours), a PV in no VG passes with a note (pvcreate is skipped).
// id is how the caller names the device in its texts; wipeFix says how
// the operator allows its content to be destroyed ("re-plan with --wipe sdX").
func GuardDevice(d *blockdev.Device, id string, pv *PV, ourVG string, wipe bool, wipeFix string) (problem, note string) {
	if pv != nil && pv.VG == ourVG && ourVG != "" {
		return "", "" // already ours: holders and LVM signature are expected
	}
	if d.Kind == "disk" && d.Role == blockdev.RoleSystem {
		return fmt.Sprintf("%s (%s) is now the system disk (%s): never used whole", d.Name, id, d.RoleWhy), ""
	}
	if busy := d.Busy(); len(busy) > 0 {
		return fmt.Sprintf("%s (%s) is in use: %s; stop using it first (umount, swapoff, remove the holder), tbhost does not", d.Name, id, strings.Join(busy, "; ")), ""
	}
	if d.ProbeError != "" {
		return fmt.Sprintf("%s (%s): cannot check that it is blank: %s", d.Name, id, d.ProbeError), ""
	}
	if pv != nil && pv.VG != "" && !wipe {
		return fmt.Sprintf("%s (%s) is a PV of another VG (%s); remove it from that VG, or %s", d.Name, id, pv.VG, wipeFix), ""
	}
	if pv != nil && pv.VG == "" {
		return "", fmt.Sprintf("%s is already a PV in no VG (an earlier run stopped after pvcreate?): pvcreate is skipped", d.Name)
	}
	if content := d.Content(); len(content) > 0 && !wipe {
		return fmt.Sprintf("%s (%s) holds data (%s); it is left untouched. If that may be destroyed, %s",
			d.Name, id, strings.Join(content, "; "), wipeFix), ""
	}
	return "", ""
}

// decide marks each plan step run or skip. It works on the steps derived
// from the plan's devices and arrays (planSteps), so what it checks is
// exactly what each command touches.
func (a Applier) decide(p *Plan, cur *current, existedLV map[string]bool) ([]Step, []string, error) {
	vgExists := map[string]bool{}
	for _, vg := range cur.vgs {
		vgExists[vg.Name] = true
	}
	var steps []Step
	var wipes []string
	var problems []string
	for _, ps := range planSteps(p) {
		s := Step{Argv: ps.argv, Action: "would-run"}
		switch ps.kind {
		case stepWipe:
			d := cur.dev[ps.dev.ID]
			switch pv := cur.pvOf[ps.dev.ID]; {
			case pv != nil && (pv.VG == "" || vgOfArray(p, ps.dev.ID) == pv.VG):
				s.Action, s.Why = "skip", "already our PV"
			case len(d.Content()) == 0:
				s.Action, s.Why = "skip", "nothing to wipe"
			default:
				s.Why = strings.Join(d.Content(), "; ")
				wipes = append(wipes, d.Name)
			}
		case stepPVCreate:
			if pv := cur.pvOf[ps.dev.ID]; pv != nil {
				s.Action, s.Why = "skip", "already a PV"
			}
		case stepVGCreate:
			if vgExists[ps.arr.VG] {
				s.Action, s.Why = "skip", "VG "+ps.arr.VG+" exists on the planned devices"
			}
		case stepLVCreate:
			if existedLV[ps.arr.DevPath()] {
				s.Action, s.Why = "skip", ps.arr.VG+"/"+ps.arr.LV+" exists with the planned shape"
			}
		case stepMkfs:
			ar := ps.arr
			dev := ar.DevPath()
			if existedLV[dev] {
				sigs, err := a.probeLV(dev)
				switch {
				case err != nil:
					problems = append(problems, fmt.Sprintf("%s exists; cannot check whether it has a filesystem: %v", dev, err))
				case len(sigs) == 0:
					s.Why = "the LV has no filesystem yet"
				case ar.Filesystem != nil && sigs[0].Type == ar.Filesystem.Type && strings.EqualFold(sigs[0].UUID, ar.Filesystem.UUID):
					s.Action, s.Why = "skip", fmt.Sprintf("%s %s exists", sigs[0].Type, sigs[0].UUID)
				default:
					problems = append(problems, fmt.Sprintf("%s already carries %s (UUID %s), not the planned filesystem: tbhost does not reformat it", dev, sigs[0].Type, orDash(sigs[0].UUID)))
				}
			}
		}
		steps = append(steps, s)
	}
	if len(problems) > 0 {
		return nil, nil, &RefusedError{What: "lvm apply refused (nothing was run)", Problems: problems}
	}
	return steps, wipes, nil
}

func (a Applier) probeLV(path string) ([]blockdev.Signature, error) {
	if a.ProbeLV != nil {
		return a.ProbeLV(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, err
	}
	return blockdev.Probe(f, size, 512)
}

func vgOfArray(p *Plan, id string) string {
	for _, a := range p.Arrays {
		for _, d := range a.Devices {
			if d == id {
				return a.VG
			}
		}
	}
	return ""
}

func (a Applier) verify(p *Plan, cur *current) ([]Check, bool) {
	var cs []Check
	for _, ar := range p.Arrays {
		cs = append(cs, VerifyArray(ar, cur.lvs, p.ExtentSize, cur.byPVPath)...)
	}
	return cs, AllOK(cs)
}

func (a Applier) next(p *Plan) []string {
	var out []string
	for _, ar := range p.Arrays {
		if fs := ar.Filesystem; fs != nil {
			out = append(out, fmt.Sprintf("add to /etc/fstab: %s   (then: mkdir -p %s && mount %s)", fs.Fstab, fs.Mount, fs.Mount))
		}
	}
	for _, ar := range p.Arrays {
		if ar.Integrity.Enabled {
			out = append(out, fmt.Sprintf("%s/%s: the initial integrity sync runs in the background: tbhost lvm status (or apply --wait-sync)", ar.VG, ar.LV))
		}
	}
	return out
}

// waitSync polls the raid arrays until their sync reaches 100%.
func (a Applier) waitSync(ctx context.Context, p *Plan, every time.Duration) error {
	if every <= 0 {
		every = 5 * time.Second
	}
	sleep := a.Sleep
	if sleep == nil {
		sleep = clock.Sleep
	}
	c := Client{Runner: a.Runner}
	for _, ar := range p.Arrays {
		if ar.Type != "raid5" {
			continue
		}
		name := ar.VG + "/" + ar.LV
		for {
			lvs, err := c.LVs(ctx, name)
			if err != nil {
				return err
			}
			top, ok := Find(lvs, ar.VG, ar.LV)
			if !ok {
				return fmt.Errorf("wait for sync: %s is gone", name)
			}
			if probs := top.Problems(); len(probs) > 0 {
				return fmt.Errorf("wait for sync of %s: %s", name, strings.Join(probs, "; "))
			}
			if a.Progress != nil {
				a.Progress(name, top.SyncPercent)
			}
			if top.SyncPercent >= 100 {
				a.say("%s: in sync", name)
				break
			}
			if err := sleep(ctx, every); err != nil {
				return fmt.Errorf("wait for sync of %s (at %.2f%%): %w", name, top.SyncPercent, err)
			}
		}
	}
	return nil
}

// fingerprintNote says why the machine's fingerprint differs from the
// plan's: when the planned devices only have other kernel names (a reboot
// reordered them: sdb and sdc swapped) and the fingerprint under the
// planning time's names is the plan's, nothing changed but the names.
func fingerprintNote(p *Plan, inv *blockdev.Inventory) string {
	const changed = "the machine's disks changed since planning (fingerprint differs); the planned devices themselves are unchanged"
	rename := map[string]string{}
	var moved []string
	set := func(from, to string) bool {
		if n, ok := rename[from]; ok {
			return n == to
		}
		rename[from] = to
		return true
	}
	for _, pd := range p.Devices {
		d := inv.Find(pd.ID)
		if d == nil || d.Name == pd.Name {
			continue
		}
		moved = append(moved, fmt.Sprintf("%s is now %s", pd.Name, d.Name))
		disk, oldDisk := d, pd.Name
		if d.Kind == "part" {
			if disk = inv.Find(d.Parent); disk == nil {
				return changed
			}
			suffix := strings.TrimPrefix(d.Name, d.Parent)
			if !strings.HasSuffix(pd.Name, suffix) {
				return changed
			}
			oldDisk = strings.TrimSuffix(pd.Name, suffix)
		}
		// the disk and every partition of it moved together
		if !set(disk.Name, oldDisk) {
			return changed
		}
		for _, part := range disk.Partitions {
			if !set(part.Name, oldDisk+strings.TrimPrefix(part.Name, disk.Name)) {
				return changed
			}
		}
	}
	if len(moved) == 0 || blockdev.FingerprintRenamed(inv, rename) != p.InventoryFingerprint {
		return changed
	}
	return fmt.Sprintf("the planned devices have other kernel names than at planning time (%s: a reboot reorders them); the plan names them by id, and the machine's disks are unchanged", strings.Join(moved, ", "))
}

// ApplyLockPath is the lock lvm apply holds on a real machine.
const ApplyLockPath = "/run/lock/tbhost-lvm-apply.lock"

// lockApply takes an exclusive flock on path ("" locks nothing). Apply
// decides every step from one reading of the machine: a second apply
// that read it before the first one's pvcreate would wipefs (with --wipe)
// or pvcreate the disks the first one just made PVs of its new VG. The
// kernel drops the lock with its process, kill -9 too.
func lockApply(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	l, err := filelock.Exclusive(path, 0o644)
	switch {
	case errors.Is(err, filelock.ErrHeld):
		return nil, &RefusedError{What: "lvm apply refused (nothing was run)", Problems: []string{fmt.Sprintf("another tbhost lvm apply is running on this machine (lock %s is held): wait for it to finish, then run apply again (steps it did are skipped)", path)}}
	case err != nil:
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return l.Unlock, nil
}
