package lvm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The lvm commands that integrity's --syncaction runs, built here so that
// every lvm command line tbhost runs comes from package lvm.

// CheckVGLVNames refuses a VG or LV name lvm would not create, or would
// read as an option or a path, with the plan validator's rules.
func CheckVGLVNames(vg, lv string) error {
	if why := CheckVGName(vg); why != "" {
		return fmt.Errorf("VG name %q: %s", vg, why)
	}
	if why := CheckLVName(lv); why != "" {
		return fmt.Errorf("LV name %q: %s", lv, why)
	}
	return nil
}

// SyncActionCheckArgv starts the kernel's scrub of a RAID LV. There is no
// builder for "repair": LVM refuses it on integrity LVs, and "check"
// already rewrites blocks whose integrity checksum fails.
func SyncActionCheckArgv(vg, lv string) []string {
	return []string{"lvm", "lvchange", "--syncaction", "check", vg + "/" + lv}
}

// DMName is the device-mapper name LVM gives vg/lv: dashes in each part
// doubled, the parts joined by one dash ("vg-hdd", "tables_rimage_0" ->
// "vg--hdd-tables_rimage_0").
func DMName(vg, lv string) string {
	return strings.ReplaceAll(vg, "-", "--") + "-" + strings.ReplaceAll(lv, "-", "--")
}

// StopSyncActionArgv stops a running check of a RAID LV with dm-raid's own
// "idle" message. lvchange has no way to stop one, and any lvchange that
// changes the LV reloads its table (suspend and resume), which ends a check
// too but can hang the array in Debian 12's 6.1 kernel (docs/integrity.md).
// Never send it while a rebuild (recover) or resync runs: it stops those.
func StopSyncActionArgv(vg, lv string) []string {
	return []string{"dmsetup", "message", DMName(vg, lv), "0", "idle"}
}

// SetMaxRecoveryRateArgv sets a RAID LV's per-device recovery (and check)
// rate cap in KiB/s; 0 removes the cap.
func SetMaxRecoveryRateArgv(vg, lv string, kibPerSec int64) []string {
	return []string{"lvm", "lvchange", "--maxrecoveryrate", strconv.FormatInt(kibPerSec, 10), vg + "/" + lv}
}

// MaxRecoveryRateArgv reads the cap (lvs raid_max_recovery_rate, KiB/s).
func MaxRecoveryRateArgv(vg, lv string) []string {
	return []string{"lvm", "lvs", "--reportformat", "json", "--units", "b", "--nosuffix", "-o", "raid_max_recovery_rate", vg + "/" + lv}
}

// MaxRecoveryRateLimit is far above any disk (1 TiB/s in KiB/s): a value
// beyond it is not a rate lvm reported.
const MaxRecoveryRateLimit = 1 << 30

// ParseMaxRecoveryRate reads the output of MaxRecoveryRateArgv: the cap in
// KiB/s, 0 when there is none.
func ParseMaxRecoveryRate(stdout []byte) (int64, error) {
	rows, err := ParseReport(stdout, "lv")
	if err != nil {
		return 0, fmt.Errorf("lvs raid_max_recovery_rate: %w", err)
	}
	if len(rows) != 1 {
		return 0, fmt.Errorf("lvs raid_max_recovery_rate: %d rows, want 1", len(rows))
	}
	v, ok := rows[0]["raid_max_recovery_rate"]
	if !ok {
		return 0, errors.New("lvs raid_max_recovery_rate: no such field in the report")
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > MaxRecoveryRateLimit {
		return 0, fmt.Errorf("lvs raid_max_recovery_rate %q: not a rate in KiB/s", v)
	}
	return n, nil
}
