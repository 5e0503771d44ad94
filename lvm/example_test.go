package lvm

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/tbhost/tbhost/internal/blockdev/fixture"
)

var updateEmbedded = flag.Bool("update", false, "rewrite lvm/refhost/reference-host.tar.gz from internal/blockdev/testdata/reference-host")

const refTree = "../internal/blockdev/testdata/reference-host"

// The embedded archive must be exactly the committed reference-host tree.
func TestEmbeddedReferenceHostMatchesTree(t *testing.T) {
	if *updateEmbedded {
		b, err := fixture.Tar(refTree)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("refhost", "reference-host.tar.gz"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	dir := t.TempDir()
	if err := fixture.Untar(referenceHostTar, dir); err != nil {
		t.Fatal(err)
	}
	if d := fixture.DiffTrees(dir, refTree); d != "" {
		t.Fatalf("embedded reference host differs from %s (go test ./lvm -run Embedded -update): %s", refTree, d)
	}
}
