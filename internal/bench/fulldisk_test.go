package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/smallfs"
)

// smallFS is a tmpfs of size standing in for a full disk (root only).
func smallFS(t *testing.T, size string) string { return smallfs.Mount(t, size, "a full disk") }

// On a disk too small for all of them, --out's files are written whole or
// not at all: no half-written plot or summary is left, summary.json (the
// measurement) is written even when the plots do not fit, the report
// lists exactly the files that are there, and the error names the disk's
// fault.
func TestWriteFilesOnAFullDisk(t *testing.T) {
	set, _ := smallTableSet(t, 4)
	rep, err := RunProbes(context.Background(), ProbeOptions{Set: set, Configs: []ProbeConfig{{IO: IOPread, Advise: AdviseNormal, Parallel: 1}},
		Mix: DefaultMix(), Cache: CacheKeep, Load: Load{Clients: 2, Requests: 40, Warmup: 4}})
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []string{"4k", "12k", "40k"} {
		t.Run(size, func(t *testing.T) {
			dir := smallFS(t, size)
			r := *rep
			r.Files = nil
			err := r.WriteFiles(dir, 0)
			ents, _ := os.ReadDir(dir)
			var there, summaryLists []string
			for _, e := range ents {
				p := filepath.Join(dir, e.Name())
				there = append(there, p)
				b, rerr := os.ReadFile(p)
				if rerr != nil {
					t.Fatal(rerr)
				}
				switch filepath.Ext(p) {
				case ".png":
					if _, derr := png.Decode(bytes.NewReader(b)); derr != nil {
						t.Errorf("%s is left half-written (%d bytes): %v", p, len(b), derr)
					}
				case ".svg":
					if !bytes.HasSuffix(bytes.TrimSpace(b), []byte("</svg>")) {
						t.Errorf("%s is left half-written (%d bytes)", p, len(b))
					}
				case ".json":
					var v struct {
						Files []string `json:"files"`
					}
					if jerr := json.Unmarshal(b, &v); jerr != nil {
						t.Errorf("%s is left half-written (%d bytes): %v", p, len(b), jerr)
					}
					summaryLists = slices.Sorted(slices.Values(v.Files))
				}
			}
			slices.Sort(there)
			// summary.json goes first and is written again without the
			// plots that did not fit: it lists what is there
			if summaryLists != nil && !slices.Equal(summaryLists, there) {
				t.Errorf("summary.json lists %v, the disk holds %v", summaryLists, there)
			}
			listed := slices.Sorted(slices.Values(r.Files))
			if !slices.Equal(there, listed) {
				t.Errorf("the report lists %v, the disk holds %v", listed, there)
			}
			t.Logf("tmpfs of %s: holds %d files; error: %v", size, len(there), err)
			if len(there) < 3 && (err == nil || !strings.Contains(err.Error(), "no space left")) {
				t.Errorf("%d of 3 files written, error %v: want the disk's ENOSPC", len(there), err)
			}
			if size != "4k" && !slices.Contains(there, filepath.Join(dir, "summary.json")) {
				t.Errorf("summary.json not written on a tmpfs of %s (the plots took the room?)", size)
			}
		})
	}
}

// A CSV file (--raw's latencies, the failures) that the disk cannot hold
// is removed, not left cut off mid-line, and Close says so.
func TestCSVSinkOnAFullDisk(t *testing.T) {
	dir := smallFS(t, "4k")
	s := NewCSVSink(filepath.Join(dir, "latencies.csv"), []string{"seq", "latency_ms"})
	for i := 0; i < 2000; i++ {
		s.Write("12345", "0.123")
	}
	err := s.Close()
	if err == nil || !strings.Contains(err.Error(), "no space left") || !strings.Contains(err.Error(), "latencies.csv") {
		t.Fatalf("Close: %v, want the disk's ENOSPC naming the file", err)
	}
	if _, serr := os.Stat(s.Path); !os.IsNotExist(serr) {
		t.Errorf("%s is left behind (%v)", s.Path, serr)
	}
}
