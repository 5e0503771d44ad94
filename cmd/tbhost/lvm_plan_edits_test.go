package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/lvm"
	"github.com/tbhost/tbhost/lvm/lvmfake"
	"gopkg.in/yaml.v3"
)

// referencePlan is `tbhost --root refTree lvm plan -o FILE`, decoded
// without any check (as a hand editor sees it).
func referencePlan(t *testing.T) lvm.Plan {
	t.Helper()
	f := filepath.Join(t.TempDir(), "plan.yaml")
	if code, _, stderr := runTB(t, nil, "--root", referenceTree(t), "lvm", "plan", "-o", f); code != 0 {
		t.Fatalf("plan: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	var p lvm.Plan
	if err := yaml.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeEdited saves an edited plan whose commands were edited to match
// (the consistent edit ParsePlan's old command check let through).
func writeEdited(t *testing.T, p lvm.Plan) string {
	t.Helper()
	p.Commands = lvm.BuildCommands(&p)
	y, err := p.YAML()
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "edited.yaml")
	if err := os.WriteFile(f, y, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func hddIndex(p *lvm.Plan, name string) int {
	for i, d := range p.Devices {
		if d.Name == name {
			return i
		}
	}
	return -1
}

// Issue 12 defect 2: every hand edit of a plan, with the commands edited to
// match, makes `lvm apply --dry-run` exit 1 with an error naming the field,
// and nothing runs (not even an lvm report: the refusal comes first).
func TestLVMApplyRefusesEditedPlans(t *testing.T) {
	cases := []struct {
		name string
		edit func(p *lvm.Plan)
		want []string
	}{
		{"path is the system NVMe disk", func(p *lvm.Plan) {
			p.Devices[hddIndex(p, "sda")].Path = "/dev/nvme0n1"
		}, []string{"devices[0].path /dev/nvme0n1 is nvme0n1", "another device than the guards check"}},
		{"path is the mounted root md device", func(p *lvm.Plan) {
			p.Devices[hddIndex(p, "sdb")].Path = "/dev/md126"
		}, []string{"devices[1].path /dev/md126: not a disk or partition"}},
		{"path is another HDD of the plan's", func(p *lvm.Plan) {
			p.Devices[hddIndex(p, "sdc")].Path = "/dev/sda"
		}, []string{"devices[2].path /dev/sda is sda"}},
		{"id and path both the system NVMe disk", func(p *lvm.Plan) {
			d := &p.Devices[hddIndex(p, "sda")]
			old := d.ID
			d.ID, d.Path = "/dev/nvme0n1", "/dev/nvme0n1"
			for i, id := range p.Arrays[0].Devices {
				if id == old {
					p.Arrays[0].Devices[i] = d.ID
				}
			}
		}, []string{"and its disk nvme0n1 (/dev/nvme0n1) are both in the plan"}},
		{"id and path both the second NVMe disk, as an HDD", func(p *lvm.Plan) {
			d := &p.Devices[hddIndex(p, "sda")]
			old := d.ID
			d.ID, d.Path = "/dev/nvme1n1", "/dev/nvme1n1"
			p.Arrays[1].Devices = p.Arrays[1].Devices[:1]
			p.Arrays[1].Type, p.Arrays[1].Stripes, p.Arrays[1].DataStripes = "linear", 1, 1
			p.Arrays[1].Extents, p.Arrays[1].Size = 51455, 51455*p.ExtentSize
			p.Arrays[1].Raw = p.Devices[hddIndex(p, "nvme0n1p4")].Size
			p.Summary = nil
			p.Devices = append(p.Devices[:hddIndex(p, "nvme1n1p4")], p.Devices[hddIndex(p, "nvme1n1p4")+1:]...)
			for i, id := range p.Arrays[0].Devices {
				if id == old {
					p.Arrays[0].Devices[i] = "/dev/nvme1n1"
				}
			}
		}, []string{"stale", "/dev/nvme1n1 (now nvme1n1)", "serial S4GENX0N123402, planned ZAD0A1B1"}},
		{"raid5 with --stripes 2 over 6 PVs", func(p *lvm.Plan) {
			p.Arrays[0].DataStripes = 2
			p.Arrays[0].Stripes = 3
		}, []string{"arrays[0].stripes", "raid5 over 6 PVs with stripes 3 and data_stripes 2", "must be stripes 6, data_stripes 5"}},
		{"raid5 on 2 HDDs", func(p *lvm.Plan) {
			a := &p.Arrays[0]
			a.Devices = a.Devices[:2]
			a.Stripes, a.DataStripes = 2, 1
			keep := p.Devices[:0]
			for _, d := range p.Devices {
				if d.Role != "hdd" || d.ID == a.Devices[0] || d.ID == a.Devices[1] {
					keep = append(keep, d)
				}
			}
			p.Devices = keep
		}, []string{"arrays[0].devices", "raid5 over 2 devices: tbhost builds it over 3 to 64 HDDs"}},
		{"one PV twice in the array", func(p *lvm.Plan) {
			p.Arrays[0].Devices[1] = p.Arrays[0].Devices[0]
		}, []string{"arrays[0].devices[1]", "already a member of vg-hdd/tables"}},
		{"one disk under two ids", func(p *lvm.Plan) {
			d := &p.Devices[hddIndex(p, "sdb")]
			old := d.ID
			d.ID = "/dev/disk/by-id/ata-ST6000NM0115-1YZ110_ZAD0A1B1" // sda's other link
			d.Path = d.ID
			for i, id := range p.Arrays[0].Devices {
				if id == old {
					p.Arrays[0].Devices[i] = d.ID
				}
			}
		}, []string{"sda, which the plan already names as /dev/disk/by-id/wwn-0x5000c500a1b2c301"}},
		{"VG name -ff", func(p *lvm.Plan) { p.Arrays[0].VG = "-ff" }, []string{`arrays[0].vg: "-ff" starts with '-'`}},
		{"LV name ../../etc", func(p *lvm.Plan) { p.Arrays[0].LV = "../../etc" }, []string{`arrays[0].lv: "../../etc" has characters`}},
		{"LV name with a reserved suffix", func(p *lvm.Plan) { p.Arrays[1].LV = "prefix_rimage_0" }, []string{`arrays[1].lv`, `"_rimage", which lvm2 reserves`}},
		{"path that is an lvm option", func(p *lvm.Plan) {
			p.Devices[hddIndex(p, "sdd")].Path = `--config=devices{filter=["a|.*|"]}`
		}, []string{"devices[3].path", "looks like an option"}},
		{"extents 2^40", func(p *lvm.Plan) {
			p.Arrays[0].Extents = 1 << 40
			p.Arrays[0].Size = p.Arrays[0].Extents * p.ExtentSize
		}, []string{"arrays[0].extents: 1099511627776", "hold exactly 7097085 extents"}},
		{"prefix extents beyond the devices", func(p *lvm.Plan) {
			p.Arrays[1].Extents *= 2
			p.Arrays[1].Size = p.Arrays[1].Extents * p.ExtentSize
		}, []string{"arrays[1].extents: 205820", "at most 102910"}},
		{"an HDD planned into the NVMe RAID 0", func(p *lvm.Plan) {
			p.Arrays[0].Devices = p.Arrays[0].Devices[1:]
			p.Arrays[0].Stripes, p.Arrays[0].DataStripes = 5, 4
			p.Arrays[1].Devices = append(p.Arrays[1].Devices, p.Devices[hddIndex(p, "sda")].ID)
			p.Arrays[1].Stripes, p.Arrays[1].DataStripes = 3, 3
		}, []string{"has role \"hdd\": a raid0 array is built on nvme devices only"}},
		{"block sizes missing (an old plan)", func(p *lvm.Plan) {
			p.Devices[0].LogicalBlockSize, p.Devices[0].PhysicalBlockSize = 0, 0
		}, []string{"devices[0].logical_block_size: missing", "re-plan"}},
		{"fstab line with a second entry", func(p *lvm.Plan) {
			p.Arrays[0].Filesystem = &lvm.Filesystem{Type: "ext4", Mount: "/srv/syzygy", UUID: "0b3c2f1e-1111-4222-8333-444455556666",
				Fstab: "UUID=0b3c2f1e-1111-4222-8333-444455556666 /srv/syzygy ext4 defaults,noatime,nofail 0 2\n/dev/sda / ext4 defaults 0 1"}
		}, []string{"arrays[0].filesystem.fstab"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := referencePlan(t)
			c.edit(&p)
			f := writeEdited(t, p)
			fake := lvmfake.New()
			code, out, stderr := runTB(t, fake, "--root", referenceTree(t), "lvm", "apply", "--dry-run", f)
			if code != 1 {
				t.Fatalf("exit %d, want 1\nstdout %s\nstderr %s", code, out, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("the refusal does not say %q:\n%s", w, stderr)
				}
			}
			if len(fake.Calls) != 0 {
				t.Errorf("a refused plan ran %v", fake.Calls)
			}
			if strings.Contains(out, "would-run") {
				t.Errorf("a refused plan printed steps:\n%s", out)
			}
		})
	}
}

// The unedited plan still applies (dry run), so the refusals above are the
// edits' doing.
func TestLVMApplyAcceptsTheUneditedPlan(t *testing.T) {
	f := writeEdited(t, referencePlan(t))
	fake := lvmfake.New()
	code, out, stderr := runTB(t, fake, "--root", referenceTree(t), "lvm", "apply", "--dry-run", f)
	if code != 0 || !strings.Contains(out, "would-run lvm pvcreate -- /dev/disk/by-id/wwn-0x5000c500a1b2c301") {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if w := lvmfake.Writes(fake.Calls); len(w) != 0 {
		t.Errorf("dry run wrote %v", w)
	}
}

// Issue 12 item 8: -o does not silently replace a reviewed plan.
func TestLVMPlanOutputRefusesAnExistingFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(f, []byte("# reviewed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runTB(t, nil, "--root", referenceTree(t), "lvm", "plan", "-o", f)
	if code != 1 || !strings.Contains(stderr, "--force") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(f); string(b) != "# reviewed\n" {
		t.Fatalf("the existing plan was overwritten: %q", b)
	}
	if code, _, stderr := runTB(t, nil, "--root", referenceTree(t), "lvm", "plan", "-o", f, "--force"); code != 0 {
		t.Fatalf("--force: exit %d: %s", code, stderr)
	}
	if _, err := lvm.LoadPlan(f); err != nil {
		t.Fatalf("forced plan: %v", err)
	}
}
