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
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxPlanBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read plan %s: %w", path, err)
	}
	if len(b) > MaxPlanBytes {
		return nil, fmt.Errorf("%s: more than %d bytes: not a tbhost plan", path, MaxPlanBytes)
	}
	return ParsePlan(b, path)
}

// ParsePlan decodes a plan (YAML, or JSON which is YAML too) and checks it:
// the plan file is input, so every field is validated against the rules
// tbhost lvm plan follows (names, paths, the stripe rule, the sizes of the
// devices, ...), and its commands must be exactly what its devices and
// arrays derive. A plan written before the lvm commands ended their options
// with "--" is read too; its commands are replaced by the derived ones.
func ParsePlan(b []byte, name string) (*Plan, error) {
	if len(b) > MaxPlanBytes {
		return nil, fmt.Errorf("%s: more than %d bytes: not a tbhost plan", name, MaxPlanBytes)
	}
	var p Plan
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%s: not a tbhost plan: %w", name, err)
	}
	var more yaml.Node
	if err := dec.Decode(&more); err != io.EOF {
		return nil, fmt.Errorf("%s: more than one YAML document: a tbhost plan is one", name)
	}
	if p.Version != PlanVersion {
		return nil, fmt.Errorf("%s: plan version %d, this tbhost reads version %d: re-plan with this tbhost", name, p.Version, PlanVersion)
	}
	if problems := p.validate(); len(problems) > 0 {
		return nil, &RefusedError{What: name + ": not a plan tbhost lvm plan would write (the file was edited?); re-plan rather than edit it", Problems: problems}
	}
	want := BuildCommands(&p)
	if !reflect.DeepEqual(want, p.Commands) && !reflect.DeepEqual(commandsBeforeSeparator(&p), p.Commands) {
		return nil, &RefusedError{What: name, Problems: []string{"commands: they do not match the plan's devices and arrays (edited by hand?); re-plan with tbhost lvm plan"}}
	}
	p.Commands = want
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
		if a.RequestedSize > 0 {
			fmt.Fprintf(w, "    size: --tables-size %s (%d bytes) rounded up to %d extents\n", sizes.Format(a.RequestedSize), a.RequestedSize, a.Extents)
		}
		if a.VGFreeExtents > 0 || a.RequestedSize > 0 {
			fmt.Fprintf(w, "    VG %s: %d extents (%s) remain free after lvcreate (raw PV space)\n", a.VG, a.VGFreeExtents, sizes.Format(a.VGFreeExtents*p.ExtentSize))
		}
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
