package monitor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/monitor/monitortest"
)

// mdRoot is monitortest.WriteMD in a fresh temporary directory.
func mdRoot(t *testing.T, members []string, attrs map[string]string) string {
	t.Helper()
	root := t.TempDir()
	if err := monitortest.WriteMD(root, members, attrs); err != nil {
		t.Fatal(err)
	}
	return root
}

// Audit: a raid5 md array with raid_disks 3, two members and no md/degraded
// was OK: the absent attribute read as 0 missing, and the members in sync
// were never counted against raid_disks. raid0 and linear have no
// md/degraded in a real kernel and stay OK.
func TestMDDegradedFromMembersAndMissingAttribute(t *testing.T) {
	clean := map[string]string{"level": "raid5", "raid_disks": "3", "degraded": "0", "array_state": "clean", "sync_action": "idle", "mismatch_cnt": "0"}
	with := func(set map[string]string, drop ...string) map[string]string {
		out := map[string]string{}
		for k, v := range clean {
			out[k] = v
		}
		for k, v := range set {
			out[k] = v
		}
		for _, k := range drop {
			delete(out, k)
		}
		return out
	}
	three := []string{"sda1:in_sync", "sdb1:in_sync", "sdc1:in_sync"}
	two := []string{"sda1:in_sync", "sdb1:in_sync"}
	for _, tc := range []struct {
		name    string
		members []string
		attrs   map[string]string
		status  Severity
		want    []string
	}{
		{"clean raid5", three, clean, OK, nil},
		{"auditor: 2 of 3, no md/degraded", two, with(nil, "degraded"), Critical,
			[]string{"md0: degraded: 1 of 3 devices missing (2 members in sync of raid_disks 3; no md/degraded)", "sys/block/md0/md/degraded is missing"}},
		{"2 of 3, md/degraded 0", two, clean, Critical,
			[]string{"md0: degraded: 1 of 3 devices missing (2 members in sync of raid_disks 3; md/degraded says 0)"}},
		{"one member not in sync, md/degraded 0", []string{"sda1:in_sync", "sdb1:in_sync", "sdc1:spare"}, clean, Critical,
			[]string{"md0: degraded: 1 of 3 devices missing"}},
		{"3 of 3, no md/degraded", three, with(nil, "degraded"), Unknown,
			[]string{"sys/block/md0/md/degraded is missing or empty", "cannot tell whether md0 is degraded"}},
		{"raid1, no md/raid_disks", two, with(map[string]string{"level": "raid1"}, "raid_disks"), Unknown,
			[]string{"sys/block/md0/md/raid_disks is missing"}},
		{"raid0 has no md/degraded", two, with(map[string]string{"level": "raid0", "raid_disks": "2"}, "degraded", "sync_action", "mismatch_cnt"), OK, nil},
		{"linear has no md/degraded", two, with(map[string]string{"level": "linear", "raid_disks": "2"}, "degraded", "sync_action", "mismatch_cnt"), OK, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Check(context.Background(), Env{Root: mdRoot(t, tc.members, tc.attrs)}, CheckOptions{For: 5 * time.Second, Interval: 5 * time.Second, Thresholds: DefaultThresholds()})
			if err != nil {
				t.Fatal(err)
			}
			var texts []string
			for _, a := range r.Arrays {
				for _, p := range a.Problems {
					texts = append(texts, p.Severity.String()+" "+p.Text)
				}
			}
			all := strings.Join(texts, "\n")
			if r.Status != tc.status || tc.status == OK && !strings.Contains(r.Summary, "md0 balanced (") {
				t.Errorf("%s, want %s: %s\n%s", r.Status, tc.status, r.Summary, all)
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("no %q in\n%s", w, all)
				}
			}
		})
	}
}
