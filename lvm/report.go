// Package lvm plans, applies and inspects the tablebase arrays with LVM:
// RAID 5 + dm-integrity over the HDDs, RAID 0 over NVMe for the prefix store.
//
// This file reads LVM's reports (lvs, pvs, vgs) as JSON. Every call goes
// through an execx.Runner (LC_ALL=C, a timeout, typed errors), with
// --reportformat json --units b --nosuffix so sizes are plain byte counts.
// It accepts lvm2 2.03.16's format (bookworm: every value a string) and later
// ones (typed values with json_std, a top-level "log" array from 2.03.26).
package lvm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/tbhost/tbhost/internal/execx"
)

// LVFields are the lvs columns tbhost asks for (all exist in lvm2 2.03.16).
var lvFields = []string{
	"lv_name", "vg_name", "lv_uuid", "lv_attr", "lv_size", "lv_health_status",
	"lv_kernel_major", "lv_kernel_minor",
	"segtype", "stripes", "data_stripes", "stripe_size", "devices", "seg_start_pe", "seg_size_pe",
	"sync_percent", "raid_sync_action", "raid_mismatch_count",
	"integritymismatches", "raidintegritymode", "raidintegrityblocksize",
}

var pvFields = []string{"pv_name", "vg_name", "pv_uuid", "pv_size", "pv_free", "pv_pe_count", "pv_pe_alloc_count", "dev_size", "pv_attr"}

var vgFields = []string{"vg_name", "vg_uuid", "vg_size", "vg_free", "vg_extent_size", "vg_extent_count", "vg_free_count", "pv_count", "lv_count", "vg_attr"}

// Client runs LVM's reporting commands.
type Client struct {
	Runner execx.Runner
}

// ErrNotFound is returned (wrapped) when LVM says a VG or LV does not exist.
var ErrNotFound = errors.New("not found")

// ErrNeedsRoot: lvm refused to report because it does not run as root
// (lvm2 2.03.16 warns "Running as a non-root user" and cannot open its
// lock files; seen in the lab, exit 5). Monitoring users (nagios, NRPE)
// meet it first.
var ErrNeedsRoot = errors.New("lvm needs root")

// ErrBadReport is returned (wrapped) when LVM's answer is not a JSON report
// tbhost can read (empty, truncated, not JSON, no "report" array): LVM
// answered nothing usable, so callers treat it as "could not run" (exit 3),
// not as a verdict on the arrays.
var ErrBadReport = errors.New("parse JSON report")

// Extent is one entry of the devices column: "tables_rimage_0(0)" or "/dev/sda(1)".
type Extent struct {
	Name  string // a sub-LV name, or a device path such as /dev/sda
	Start int64  // first extent used on it
}

// IsDevice reports whether the extent lies on a PV (a device path) rather than a sub-LV.
func (e Extent) IsDevice() bool { return strings.HasPrefix(e.Name, "/") }

// Segment is one segment of an LV (lvs prints a row per segment).
type Segment struct {
	Type        string // raid5, raid0, integrity, linear, ...
	Stripes     int    // devices in the segment, parity included
	DataStripes int    // data devices (raid5 over 6 disks: 5)
	StripeSize  int64  // bytes
	StartPE     int64
	SizePE      int64
	Devices     []Extent
}

// LV is one logical volume, hidden sub-LVs (rimage, rmeta, imeta, iorig) included.
type LV struct {
	Name   string // without the [] LVM puts around hidden LVs
	VG     string
	UUID   string
	Hidden bool
	Attr   string
	Size   int64
	// Health is lv_health_status: "" when healthy.
	Health      string
	KernelMajor int // -1 when not active
	KernelMinor int
	Segments    []Segment
	// SyncPercent is -1 when the LV has no sync state.
	SyncPercent       float64
	SyncAction        string // idle, resync, recover, check, repair, ...
	RaidMismatchCount int64  // -1 when not a raid LV
	// IntegrityMismatches is -1 when the LV has no integrity layer.
	IntegrityMismatches int64
	IntegrityMode       string // journal or bitmap; "" without integrity
	IntegrityBlockSize  int    // -1 without integrity
	// BadValues are the judged counters lvs reported in a form tbhost
	// cannot read. Their fields above hold -1, which alone would read as
	// "no such counter": Findings makes each one a finding (not OK).
	BadValues []BadValue
}

