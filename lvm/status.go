package lvm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tbhost/tbhost/internal/blockdev"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/sizes"
)

// ImageStatus is one raid image of an array.
type ImageStatus struct {
	Name                string   `json:"name"`
	SegType             string   `json:"segtype"`
	Devices             []string `json:"devices"` // "/dev/sda (serial HDD1)"
	IntegrityMismatches int64    `json:"integrity_mismatches"`
	Problems            []string `json:"problems,omitempty"`
}

// ArrayStatus is the shape and health of one array.
type ArrayStatus struct {
	VG             string        `json:"vg"`
	LV             string        `json:"lv"`
	Exists         bool          `json:"exists"`
	SegType        string        `json:"segtype,omitempty"`
	Stripes        int           `json:"stripes,omitempty"`
	DataStripes    int           `json:"data_stripes,omitempty"`
	Size           int64         `json:"size,omitempty"`
	Attr           string        `json:"attr,omitempty"`
	Health         string        `json:"health"` // lv_health_status ("" is healthy)
	SyncPercent    float64       `json:"sync_percent"`
	SyncAction     string        `json:"sync_action,omitempty"`
	RaidMismatches int64         `json:"raid_mismatches"`
	Integrity      *Integrity    `json:"integrity,omitempty"`
	IntegrityMism  int64         `json:"integrity_mismatches"`
	Images         []ImageStatus `json:"images,omitempty"`
	State          string        `json:"state"` // ok, syncing, problem
	Problems       []string      `json:"problems,omitempty"`
	// Findings are the problems with their codes (Problems are their texts).
	Findings []Finding `json:"findings,omitempty"`
	// Progress are the states that pass by themselves and do not make the
	// array a problem: a rebuild, an integrity re-initialisation (with ETA).
	Progress []Finding `json:"progress,omitempty"`
	Checks   []Check   `json:"checks,omitempty"` // against the plan, with --plan
}

// problem records a finding and its text.
func (st *ArrayStatus) problem(f Finding) {
	st.Findings = append(st.Findings, f)
	st.Problems = append(st.Problems, f.Text)
}

// StatusReport is `tbhost lvm status`.
type StatusReport struct {
	Arrays []ArrayStatus `json:"arrays"`
	OK     bool          `json:"ok"`
}

// ErrNoRAIDLV is returned (wrapped) by Status when asked for every RAID LV
// (no names, no plan) and there is none: nothing to work on (exit 3), not a
// problem found on an array.
var ErrNoRAIDLV = errors.New("no RAID LV found")

// StatusOptions select what to report.
type StatusOptions struct {
	Plan  *Plan    // check the arrays against this plan too
	Names []string // vg/lv; default: the plan's arrays, else every raid LV
	// Inventory names the disks under each image (serials); may be nil.
	Inventory *blockdev.Inventory
}

