package monitor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/smart"
	"github.com/tbhost/tbhost/lvm"
)

// SMARTProblems asks smartctl (smartmontools) about every member disk of
// the arrays and returns a WARNING per disk it has concerns about, naming
// the disk and the replace command, plus notes on what could not be asked.
// Without smartctl it returns one note and no problem. sysBlock is the
// /sys/class/block directory (partitions are asked about as their disk).
func SMARTProblems(ctx context.Context, r execx.Runner, sysBlock string, arrays []Array) (map[string][]Problem, []string) {
	out := map[string][]Problem{}
	var notes []string
	asked := map[string]smart.Health{}
	for _, a := range arrays {
		for _, m := range a.Members {
			if m.Disk == "" || strings.HasPrefix(m.Disk, "dm-") || strings.HasPrefix(m.Disk, "md") {
				continue
			}
			disk := wholeDisk(sysBlock, m.Disk)
			h, ok := asked[disk]
			if !ok {
				var err error
				h, err = smart.Read(ctx, r, "/dev/"+disk)
				if errors.Is(err, smart.ErrNotInstalled) {
					return nil, []string{"SMART not checked: " + smart.ErrNotInstalled.Error()}
				}
				if err != nil {
					notes = append(notes, fmt.Sprintf("SMART of %s not read: %v", disk, err))
					continue
				}
				asked[disk] = h
			}
			c := h.Concerns()
			if len(c) == 0 {
				continue
			}
			who := "/dev/" + disk
			if h.Serial != "" {
				who += " (serial " + h.Serial + ")"
			}
			advice := fmt.Sprintf("plan its replacement: tbhost lvm replace --dry-run %s --old /dev/%s --new /dev/NEWDISK", a.Name, disk)
			if a.Kind != "lvm" {
				advice = "plan its replacement"
			}
			out[a.Name] = append(out[a.Name], Problem{Severity: Warning, Code: lvm.CodeSMART,
				Text: fmt.Sprintf("%s: member %s: %s; %s", a.Name, who, strings.Join(c, "; "), advice)})
		}
	}
	return out, notes
}

// wholeDisk is the disk of a partition (sda1 -> sda), else name itself.
func wholeDisk(sysBlock, name string) string {
	if _, err := os.Stat(filepath.Join(sysBlock, name, "partition")); err != nil {
		return name
	}
	target, err := filepath.EvalSymlinks(filepath.Join(sysBlock, name))
	if err != nil {
		return name
	}
	return filepath.Base(filepath.Dir(target))
}