// BadValue is a counter health is judged on (integritymismatches,
// raid_mismatch_count, sync_percent) that tbhost cannot read: not a count,
// not a percent, or empty where an active LV reports it.
type BadValue struct {
	Field string // the lvs column
	Value string // as lvs reported it
	Why   string // "not a count"
}

// FullName is "vg/lv".
func (lv LV) FullName() string { return lv.VG + "/" + lv.Name }

// SegType is the type of the first segment.
func (lv LV) SegType() string {
	if len(lv.Segments) == 0 {
		return ""
	}
	return lv.Segments[0].Type
}

// Problems are the texts of the LV's own Findings (health, the health char
// of lv_attr, counters tbhost cannot read, integrity and raid mismatches).
// Empty means healthy. A sync in progress is not a problem here. Decide on
// Findings' codes, not on these.
func (lv LV) Problems() []string { return Texts(lv.Findings()) }

// PV is one physical volume.
type PV struct {
	Name    string // /dev/sda
	VG      string // "" when in no VG
	UUID    string
	Size    int64
	Free    int64
	PECount int64
	PEAlloc int64
	DevSize int64
	Attr    string
}

// VG is one volume group.
type VG struct {
	Name        string
	UUID        string
	Size        int64
	Free        int64
	ExtentSize  int64
	ExtentCount int64
	FreeCount   int64
	PVCount     int
	LVCount     int
	Attr        string
}

// LVs reports LVs with their hidden sub-LVs (lvs -a). Names select VGs or
// VG/LV pairs; none means all. A sub-LV appears once, with all its segments.
// Note: a VG/LV name selects that LV alone; lvm2 2.03.16 does not add its
// hidden sub-LVs even with -a (seen in the VM lab), so SubLVs and
// PhysicalDevices need the whole VG: ask for "vg", then Find "vg/lv".
func (c Client) LVs(ctx context.Context, names ...string) ([]LV, error) {
	rows, err := c.report(ctx, "lvs", "lv", lvFields, append([]string{"-a"}, names...))
	if err != nil {
		return nil, err
	}
	return ParseLVRows(rows)
}

// PVs reports physical volumes.
func (c Client) PVs(ctx context.Context, names ...string) ([]PV, error) {
	rows, err := c.report(ctx, "pvs", "pv", pvFields, names)
	if err != nil {
		return nil, err
	}
	return ParsePVRows(rows), nil
}

// ParsePVRows turns pvs rows into PVs, in report order.
func ParsePVRows(rows []map[string]string) []PV {
	out := make([]PV, 0, len(rows))
	for _, r := range rows {
		out = append(out, PV{
			Name: r["pv_name"], VG: r["vg_name"], UUID: r["pv_uuid"],
			Size: atoi64(r["pv_size"]), Free: atoi64(r["pv_free"]),
			PECount: atoi64(r["pv_pe_count"]), PEAlloc: atoi64(r["pv_pe_alloc_count"]),
			DevSize: atoi64(r["dev_size"]), Attr: r["pv_attr"],
		})
	}
	return out
}

// VGs reports volume groups.
func (c Client) VGs(ctx context.Context, names ...string) ([]VG, error) {
	rows, err := c.report(ctx, "vgs", "vg", vgFields, names)
	if err != nil {
		return nil, err
	}
	return ParseVGRows(rows), nil
}

// ParseVGRows turns vgs rows into VGs, in report order.
func ParseVGRows(rows []map[string]string) []VG {
	out := make([]VG, 0, len(rows))
	for _, r := range rows {
		out = append(out, VG{
			Name: r["vg_name"], UUID: r["vg_uuid"], Size: atoi64(r["vg_size"]), Free: atoi64(r["vg_free"]),
			ExtentSize: atoi64(r["vg_extent_size"]), ExtentCount: atoi64(r["vg_extent_count"]),
			FreeCount: atoi64(r["vg_free_count"]), PVCount: int(atoi64(r["pv_count"])),
			LVCount: int(atoi64(r["lv_count"])), Attr: r["vg_attr"],
		})
	}
	return out
}

