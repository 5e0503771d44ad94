package monitor

import "github.com/tbhost/tbhost/internal/diskstats"

// Rates are one device's activity over an interval, with iostat's formulas
// (internal/diskstats; ../shared/docs/lvm-facts.md).
type Rates = diskstats.Rates
