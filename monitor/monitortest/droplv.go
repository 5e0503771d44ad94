package monitortest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DropLVs rewrites root/lvm/lvs.json (a real capture's, lvm2 2.03.16's
// format) without the rows whose LV name (without LVM's [] for hidden
// LVs) drop selects, and with the partial flags of the rest cleared
// (lv_health_status "partial", lv_attr health 'p'): a report that leaves
// out sub-LVs the arrays' devices columns still name.
func DropLVs(root string, drop func(name string) bool) error {
	path := filepath.Join(root, "lvm", "lvs.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("drop LVs: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("drop LVs: %s: %w", path, err)
	}
	reports, _ := doc["report"].([]any)
	dropped := 0
	for _, rep := range reports {
		m, _ := rep.(map[string]any)
		rows, _ := m["lv"].([]any)
		var keep []any
		for _, row := range rows {
			r, _ := row.(map[string]any)
			name, _ := r["lv_name"].(string)
			if drop(strings.Trim(name, "[]")) {
				dropped++
				continue
			}
			if r["lv_health_status"] == "partial" {
				r["lv_health_status"] = ""
			}
			if a, _ := r["lv_attr"].(string); len(a) >= 9 && a[8] == 'p' {
				r["lv_attr"] = a[:8] + "-" + a[9:]
			}
			keep = append(keep, r)
		}
		if m != nil {
			m["lv"] = keep
		}
	}
	if dropped == 0 {
		return fmt.Errorf("drop LVs: %s: no row matched", path)
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}