// LVsArgv is the command line Client.LVs runs for names: other packages'
// tests record replies for it.
func LVsArgv(names ...string) []string {
	return reportArgv("lvs", lvFields, append([]string{"-a"}, names...))
}

// PVsArgv is the command line PVs runs (for tests, and for saving the
// report into a snapshot).
func PVsArgv(names ...string) []string {
	return reportArgv("pvs", pvFields, names)
}

// VGsArgv is the command line VGs runs (for tests, and for recording
// reports in the VM lab).
func VGsArgv(names ...string) []string {
	return reportArgv("vgs", vgFields, names)
}

func reportArgv(cmd string, fields, extra []string) []string {
	return append([]string{"lvm", cmd, "--reportformat", "json", "--units", "b", "--nosuffix",
		"-o", strings.Join(fields, ",")}, extra...)
}

func (c Client) report(ctx context.Context, cmd, key string, fields, extra []string) ([]map[string]string, error) {
	argv := reportArgv(cmd, fields, extra)
	res, err := c.Runner.Run(ctx, argv...)
	if err != nil {
		var ce *execx.CommandError
		// before "not found": without root lvm may not see the VG's
		// disks and say it is not found
		if errors.As(err, &ce) && nonRootMessage(ce.Stderr) {
			return nil, needsRootError(cmd, ce.Stderr)
		}
		if errors.As(err, &ce) && notFoundMessage(ce.Stderr) {
			return nil, fmt.Errorf("%s: %w: %w", cmd, ErrNotFound, err)
		}
		return nil, fmt.Errorf("lvm %s: %w", cmd, err)
	}
	if stderr := string(res.Stderr); nonRootMessage(stderr) {
		// an lvm that answers a non-root user anyway cannot reach
		// device-mapper (/dev/mapper/control is root's): no sync, health
		// or mismatch counts, perhaps no LVs; a check must not judge that
		return nil, needsRootError(cmd, stderr)
	}
	rows, err := ParseReport(res.Stdout, key)
	if err != nil {
		return nil, fmt.Errorf("lvm %s: %w", cmd, err)
	}
	return rows, nil
}

// needsRootError is ErrNeedsRoot for lvm cmd, with what failed and the fix.
func needsRootError(cmd, stderr string) error {
	return fmt.Errorf("lvm %s: %w: tbhost runs as uid %d and lvm said %q; run tbhost as root (a monitoring user such as nagios runs it through sudo, with a sudoers rule for /usr/bin/tbhost)",
		cmd, ErrNeedsRoot, os.Geteuid(), problemLine(stderr))
}

// nonRootMessage reports whether lvm's stderr says it ran without root.
func nonRootMessage(stderr string) bool {
	return strings.Contains(stderr, "Running as a non-root user")
}

// problemLine is what failed in lvm's stderr from a non-root run: the
// last line that says "Permission denied" ("/run/lock/lvm/P_global:aux:
// open failed: Permission denied"; a named VG adds "Can't get lock" and
// "Cannot process volume group" after it), else the last line other than
// the non-root warning.
func problemLine(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := ""
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if strings.Contains(l, "Permission denied") {
			return l
		}
		if last == "" && l != "" && !nonRootMessage(l) {
			last = l
		}
	}
	if last == "" {
		return strings.TrimSpace(stderr)
	}
	return last
}

func notFoundMessage(stderr string) bool {
	s := strings.ToLower(stderr)
	return strings.Contains(s, "not found") || strings.Contains(s, "failed to find logical volume")
}

