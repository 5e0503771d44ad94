package integrity

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stateSeeds are state files as a scrub writes them, and broken ones.
var stateSeeds = []string{
	`{"version":1,"identity":"u","pass":2,"images":{"tables_rimage_0":{"path":"/x","size":1048576,"offset":524288},"tables_rimage_1":{"path":"/y","size":1048576,"offset":1048576,"done":true,"bad_blocks":[4096]}},"reading_images":["tables_rimage_0"],"reading_disks":["/dev/sda"],"pid":42,"recent_runs":[{"seconds":7200,"bytes":1000000000,"rate_cap":104857600}],"updated":"2026-11-30T01:00:00Z"}`,
	`{"version":1,"identity":"u","images":{"tables_rimage_0":null}}`,
	`{"version":1,"identity":"u","images":{"tables_rimage_0":{"size":1048576,"offset":-4096}}}`,
	`{"version":1,"identity":"u","images":{"tables_rimage_0":{"size":1048576,"offset":1000}}}`,
	`{"version":1,"identity":"u","images":{"tables_rimage_0":{"size":1048576,"offset":4096,"done":true}}}`,
	`{"version":1,"identity":"u","images":{"tables_rimage_0":{"size":1048576,"offset":4096,"bad_blocks":[8192]}}}`,
	`{"reading_disks":["/dev/sda","../../etc/passwd","/dev/sd a","/dev/","/dev/dm-27"],"updated":"2026-11-30T01:00:30Z"}`,
	`{"recent_runs":[{"seconds":1e300,"bytes":9223372036854775807,"rate_cap":0},{"seconds":1,"bytes":9223372036854775807,"rate_cap":0}]}`,
	`[]`, `null`, `{"images":{}}`,
}

// A state file is outside input: loadScrubState either refuses it or
// returns a state whose every position lies inside its image on a block
// boundary (where O_DIRECT may read), done exactly at the end, and from
// which the forecast is finite and non-negative.
func FuzzLoadScrubState(f *testing.F) {
	for _, s := range stateSeeds {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	targets := []ScrubTarget{{Name: "tables_rimage_0", Path: "/x"}, {Name: "tables_rimage_1", Path: "/y"}}
	sizes := map[string]int64{"tables_rimage_0": 1 << 20, "tables_rimage_1": 1 << 20}
	now := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "state.json")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := loadScrubState(ScrubOptions{Targets: targets, Identity: "u", StatePath: p, BlockSize: 4096}, sizes, now)
		if err != nil {
			return
		}
		if len(st.Images) != 2 || st.Pass < 1 {
			t.Fatalf("images %d, pass %d", len(st.Images), st.Pass)
		}
		in := forecastInput{Rate: 100 << 20, Parallel: 2, Slice: time.Hour, Runs: st.Runs}
		for name, is := range st.Images {
			if is == nil || is.Offset < 0 || is.Offset > is.Size || is.Offset%4096 != 0 && is.Offset != is.Size || is.Done != (is.Offset == is.Size) {
				t.Fatalf("%s accepted: %+v", name, is)
			}
			for _, b := range is.BadBlocks {
				if b < 0 || b >= is.Offset {
					t.Fatalf("%s: bad block %d outside what was read (%d)", name, b, is.Offset)
				}
			}
			in.Sizes = append(in.Sizes, is.Size)
			if !is.Done {
				in.Left += is.Size - is.Offset
			}
		}
		fc := forecastScrub(in)
		if fc.Rate < 1 || fc.PassSeconds < 0 || fc.LeftSeconds < 0 || fc.PassNights < 0 || fc.LeftBytes > fc.PassBytes {
			t.Fatalf("forecast from an accepted state: %+v", fc)
		}
	})
}

// ReadScrubActivity hands the monitor only plain /dev/<name> disks and
// image names, never more than a RAID LV can have.
func FuzzReadScrubActivity(f *testing.F) {
	for _, s := range stateSeeds {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	now := time.Date(2026, 11, 30, 1, 0, 30, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "state.json")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		a, err := ReadScrubActivity(p, now)
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("error %v does not name the file", err)
			}
			return
		}
		if !a.Running && (len(a.Disks) > 0 || len(a.Images) > 0) {
			t.Fatalf("not running but names disks: %+v", a)
		}
		if len(a.Disks) > maxScrubImages || len(a.Images) > maxScrubImages || a.PID < 0 {
			t.Fatalf("%+v", a)
		}
		for _, d := range a.Disks {
			name, ok := strings.CutPrefix(d, "/dev/")
			if !ok || !plainName(name) {
				t.Fatalf("disk %q handed out", d)
			}
		}
		if _, err := json.Marshal(a); err != nil {
			t.Fatal(err)
		}
	})
}

// A state file no scrub wrote is refused before anything is read: a nil
// entry crashed the scrub (nil pointer), a negative or unaligned offset
// made every O_DIRECT read fail and be reported as bad blocks.
func TestScrubRefusesAStateNoScrubWrote(t *testing.T) {
	dir := t.TempDir()
	targets := imageFiles(t, dir, 1<<20)
	for _, body := range []string{
		`{"version":1,"identity":"u","pass":1,"images":{"tables_rimage_0":null}}`,
		`{"version":1,"identity":"u","pass":1,"images":{"tables_rimage_0":{"size":1048576,"offset":-4096}}}`,
		`{"version":1,"identity":"u","pass":1,"images":{"tables_rimage_0":{"size":1048576,"offset":1000}}}`,
		`{"version":1,"identity":"u","pass":1,"images":{"tables_rimage_0":{"size":1048576,"offset":4096,"done":true}}}`,
	} {
		state := filepath.Join(dir, "s.json")
		if err := os.WriteFile(state, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		var read int64
		res, err := Scrub(t.Context(), ScrubOptions{Targets: targets, Identity: "u", StatePath: state, Events: func(e ScrubEvent) { read += e.Bytes }})
		if !errors.Is(err, ErrStateInvalid) || read != 0 || res.BadBlockCount() != 0 {
			t.Errorf("%s: err %v, read %d, bad %d: want a refusal before any read", body, err, read, res.BadBlockCount())
		}
		if after, _ := os.ReadFile(state); string(after) != body {
			t.Errorf("%s: a refused state was rewritten", body)
		}
	}
}
