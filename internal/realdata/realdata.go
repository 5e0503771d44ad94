// Package realdata finds the project's shared real Syzygy data for tests and
// benchmarks: the directory named by $TBHOST_SYZYGY, else ../shared/syzygy
// next to the repository (30 real table files under tables/ and the
// published checksum lists under checksums/). The data is never copied into
// the repository; where it is absent, callers skip with a message saying so.
//
// A clone elsewhere runs the real-data tests with
//
//	TBHOST_SYZYGY=/path/to/shared/syzygy go test ./...
package realdata

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// OldGenerator are the shared tables that do not match the published
// checksum lists: an older generator wrote them (same positions, other
// bytes). The other 24 match.
var OldGenerator = []string{"KPvK.rtbw", "KPvK.rtbz", "KQvK.rtbw", "KQvK.rtbz", "KRvK.rtbw", "KRvK.rtbz"}

// EnvVar names the directory of the shared real data (holding tables/ and
// checksums/), for clones that do not sit next to ../shared.
const EnvVar = "TBHOST_SYZYGY"

// Find returns the absolute path of the shared real data: $TBHOST_SYZYGY
// when set (it must hold tables/*.rtbw or .rtbz: a set variable that points
// nowhere is an error, not a silent fallback), else ../shared/syzygy
// relative to the repository root (the directory holding go.mod above the
// working directory); or an error saying why the real tables are not there.
func Find() (string, error) {
	if env := os.Getenv(EnvVar); env != "" {
		data, err := filepath.Abs(env)
		if err != nil {
			return "", fmt.Errorf("$%s=%s: %w", EnvVar, env, err)
		}
		if files, _ := filepath.Glob(filepath.Join(data, "tables", "*.rtb[wz]")); len(files) == 0 {
			return "", fmt.Errorf("$%s=%s: no tables/*.rtbw or *.rtbz there (point it at the directory holding tables/ and checksums/)", EnvVar, env)
		}
		return data, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("real Syzygy data: no go.mod above the working directory")
		}
		dir = parent
	}
	data := filepath.Join(filepath.Dir(dir), "shared", "syzygy")
	if files, _ := filepath.Glob(filepath.Join(data, "tables", "*.rtb[wz]")); len(files) == 0 {
		return "", fmt.Errorf("real Syzygy tables absent at %s (they are not part of the repo; set $%s to where they are)", data, EnvVar)
	}
	return data, nil
}

// Dir is Find for tests: it skips the test when the real tables are not there.
func Dir(t testing.TB) string {
	t.Helper()
	data, err := Find()
	if err != nil {
		t.Skipf("%v; skipping", err)
	}
	return data
}

// Tables returns the directory of the real table files (see Dir).
func Tables(t testing.TB) string {
	t.Helper()
	return filepath.Join(Dir(t), "tables")
}

// CopyTables copies the real table files into a fresh temporary directory
// the test may modify, and returns it.
func CopyTables(t testing.TB) string {
	t.Helper()
	src := Tables(t)
	dst := t.TempDir()
	files, _ := filepath.Glob(filepath.Join(src, "*.rtb[wz]"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