// ParseReport decodes LVM's JSON report and returns the rows under key
// ("lv", "pv", "vg", "seg", ...) of every report object, each value as a string.
func ParseReport(data []byte, key string) ([]map[string]string, error) {
	var doc struct {
		Report []map[string][]map[string]any `json:"report"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadReport, err)
	}
	if doc.Report == nil {
		return nil, fmt.Errorf("%w: no \"report\" array", ErrBadReport)
	}
	var rows []map[string]string
	for _, rep := range doc.Report {
		for _, raw := range rep[key] {
			row := make(map[string]string, len(raw))
			for k, v := range raw {
				row[k] = stringify(v)
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

func stringify(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(t)
	default:
		b, _ := json.Marshal(t)
		return string(b)
	}
}

// ParseLVRows turns lvs rows (one per segment) into LVs in report order.
func ParseLVRows(rows []map[string]string) ([]LV, error) {
	var out []LV
	index := map[string]int{}
	for _, r := range rows {
		name := r["lv_name"]
		hidden := strings.HasPrefix(name, "[") && strings.HasSuffix(name, "]")
		name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
		seg := Segment{
			Type:        r["segtype"],
			Stripes:     int(atoi64(r["stripes"])),
			DataStripes: int(atoi64(r["data_stripes"])),
			StripeSize:  atoi64(r["stripe_size"]),
			StartPE:     atoi64(r["seg_start_pe"]),
			SizePE:      atoi64(r["seg_size_pe"]),
			Devices:     ParseDevices(r["devices"]),
		}
		key := r["vg_name"] + "/" + name
		if i, ok := index[key]; ok {
			out[i].Segments = append(out[i].Segments, seg)
			continue
		}
		lv := LV{
			Name: name, VG: r["vg_name"], UUID: r["lv_uuid"], Hidden: hidden, Attr: r["lv_attr"],
			Size: atoi64(r["lv_size"]), Health: r["lv_health_status"],
			KernelMajor: intOr(r["lv_kernel_major"], -1), KernelMinor: intOr(r["lv_kernel_minor"], -1),
			SyncAction:         r["raid_sync_action"],
			IntegrityMode:      r["raidintegritymode"],
			IntegrityBlockSize: intOr(r["raidintegrityblocksize"], -1),
		}
		lv.readJudgedCounters(r)
		if _, ok := r["segtype"]; ok {
			lv.Segments = []Segment{seg}
		}
		index[key] = len(out)
		out = append(out, lv)
	}
	return out, nil
}

// ParseDevices splits lvs's devices column: "a(0),b(12)" -> [{a 0} {b 12}].
func ParseDevices(s string) []Extent {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var out []Extent
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		e := Extent{Name: part}
		if i := strings.LastIndex(part, "("); i > 0 && strings.HasSuffix(part, ")") {
			e.Name = part[:i]
			e.Start = atoi64(part[i+1 : len(part)-1])
		}
		out = append(out, e)
	}
	return out
}

// SubLVs returns the hidden sub-LVs of top whose names start with
// "<top>_<kind>_" (kind: rimage, rmeta), sorted by image index; the
// integrity layers' own _imeta/_iorig sub-LVs are not included.
func SubLVs(all []LV, top LV, kind string) []LV {
	prefix := top.Name + "_" + kind + "_"
	var out []LV
	for _, lv := range all {
		if lv.VG != top.VG || !strings.HasPrefix(lv.Name, prefix) {
			continue
		}
		if _, err := strconv.Atoi(strings.TrimPrefix(lv.Name, prefix)); err != nil {
			continue // tables_rimage_0_imeta, tables_rimage_0_iorig
		}
		out = append(out, lv)
	}
	sort.Slice(out, func(i, j int) bool { return imageIndex(out[i].Name) < imageIndex(out[j].Name) })
	return out
}

func imageIndex(name string) int {
	i := strings.LastIndex(name, "_")
	n, _ := strconv.Atoi(name[i+1:])
	return n
}

// Find returns the LV vg/name from all.
func Find(all []LV, vg, name string) (LV, bool) {
	for _, lv := range all {
		if lv.VG == vg && lv.Name == name {
			return lv, true
		}
	}
	return LV{}, false
}

// PhysicalDevices follows an LV's segments down through sub-LVs to the PVs
// it uses, in order, without duplicates: for tables_rimage_0 on integrity
// that is the device under tables_rimage_0_iorig.
func PhysicalDevices(all []LV, lv LV) []string {
	var out []string
	seen := map[string]bool{}
	walkDevices(all, lv, func(_ LV, e Extent, _ bool) {
		if e.IsDevice() && !seen[e.Name] {
			seen[e.Name] = true
			out = append(out, e.Name)
		}
	})
	return out
}

// walkDevices calls visit for every devices entry of lv's segments and,
// depth first, of the sub-LVs they name, each sub-LV once (a crafted report
// may reference one many times, or in a loop) and at most 16 deep: in is
// the LV whose devices column holds e, listed whether e names a sub-LV the
// report has (false for a PV path, "[unknown]" and a sub-LV it lacks).
func walkDevices(all []LV, lv LV, visit func(in LV, e Extent, listed bool)) {
	visited := map[string]bool{}
	var walk func(LV, int)
	walk = func(l LV, depth int) {
		if depth > 16 || visited[l.Name] {
			return
		}
		visited[l.Name] = true
		for _, s := range l.Segments {
			for _, e := range s.Devices {
				var sub LV
				listed := false
				if !e.IsDevice() {
					sub, listed = Find(all, l.VG, e.Name)
				}
				visit(l, e, listed)
				if listed {
					walk(sub, depth+1)
				}
			}
		}
	}
	walk(lv, 0)
}

// readJudgedCounters reads the counters health is judged on strictly. The
// lenient int64Or turns what it cannot read into its default, here -1,
// which means "no such counter": a report tbhost does not understand
// ("abc", "-1", 2^64 wrapped to a negative) passed as healthy. An empty
// value is "not reported" (-1) where LVM leaves it empty on purpose
// (recorded reports: an LV without integrity, raid0 or a non-raid LV
// without sync, an inactive LV, a column not asked for), and bad elsewhere.
func (lv *LV) readJudgedCounters(r map[string]string) {
	active := reportsKernelStatus(r["lv_attr"])
	redundant := isRedundantRAID(r["segtype"])
	withIntegrity := r["segtype"] == "integrity" || r["raidintegritymode"] != ""
	lv.SyncPercent = lv.judgedPercent(r, "sync_percent", active && redundant)
	lv.RaidMismatchCount = lv.judgedCount(r, "raid_mismatch_count", active && redundant)
	lv.IntegrityMismatches = lv.judgedCount(r, "integritymismatches", active && withIntegrity)
}

// judgedCount reads a counter: a decimal integer from 0 to MaxInt64, or
// -1 when not reported. Anything else is recorded in BadValues.
func (lv *LV) judgedCount(r map[string]string, field string, expected bool) int64 {
	raw, s, ok := lv.reported(r, field, expected)
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(s, 10, 64) // no float fallback: 2^64 must not wrap to a negative count
	if err != nil || n < 0 {
		lv.badValue(field, raw, "not a count")
		return -1
	}
	return n
}

// judgedPercent reads a percent from 0 to 100, or -1 when not reported.
// Anything else is recorded in BadValues.
func (lv *LV) judgedPercent(r map[string]string, field string, expected bool) float64 {
	raw, s, ok := lv.reported(r, field, expected)
	if !ok {
		return -1
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f >= 0 && f <= 100) { // also NaN
		lv.badValue(field, raw, "not a percent from 0 to 100")
		return -1
	}
	return f
}

// reported returns field's value as lvs gave it and trimmed; ok is false
// when it is empty: "not reported", recorded in BadValues where expected
// (an active LV that reports the field).
func (lv *LV) reported(r map[string]string, field string, expected bool) (raw, trimmed string, ok bool) {
	raw, asked := r[field]
	trimmed = strings.TrimSpace(raw)
	if trimmed == "" {
		if asked && expected {
			lv.badValue(field, raw, "empty where an active LV reports it")
		}
		return raw, "", false
	}
	return raw, trimmed, true
}

func (lv *LV) badValue(field, raw, why string) {
	lv.BadValues = append(lv.BadValues, BadValue{Field: field, Value: raw, Why: why})
}

// reportsKernelStatus reports whether lv_attr says the LV is active (char
// 5 'a'): only then does LVM read the counters from the kernel. An attr
// too short to tell (a report without the column) expects nothing.
func reportsKernelStatus(attr string) bool { return len(attr) >= 5 && attr[4] == 'a' }

// isRedundantRAID reports whether segtype is a RAID level with a sync
// state (raid1, raid4, raid5*, raid6*, raid10); raid0 has none and LVM
// leaves its sync_percent empty.
func isRedundantRAID(segtype string) bool {
	return strings.HasPrefix(segtype, "raid") && !strings.HasPrefix(segtype, "raid0")
}

func atoi64(s string) int64 { return int64Or(s, 0) }

func int64Or(s string, def int64) int64 {
	s = strings.TrimSpace(s)
	if s == "" {
		return def
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return int64(f)
	}
	return def
}

func intOr(s string, def int) int { return int(int64Or(s, int64(def))) }