// Status reads `lvs -a` and reports each array's shape and health. Unknown
// health values are problems. An initial sync in progress is not. Without
// names or a plan and without any RAID LV it returns ErrNoRAIDLV.
func Status(ctx context.Context, r execx.Runner, opts StatusOptions) (*StatusReport, error) {
	all, err := Client{Runner: r}.LVs(ctx)
	if err != nil {
		return nil, lvmErr(err)
	}
	type want struct {
		vg, lv string
		plan   *Array
	}
	var wants []want
	switch {
	case len(opts.Names) > 0:
		for _, n := range opts.Names {
			vg, lv, ok := strings.Cut(n, "/")
			if !ok {
				return nil, fmt.Errorf("%q: name an LV as VG/LV (e.g. vg-hdd/tables)", n)
			}
			wants = append(wants, want{vg: vg, lv: lv, plan: planArray(opts.Plan, vg, lv)})
		}
	case opts.Plan != nil:
		for i, a := range opts.Plan.Arrays {
			wants = append(wants, want{vg: a.VG, lv: a.LV, plan: &opts.Plan.Arrays[i]})
		}
	default:
		for _, lv := range all {
			if !lv.Hidden && strings.HasPrefix(lv.SegType(), "raid") {
				wants = append(wants, want{vg: lv.VG, lv: lv.Name})
			}
		}
	}
	if len(wants) == 0 {
		// only without names and plan (a plan names 1-2 arrays): nothing
		// to work on, which the README's rule makes "could not run"
		return nil, fmt.Errorf("%w: nothing to check (tbhost lvm plan and apply build the arrays)", ErrNoRAIDLV)
	}
	rep := &StatusReport{OK: true}
	devName := func(pv string) string {
		if opts.Inventory != nil {
			if d := opts.Inventory.Find(pv); d != nil && d.Serial != "" {
				return fmt.Sprintf("%s (serial %s)", pv, d.Serial)
			}
		}
		return pv
	}
	for _, w := range wants {
		st := ArrayStatus{VG: w.vg, LV: w.lv, SyncPercent: -1, RaidMismatches: -1, IntegrityMism: -1}
		top, ok := Find(all, w.vg, w.lv)
		if !ok {
			st.State = "problem"
			st.problem(Finding{Code: CodeLVNotFound, Severity: Critical, LV: w.vg + "/" + w.lv, Text: fmt.Sprintf("%s/%s does not exist", w.vg, w.lv)})
			rep.Arrays = append(rep.Arrays, st)
			rep.OK = false
			continue
		}
		st.Exists, st.SegType, st.Size, st.Attr, st.Health = true, top.SegType(), top.Size, top.Attr, top.Health
		if len(top.Segments) > 0 {
			st.Stripes, st.DataStripes = top.Segments[0].Stripes, top.Segments[0].DataStripes
			if st.DataStripes == 0 {
				st.DataStripes = st.Stripes - parityDevices(st.SegType)
			}
		}
		st.SyncPercent, st.SyncAction, st.RaidMismatches = top.SyncPercent, top.SyncAction, top.RaidMismatchCount
		h := AssessArray(all, top)
		_, syncing := h.Sync()
		for _, f := range h.Findings {
			switch f.Code {
			case CodeSyncInProgress, CodeCheckInProgress, CodeNotSynced:
				continue // a state, shown as "syncing"
			case CodeRebuilding, CodeIntegrityReinit:
				st.Progress = append(st.Progress, f) // a state, shown as "syncing", with its ETA
				continue
			case CodeLVInactive:
				f.Text = fmt.Sprintf("%s/%s is not active (attr %s): its data cannot be read; activate it (lvm lvchange -ay %s/%s)", w.vg, w.lv, top.Attr, w.vg, w.lv)
				if HasCode(h.Findings, CodeMissingAtBoot) {
					f.Text = fmt.Sprintf("%s/%s is not active (attr %s): its data cannot be read (missing at boot: lvchange -ay is refused)", w.vg, w.lv, top.Attr)
				}
			}
			st.problem(f)
		}
		if top.IntegrityMode != "" {
			st.Integrity = &Integrity{Enabled: true, Mode: top.IntegrityMode, BlockSize: top.IntegrityBlockSize}
			st.IntegrityMism = top.IntegrityMismatches
		}
		for _, ih := range h.Images {
			img := ih.LV
			is := ImageStatus{Name: img.Name, SegType: img.SegType(), IntegrityMismatches: img.IntegrityMismatches}
			for _, d := range ih.Disks {
				is.Devices = append(is.Devices, devName(d))
			}
			for _, f := range ih.Findings {
				switch f.Code {
				case CodeImageSpansDisks:
					f.Text = fmt.Sprintf("%s spans %d devices (%s): reads are unbalanced", img.Name, len(is.Devices), strings.Join(is.Devices, ", "))
				case CodeImageMissing:
				default:
					is.Problems = append(is.Problems, f.Text)
				}
				st.problem(f)
			}
			if len(is.Devices) == 0 {
				is.Devices = []string{"[missing]"}
			}
			st.Images = append(st.Images, is)
		}
		if w.plan != nil && opts.Plan != nil {
			st.Checks = VerifyArray(*w.plan, all, opts.Plan.ExtentSize, func(pv string) string { return planID(opts.Plan, opts.Inventory, pv) })
			for _, c := range st.Checks {
				if !c.OK {
					st.problem(Finding{Code: CodePlanMismatch, Severity: Critical, LV: top.FullName(), Text: "plan: " + c.String()})
				}
			}
		}
		switch {
		case len(st.Findings) > 0:
			st.State = "problem"
			rep.OK = false
		case syncing:
			st.State = "syncing"
		default:
			st.State = "ok"
		}
		rep.Arrays = append(rep.Arrays, st)
	}
	return rep, nil
}

