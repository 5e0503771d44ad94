package monitor

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/sysread"
)

const mdDir = "/sys/block/md0/md"

func TestParseMDRanges(t *testing.T) {
	ok := map[string]string{"level": "raid5", "raid_disks": "6", "degraded": "1", "mismatch_cnt": "8", "sync_completed": "250 / 1000"}
	m, err := parseMD(mdDir, ok, map[string]string{"sda": "in_sync"})
	if err != nil || m.RaidDisks != 6 || m.Degraded != 1 || m.MismatchCnt != 8 || m.SyncProgress != 0.25 || m.Members["sda"] != "in_sync" {
		t.Fatalf("%+v %v", m, err)
	}
	for _, idle := range []string{"none", "delayed"} {
		if m, err := parseMD(mdDir, map[string]string{"sync_completed": idle}, nil); err != nil || m.SyncProgress != -1 || m.RaidDisks != -1 {
			t.Errorf("sync_completed %s: %+v %v", idle, m, err)
		}
	}
	for name, attrs := range map[string]map[string]string{
		"degraded 2e9":             {"raid_disks": "6", "degraded": "2000000000"},
		"degraded > raid_disks":    {"raid_disks": "6", "degraded": "7"},
		"degraded without disks":   {"degraded": "1921"},
		"degraded negative":        {"raid_disks": "6", "degraded": "-1"},
		"degraded float":           {"raid_disks": "6", "degraded": "2e9"},
		"raid_disks huge":          {"raid_disks": "1000000"},
		"mismatch_cnt negative":    {"mismatch_cnt": "-5"},
		"sync done > total":        {"sync_completed": "1001 / 1000"},
		"sync total 0":             {"sync_completed": "0 / 0"},
		"sync garbage":             {"sync_completed": "half"},
		"sync negative":            {"sync_completed": "-1 / 10"},
		"mismatch_cnt not integer": {"mismatch_cnt": "many"},
	} {
		_, err := parseMD(mdDir, attrs, nil)
		if err == nil || !strings.Contains(err.Error(), mdDir+"/") {
			t.Errorf("%s: %v, want an error naming the attribute's file", name, err)
		}
	}
	if _, err := parseMD(mdDir, map[string]string{"raid_disks": "6", "degraded": "7"}, nil); !errors.Is(err, sysread.ErrOutOfRange) {
		t.Errorf("degraded 7 of 6: %v, want ErrOutOfRange", err)
	}
}

// FuzzParseMD: whatever the attributes say, parseMD either refuses or
// returns figures in range (degraded <= raid_disks <= 1920, progress in
// [0, 1] or -1), so no caller can allocate per degraded slot unboundedly.
func FuzzParseMD(f *testing.F) {
	f.Add("raid5", "6", "0", "0", "none", "in_sync")
	f.Add("raid5", "6", "2000000000", "0", "none", "faulty")
	f.Add("raid6", "8", "2", "128", "1024 / 4096", "in_sync,write_mostly")
	f.Add("raid1", "", "1", "", "delayed", "spare")
	f.Add("raid5", "-1", "2e9", "18446744073709551615", "5 / 0", "")
	f.Fuzz(func(t *testing.T, level, raidDisks, degraded, mismatch, syncCompleted, state string) {
		attrs := map[string]string{}
		for k, v := range map[string]string{"level": level, "raid_disks": raidDisks, "degraded": degraded, "mismatch_cnt": mismatch, "sync_completed": syncCompleted} {
			if v != "" {
				attrs[k] = v
			}
		}
		m, err := parseMD(mdDir, attrs, map[string]string{"sda": state})
		if err != nil {
			if !strings.Contains(err.Error(), mdDir) {
				t.Fatalf("error does not name the directory: %v", err)
			}
			return
		}
		if m.RaidDisks < -1 || m.RaidDisks > maxMDDisks || m.Degraded < 0 || m.Degraded > maxMDDisks ||
			(m.RaidDisks >= 0 && m.Degraded > m.RaidDisks) || m.MismatchCnt < 0 {
			t.Fatalf("out of range: %+v", m)
		}
		if p := m.SyncProgress; p != -1 && (p < 0 || p > 1 || math.IsNaN(p)) {
			t.Fatalf("progress %v", p)
		}
		if m.Level != level || m.Members["sda"] != state {
			t.Fatalf("level/state not kept: %+v", m)
		}
	})
}
