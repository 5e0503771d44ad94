package lvm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSaveRefusesAnExistingPlanUnlessForced(t *testing.T) {
	p := mustPlan(t, inventory(t, "reference-host"), PlanOptions{})
	dir := t.TempDir()
	f := filepath.Join(dir, "plan.yaml")
	reviewed := []byte("# the reviewed plan\n")
	if err := os.WriteFile(f, reviewed, 0o644); err != nil {
		t.Fatal(err)
	}
	var exists *PlanExistsError
	if err := p.Save(f, false); !errors.As(err, &exists) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("err %v", err)
	}
	if b, _ := os.ReadFile(f); string(b) != string(reviewed) {
		t.Fatalf("the reviewed plan was changed: %q", b)
	}
	// a dangling symlink is refused too (and its target not created)
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(filepath.Join(dir, "target.yaml"), link); err != nil {
		t.Fatal(err)
	}
	if err := p.Save(link, false); !errors.As(err, &exists) {
		t.Fatalf("symlink: err %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "target.yaml")); err == nil {
		t.Error("Save wrote through a symlink")
	}
	if err := p.Save(f, true); err != nil {
		t.Fatal(err)
	}
	back, err := LoadPlan(f)
	if err != nil || back.InventoryFingerprint != p.InventoryFingerprint {
		t.Fatalf("forced save: %v", err)
	}
	if fi, _ := os.Stat(f); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode())
	}
	// no temporary files are left behind
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("left %s", e.Name())
		}
	}
	if err := p.Save(filepath.Join(dir, "new.yaml"), false); err != nil {
		t.Fatalf("new file: %v", err)
	}
}
