package lvm

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"text/tabwriter"

	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/sizes"
	"gopkg.in/yaml.v3"
)

// planHeader opens every saved plan file.
const planHeader = `# tbhost lvm plan: review it, then run   tbhost lvm apply [--dry-run] THIS_FILE
# apply re-reads the machine and refuses if a device's serial or size changed.
# Do not edit the commands: apply derives them again from devices and arrays
# and refuses a plan where they differ. Re-plan instead.
`

// MarshalYAML renders the plan as the YAML file apply reads.
func (p *Plan) YAML() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(planHeader)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(p); err != nil {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	return buf.Bytes(), nil
}

// LoadPlan reads and checks a plan file.
func LoadPlan(path string) (*Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	return ParsePlan(b, path)
}

// ParsePlan decodes a plan (YAML, or JSON which is YAML too) and checks that
// it is complete and consistent.
func ParsePlan(b []byte, name string) (*Plan, error) {
	var p Plan
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%s: not a tbhost plan: %w", name, err)
	}
	if p.Version != PlanVersion {
		return nil, fmt.Errorf("%s: plan version %d, this tbhost reads version %d: re-plan with this tbhost", name, p.Version, PlanVersion)
	}
	if p.ExtentSize <= 0 || len(p.Arrays) == 0 || len(p.Devices) == 0 {
		return nil, fmt.Errorf("%s: plan has no extent size, arrays or devices", name)
	}
	ids := map[string]bool{}
	for _, d := range p.Devices {
		if d.ID == "" || d.Path == "" || d.Size <= 0 {
			return nil, fmt.Errorf("%s: device %q lacks id, path or size", name, d.Name)
		}
		ids[d.ID] = true
	}
	for _, a := range p.Arrays {
		for _, id := range a.Devices {
			if !ids[id] {
				return nil, fmt.Errorf("%s: array %s/%s names device %s that is not in devices", name, a.VG, a.LV, id)
			}
		}
	}
	if want := BuildCommands(&p); !reflect.DeepEqual(want, p.Commands) {
		return nil, fmt.Errorf("%s: the plan's commands do not match its devices and arrays (edited by hand?); re-plan with tbhost lvm plan", name)
	}
	return &p, nil
}

// WriteText prints the plan for a reviewer.
func (p *Plan) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "tbhost lvm plan for %s (inventory %s, fingerprint %s)\n", p.Host, p.Source, p.InventoryFingerprint)
	fmt.Fprintf(w, "sized for %s, extent size %s\n\n", p.SizedFor, sizes.Format(p.ExtentSize))
	fmt.Fprintln(w, "DEVICES")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tROLE\tSIZE\tBLOCKS\tSERIAL\tID\tWIPE")
	for _, d := range p.Devices {
		wipe := "-"
		if d.Wipe {
			wipe = "WIPE"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", d.Name, d.Role, sizes.Format(d.Size), d.LogicalBlockSize, d.PhysicalBlockSize, d.Serial, d.ID, wipe)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, d := range p.Devices {
		if len(d.Found) > 0 {
			fmt.Fprintf(w, "  %s now: %s\n", d.Name, strings.Join(d.Found, "; "))
		}
	}
	fmt.Fprintln(w, "\nARRAYS")
	for _, a := range p.Arrays {
		fmt.Fprintf(w, "  %s/%s  %s", a.VG, a.LV, a.Type)
		if a.Type == "raid5" {
			fmt.Fprintf(w, ", %d data stripes + parity over %d devices", a.DataStripes, a.Stripes)
		} else if a.Type == "raid0" {
			fmt.Fprintf(w, ", %d stripes", a.Stripes)
		}
		fmt.Fprintf(w, ", %d extents = %s usable of %s raw\n", a.Extents, sizes.Format(a.Size), sizes.Format(a.Raw))
		if a.Integrity.Enabled {
			fmt.Fprintf(w, "    integrity: %s, block size %d (%s)\n", a.Integrity.Mode, a.Integrity.BlockSize, a.Integrity.Why)
		}
		if l := a.Layout; l != nil {
			fmt.Fprintf(w, "    per device: %d extents = %d image + %d rmeta + %d imeta + %d spare\n",
				l.PVExtents, l.ImageExtents, l.RmetaExtents, l.ImetaExtents, l.SpareExtents)
		}
		if fs := a.Filesystem; fs != nil {
			fmt.Fprintf(w, "    filesystem: %s on %s, fstab: %s\n", fs.Type, fs.Mount, fs.Fstab)
		}
	}
	if s := p.Summary; s != nil {
		fmt.Fprintf(w, "\nCAPACITY  tables %s usable (of %s raw HDD)", sizes.Format(s.TablesUsable), sizes.Format(s.RawHDD))
		if s.PrefixUsable > 0 {
			fmt.Fprintf(w, ", prefix %s", sizes.Format(s.PrefixUsable))
		}
		fmt.Fprintln(w)
	}
	for _, l := range p.forecastText() {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w, "\nCOMMANDS (apply runs exactly these, skipping steps already done)")
	for _, c := range p.Commands {
		fmt.Fprintf(w, "  %s\n", execx.Quote(c))
	}
	if len(p.Notes) > 0 {
		fmt.Fprintln(w, "\nNOTES")
		for _, n := range p.Notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
	if len(p.Warnings) > 0 {
		fmt.Fprintln(w, "\nWARNINGS")
		for _, n := range p.Warnings {
			fmt.Fprintf(w, "  ! %s\n", n)
		}
	}
	return nil
}