func planArray(p *Plan, vg, lv string) *Array {
	if p == nil {
		return nil
	}
	for i, a := range p.Arrays {
		if a.VG == vg && a.LV == lv {
			return &p.Arrays[i]
		}
	}
	return nil
}

// planID maps a PV path to the plan's device id through the inventory.
func planID(p *Plan, inv *blockdev.Inventory, pv string) string {
	if inv == nil { // no inventory: trust the kernel names seen at planning time
		for _, pd := range p.Devices {
			if pd.Path == pv || "/dev/"+pd.Name == pv {
				return pd.ID
			}
		}
		return ""
	}
	d := inv.Find(pv)
	if d == nil {
		return ""
	}
	for _, pd := range p.Devices {
		if pd.ID == d.StableID || pd.ID == d.Path || inv.Find(pd.ID) == d {
			return pd.ID
		}
	}
	return ""
}

// WriteText prints the status for a human.
func (r *StatusReport) WriteText(w io.Writer) error {
	for _, a := range r.Arrays {
		if !a.Exists {
			fmt.Fprintf(w, "%s/%s: %s\n", a.VG, a.LV, strings.Join(a.Problems, "; "))
			continue
		}
		fmt.Fprintf(w, "%s/%s  %s  %s, %d data stripes of %d devices, %s, attr %s, health %q\n",
			a.VG, a.LV, strings.ToUpper(a.State), a.SegType, a.DataStripes, a.Stripes, sizes.Format(a.Size), a.Attr, a.Health)
		if a.SyncPercent >= 0 {
			fmt.Fprintf(w, "  sync %.2f%% (%s), raid mismatches %d\n", a.SyncPercent, a.SyncAction, a.RaidMismatches)
		}
		if a.Integrity != nil {
			mm := "unknown" // no readable count (an inactive LV): JSON says -1
			if a.IntegrityMism >= 0 {
				mm = fmt.Sprint(a.IntegrityMism)
			}
			fmt.Fprintf(w, "  integrity %s, block size %d, mismatches %s\n", a.Integrity.Mode, a.Integrity.BlockSize, mm)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, img := range a.Images {
			mm := "-"
			switch {
			case img.IntegrityMismatches >= 0:
				mm = fmt.Sprint(img.IntegrityMismatches)
			case img.SegType == "integrity":
				mm = "unknown" // has integrity, but no readable count (inactive, or a value tbhost cannot read: see the problems)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\tmismatches %s\n", img.Name, img.SegType, strings.Join(img.Devices, ", "), mm)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, c := range a.Checks {
			fmt.Fprintf(w, "  %s\n", c)
		}
		for _, f := range a.Progress {
			fmt.Fprintf(w, "  ~ %s\n", f.Text)
			if f.Advice != "" {
				fmt.Fprintf(w, "    %s\n", f.Advice)
			}
		}
		for i, p := range a.Problems {
			fmt.Fprintf(w, "  ! %s\n", p)
			if i < len(a.Findings) && a.Findings[i].Advice != "" && !strings.Contains(p, a.Findings[i].Advice) {
				fmt.Fprintf(w, "    do: %s\n", a.Findings[i].Advice)
			}
		}
	}
	if r.OK {
		fmt.Fprintln(w, "OK")
	} else {
		fmt.Fprintln(w, "PROBLEM")
	}
	return nil
}
