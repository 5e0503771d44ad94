package integrity

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/lvm"
)

// SyncCheckOptions: drive the kernel's own scrub, `lvchange --syncaction check`.
type SyncCheckOptions struct {
	VG, LV string
	Runner execx.Runner
	// MaxRecoveryRate caps the check per device in bytes/s (lvchange
	// --maxrecoveryrate, which takes KiB/s); 0 leaves the LV's setting.
	MaxRecoveryRate int64
	Poll            time.Duration // default 5s
	Deadline        time.Time     // stop waiting then (the check goes on in the kernel)
	Clock           Clock
	Progress        func(action string, percent float64)
}

// SyncCheckReport is what the check found.
type SyncCheckReport struct {
	LV                string          `json:"lv"`
	Commands          [][]string      `json:"commands"` // what tbhost ran, in order
	Finished          bool            `json:"finished"`
	Stopped           string          `json:"stopped,omitempty"` // "budget", "interrupted"
	LastAction        string          `json:"last_action"`
	LastPercent       float64         `json:"last_percent"`
	RaidMismatchCount int64           `json:"raid_mismatch_count"`
	Images            []ImageCounters `json:"images"`
	Seconds           float64         `json:"seconds"`
	Notes             []string        `json:"notes,omitempty"`
	Problems          []string        `json:"problems,omitempty"`
}

