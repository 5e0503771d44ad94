package lvm

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// lvm2 2.03.16's naming rules (lib/misc/lvm-string.c).
func TestLVMNameRules(t *testing.T) {
	for _, c := range []struct {
		name   string
		vg, lv bool
	}{
		{"vg-hdd", true, true}, {"tables", true, true}, {"a+b_c.d-e", true, true}, {"..x", true, true},
		{"-ff", false, false}, {"../../etc", false, false}, {".", false, false}, {"..", false, false}, {"", false, false},
		{"a b", false, false}, {"a/b", false, false}, {"x\n", false, false}, {"é", false, false},
		{strings.Repeat("a", 127), true, true}, {strings.Repeat("a", 128), false, false},
		{"snapshot1", true, false}, {"pvmove0", true, false}, {"data_rimage_0", true, false}, {"x_imeta", true, false}, {"my_tmeta2", true, false}, {"t_vorigin", true, false},
	} {
		if got := CheckVGName(c.name) == ""; got != c.vg {
			t.Errorf("VG %q: valid %v, want %v (%s)", c.name, got, c.vg, CheckVGName(c.name))
		}
		if got := CheckLVName(c.name) == ""; got != c.lv {
			t.Errorf("LV %q: valid %v, want %v (%s)", c.name, got, c.lv, CheckLVName(c.name))
		}
	}
}

func TestDevPathRule(t *testing.T) {
	for p, ok := range map[string]bool{
		"/dev/sda": true, "/dev/disk/by-id/wwn-0x5000c500a1b2c301": true, "/dev/disk/by-id/nvme-SAMSUNG_MZVLB512HBJQ-00000_S4GENX0N123401-part4": true,
		"/dev/disk/by-path/pci-0000:00:1f.2-ata-1": true,
		"--config=x": false, "-ff": false, "sda": false, "/dev/": false, "/dev": false, "/etc/passwd": false, "/dev/../etc/passwd": false,
		"/dev/disk//sda": false, "/dev/sda/": false, "/dev/sda ": false, "/dev/sd\na": false, "/dev/disk/-x": false, "": false,
	} {
		if got := CheckDevPath(p) == ""; got != ok {
			t.Errorf("%q: accepted %v, want %v (%s)", p, got, ok, CheckDevPath(p))
		}
	}
}

// Plans saved before the lvm commands got their "--" (the real lab plans)
// are still read; apply runs the commands derived now.
func TestPlanFromBeforeTheSeparatorIsRead(t *testing.T) {
	p, err := LoadPlan(filepath.Join(realLab, "plan.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.Commands, BuildCommands(p)) || !strings.Contains(strings.Join(p.Commands[0], " "), "pvcreate -- /dev/") {
		t.Fatalf("commands not the derived ones: %v", p.Commands[0])
	}
}

// MakePlan never writes a plan apply would refuse: bad names and mount
// points are refused when planning.
func TestPlanRefusesNamesAndMountsApplyWouldRefuse(t *testing.T) {
	inv := inventory(t, "lab-guest")
	refused(t, inv, PlanOptions{HDDVG: "-ff"}, `VG name "-ff"`)
	refused(t, inv, PlanOptions{TablesLV: "../../etc"}, `LV name "../../etc"`)
	refused(t, inv, PlanOptions{TablesFS: "ext4", TablesMount: "/srv/sy zygy"}, `--tables-mount "/srv/sy zygy"`)
	refused(t, inv, PlanOptions{PrefixFS: "ext4", PrefixMount: "/srv/p\n/dev/sda / ext4"}, "--prefix-mount")
	refused(t, inv, PlanOptions{HDDVG: "same", NVMeVG: "same"}, `VG "same" is used by two arrays`)
}
