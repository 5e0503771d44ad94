package integrity

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/diskstats"
	"github.com/tbhost/tbhost/internal/fixturetree"
)

// captureStatus is vg-hdd/tables's status in a real lvm2 2.03.16 report
// captured in the VM lab (internal/lab/testdata/captures, part of the repo).
func captureStatus(t *testing.T, name string) ArrayStatus {
	t.Helper()
	return tablesStatus(t, lvsFile(t, filepath.Join(capture(t, name), "lvm", "lvs.json")))
}

// capture unpacks one of the lab's committed captures and returns its root.
func capture(t *testing.T, name string) string {
	t.Helper()
	return fixturetree.Dir(t, "../internal/lab/testdata/captures/"+name+".tar.gz")
}

func TestStatusRealCaptureClean(t *testing.T) {
	s := captureStatus(t, "raid5-integrity-stripes5")
	if !s.OK || len(s.Images) != 6 || s.IntegrityBlockSize != 512 || s.IntegrityMode != "journal" {
		t.Fatalf("%+v", s)
	}
	seen := map[string]bool{}
	for _, img := range s.Images {
		if len(img.Disks) != 1 || img.Mismatches != 0 {
			t.Fatalf("%+v", img)
		}
		seen[img.Disks[0]] = true
	}
	if len(seen) != 6 {
		t.Fatalf("images on %d distinct disks, want 6", len(seen))
	}
}

func TestStatusRealCaptureMemberDropped(t *testing.T) {
	s := captureStatus(t, "raid5-member-dropped")
	if s.OK {
		t.Fatal("an array with a member gone must not be OK")
	}
	if p := strings.Join(s.Problems, "\n"); !strings.Contains(p, "partial") {
		t.Fatalf("problems %q do not say partial", p)
	}
}

// The lab's /proc/diskstats 5 s apart under an O_DIRECT read of the LV.
func TestBackoffOnRealCaptureUnderLoad(t *testing.T) {
	dir := filepath.Join(capture(t, "raid5-integrity-stripes5"), "proc")
	sample := func(n string) diskstats.Sample {
		s, err := diskstats.ReadFile(filepath.Join(dir, "diskstats."+n))
		if err != nil {
			t.Fatalf("committed lab capture: %v", err)
		}
		if n == "1" {
			s.Time = s.Time.Add(5 * time.Second)
		}
		return s
	}
	prev, now := sample("0"), sample("1")
	members := []string{"sda", "sdb", "sdc", "sdd", "sde", "sdf"}
	d := BackoffRule{MaxAwait: DefaultMaxAwait, MinRate: 1 << 20, MaxRate: 100 << 20}.Next(50<<20, members, prev, now)
	if d.WorstDisk == "" || d.Await <= 0 {
		t.Fatalf("no member read during the load? %+v", d)
	}
	// the decision follows the rule for the measured r_await
	switch {
	case d.Await > DefaultMaxAwait && d.Rate != 25<<20,
		d.Await < DefaultMaxAwait/2 && d.Rate != 50<<20+100<<20/8:
		t.Fatalf("%+v", d)
	}
	t.Logf("lab under load: %s", d.Reason)
}