// SyncCheck starts `lvchange --syncaction check` on vg/lv (never "repair":
// LVM refuses it on integrity LVs, and check already rewrites blocks whose
// integrity checksum fails), waits with progress and reports
// raid_mismatch_count and the per-image integrity counters.
func SyncCheck(ctx context.Context, o SyncCheckOptions) (SyncCheckReport, error) {
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.Poll <= 0 {
		o.Poll = 5 * time.Second
	}
	name := o.VG + "/" + o.LV
	rep := SyncCheckReport{LV: name}
	client := lvm.Client{Runner: o.Runner}
	start := o.Clock.Now()
	all, err := client.LVs(ctx, o.VG) // the whole VG: `lvs -a VG/LV` omits the sub-LVs
	if err != nil {
		return rep, fmt.Errorf("syncaction check %s: %w", name, err)
	}
	top, ok := lvm.Find(all, o.VG, o.LV)
	if !ok {
		return rep, fmt.Errorf("%s: not in the lvs report", name)
	}
	if !strings.HasPrefix(top.SegType(), "raid") || top.SegType() == "raid0" {
		return rep, fmt.Errorf("%s is %s: --syncaction check needs a RAID level with redundancy", name, top.SegType())
	}
	before := countersByImage(all, o.VG, o.LV)
	run := func(argv ...string) error {
		rep.Commands = append(rep.Commands, argv)
		_, err := o.Runner.Run(ctx, argv...)
		return err
	}
	switch top.SyncAction {
	case "idle", "":
		if top.SyncPercent >= 0 && top.SyncPercent < 100 {
			return rep, fmt.Errorf("%s is not in sync (%.2f%%, action %q): wait for the sync to finish before checking", name, top.SyncPercent, top.SyncAction)
		}
		if o.MaxRecoveryRate > 0 {
			kib := o.MaxRecoveryRate / 1024
			if kib < 1 {
				kib = 1
			}
			old, err := maxRecoveryRate(ctx, o.Runner, name)
			if err != nil {
				rep.Notes = append(rep.Notes, fmt.Sprintf("previous max recovery rate unknown (%v)", err))
			} else {
				rep.Notes = append(rep.Notes, fmt.Sprintf("max recovery rate set to %d KiB/s per device; it was %s (restore: lvchange --maxrecoveryrate %s %s)", kib, old, old, name))
			}
			if err := run("lvm", "lvchange", "--maxrecoveryrate", strconv.FormatInt(kib, 10), name); err != nil {
				return rep, fmt.Errorf("set --maxrecoveryrate: %w", err)
			}
		}
		if err := run("lvm", "lvchange", "--syncaction", "check", name); err != nil {
			return rep, fmt.Errorf("start the check: %w", err)
		}
	case "check":
		rep.Notes = append(rep.Notes, "a check was already running: waiting for it")
	default:
		return rep, fmt.Errorf("%s: sync action %q is running; wait for it to finish (tbhost integrity status %s)", name, top.SyncAction, name)
	}

	sawCheck, idlePolls := top.SyncAction == "check", 0
	for {
		if ctx.Err() != nil {
			rep.Stopped = "interrupted"
			break
		}
		if !o.Deadline.IsZero() && !o.Clock.Now().Before(o.Deadline) {
			rep.Stopped = "budget"
			break
		}
		if err := o.Clock.Sleep(ctx, o.Poll); err != nil {
			rep.Stopped = "interrupted"
			break
		}
		all, err = client.LVs(ctx, o.VG)
		if err != nil {
			if ctx.Err() != nil {
				rep.Stopped = "interrupted"
				break
			}
			return rep, fmt.Errorf("poll %s: %w", name, err)
		}
		top, _ = lvm.Find(all, o.VG, o.LV)
		rep.LastAction, rep.LastPercent = top.SyncAction, top.SyncPercent
		if o.Progress != nil {
			o.Progress(top.SyncAction, top.SyncPercent)
		}
		if top.SyncAction == "check" {
			sawCheck = true
			continue
		}
		if top.SyncAction == "idle" || top.SyncAction == "" {
			idlePolls++
			if sawCheck || idlePolls >= 2 {
				rep.Finished = true
				break
			}
		}
	}
	if rep.Stopped != "" {
		rep.Notes = append(rep.Notes, fmt.Sprintf("stopped waiting (%s) at %.2f%%: the check goes on in the kernel; see tbhost integrity status %s", rep.Stopped, rep.LastPercent, name))
	}
	final, err := client.LVs(context.WithoutCancel(ctx), o.VG)
	if err == nil {
		all = final
	}
	top, _ = lvm.Find(all, o.VG, o.LV)
	rep.RaidMismatchCount = top.RaidMismatchCount
	after := countersByImage(all, o.VG, o.LV)
	for _, img := range lvm.SubLVs(all, top, "rimage") {
		c := ImageCounters{Name: img.Name, Disks: lvm.PhysicalDevices(all, img), Before: before[img.Name], After: after[img.Name]}
		rep.Images = append(rep.Images, c)
		if c.After > c.Before {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s/%s on %s: integrity mismatches %d -> %d during the check (the RAID layer rewrote those blocks from the other images)",
				o.VG, img.Name, strings.Join(c.Disks, "+"), c.Before, c.After))
		}
	}
	if rep.Finished && top.RaidMismatchCount > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%s: raid_mismatch_count %d after the check (sectors whose parity did not match; the count does not say which disk)", name, top.RaidMismatchCount))
	}
	rep.Seconds = o.Clock.Now().Sub(start).Seconds()
	return rep, nil
}

// MaxRecoveryRateArgv is the lvs call that reads the current throttle.
func MaxRecoveryRateArgv(name string) []string {
	return []string{"lvm", "lvs", "--reportformat", "json", "--units", "b", "--nosuffix", "-o", "raid_max_recovery_rate", name}
}

func maxRecoveryRate(ctx context.Context, r execx.Runner, name string) (string, error) {
	res, err := r.Run(ctx, MaxRecoveryRateArgv(name)...)
	if err != nil {
		return "", err
	}
	rows, err := lvm.ParseReport(res.Stdout, "lv")
	if err != nil || len(rows) == 0 {
		return "", fmt.Errorf("lvs raid_max_recovery_rate: %v", err)
	}
	v := rows[0]["raid_max_recovery_rate"]
	if v == "" {
		v = "0"
	}
	return v, nil
}
