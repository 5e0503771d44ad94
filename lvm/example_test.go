package lvm

import (
	"os"
	"testing"

	"github.com/tbhost/tbhost/internal/blockdev/fixture"
	"github.com/tbhost/tbhost/internal/fixturetree"
	"github.com/tbhost/tbhost/internal/treearchive"
)

// The embedded archive is the committed reference host (one copy, which
// internal/blockdev/fixture's TestCommittedTreesAreCurrent checks against
// the builder), and it unpacks to the tree the tests read.
func TestEmbeddedReferenceHostMatchesTree(t *testing.T) {
	const archive = "refhost/reference-host.tar.gz"
	committed, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	if string(committed) != string(referenceHostTar) {
		t.Fatalf("the embedded reference host is not %s (rebuild)", archive)
	}
	dir := t.TempDir()
	if err := treearchive.Unpack(referenceHostTar, dir); err != nil {
		t.Fatal(err)
	}
	if d := fixture.DiffTrees(dir, fixturetree.Dir(t, archive)); d != "" {
		t.Fatalf("embedded reference host differs from %s: %s", archive, d)
	}
}
