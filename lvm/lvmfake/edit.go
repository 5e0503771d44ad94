package lvmfake

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Edit sets one field of one LV in a recorded `lvs --reportformat json`
// report; LV is its lv_name without the brackets of a hidden LV.
type Edit struct{ LV, Field, Value string }

// EditedReport is a recorded lvs report with edits applied: a report as an
// lvm2 tbhost does not know, or a broken one, could write it. An edit that
// names no LV of the report is an error (a test must not pass on a report
// it did not change).
func EditedReport(report []byte, edits ...Edit) ([]byte, error) {
	var doc struct {
		Report []map[string][]map[string]any `json:"report"`
	}
	if err := json.Unmarshal(report, &doc); err != nil {
		return nil, fmt.Errorf("recorded lvs report: %w", err)
	}
	for _, e := range edits {
		edited := 0
		for _, rep := range doc.Report {
			for _, row := range rep["lv"] {
				if name, _ := row["lv_name"].(string); strings.Trim(name, "[]") == e.LV {
					row[e.Field] = e.Value
					edited++
				}
			}
		}
		if edited == 0 {
			return nil, fmt.Errorf("recorded lvs report: no LV %q to edit", e.LV)
		}
	}
	return json.Marshal(doc)
}
