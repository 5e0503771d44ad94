package realdata

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTablesAndCopy(t *testing.T) {
	src := Tables(t) // skips where ../shared is absent
	if !filepath.IsAbs(src) {
		t.Errorf("%s is not absolute", src)
	}
	dst := CopyTables(t)
	a, _ := filepath.Glob(filepath.Join(src, "*.rtb[wz]"))
	b, _ := filepath.Glob(filepath.Join(dst, "*.rtb[wz]"))
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("copied %d of %d files", len(b), len(a))
	}
	x, _ := os.ReadFile(a[0])
	y, _ := os.ReadFile(filepath.Join(dst, filepath.Base(a[0])))
	if string(x) != string(y) {
		t.Errorf("%s differs after copying", filepath.Base(a[0]))
	}
}

// Issue 18: a clone elsewhere finds the shared tables through $TBHOST_SYZYGY.
func TestFindHonoursTheEnvironmentVariable(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "tables"), 0o755)
	os.WriteFile(filepath.Join(dir, "tables", "KRvK.rtbw"), []byte("x"), 0o644)
	t.Setenv(EnvVar, dir)
	got, err := Find()
	if err != nil || got != dir {
		t.Fatalf("Find() = %q, %v; want %s", got, err, dir)
	}
	if Tables(t) != filepath.Join(dir, "tables") {
		t.Errorf("Tables: %s", Tables(t))
	}
	// set but pointing at nothing: an error naming the variable, no fallback
	t.Setenv(EnvVar, filepath.Join(dir, "nowhere"))
	if got, err := Find(); err == nil || !strings.Contains(err.Error(), EnvVar) {
		t.Fatalf("Find() = %q, %v; want an error naming $%s", got, err, EnvVar)
	}
}
