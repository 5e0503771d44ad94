package realdata

import (
	"os"
	"path/filepath"
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
