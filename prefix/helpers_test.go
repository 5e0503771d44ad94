package prefix

import (
	"path/filepath"
	"testing"

	"github.com/tbhost/tbhost/internal/realdata"
)

func realTableFiles(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join(realdata.Tables(t), "*.rtb[wz]"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}
