package bench

// The probe fidelity benchmark's floor: testdata/cloop/cloop.c makes the
// same 4 KiB random reads as the harness and fio from plain pthreads, with
// no runtime and nothing between two reads. Its percentiles are what the
// kernel and the disk give; the harness's and fio's ratios to it are what
// each adds (issue 16: "document what the harness adds").

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/execx"
)

// cLoop is a built cloop and the offset files it has been given.
type cLoop struct {
	bin     string
	dir     string
	offsets map[int]string // n -> file of randomOffsets(n, fidelityFile/4096)
}

// buildCLoop compiles testdata/cloop/cloop.c with cc; the error says what
// is missing (the benchmark then prints the reason instead of the floor).
func buildCLoop(tb testing.TB) (*cLoop, error) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		return nil, fmt.Errorf("no C compiler (cc; make deps installs gcc)")
	}
	dir := tb.TempDir()
	bin := filepath.Join(dir, "cloop")
	if _, err := (execx.Exec{}).Run(context.Background(), cc, "-O2", "-pthread", "-o", bin, filepath.Join("testdata", "cloop", "cloop.c")); err != nil {
		return nil, fmt.Errorf("building testdata/cloop/cloop.c: %w", err)
	}
	return &cLoop{bin: bin, dir: dir, offsets: map[int]string{}}, nil
}

// writeOffsets writes offsets as little-endian int64s, cloop's input.
func writeOffsets(path string, offsets []int64) error {
	buf := make([]byte, 8*len(offsets))
	for i, o := range offsets {
		binary.LittleEndian.PutUint64(buf[8*i:], uint64(o))
	}
	return os.WriteFile(path, buf, 0o644)
}

// cLoopResult is one cloop run: the percentiles, the sum of every byte read.
type cLoopResult struct {
	pcts
	sum uint64
}

// run reads offsets of file with clients threads (how: pread or mmap).
func (c *cLoop) run(file, offsetsFile string, clients int, how IO) (cLoopResult, error) {
	res, err := (execx.Exec{}).Run(context.Background(), c.bin, file, offsetsFile, strconv.Itoa(clients), string(how))
	if err != nil {
		return cLoopResult{}, err
	}
	f := strings.Fields(string(res.Stdout))
	if len(f) != 7 {
		return cLoopResult{}, fmt.Errorf("cloop printed %q, want 7 fields", res.Stdout)
	}
	// latencies in ns, but field 5: the sum of the bytes read
	sum, err := strconv.ParseUint(f[5], 10, 64)
	var v [7]float64
	for i := 0; i < len(f) && err == nil; i++ {
		if i != 5 {
			v[i], err = strconv.ParseFloat(f[i], 64)
		}
	}
	if err != nil {
		return cLoopResult{}, fmt.Errorf("cloop printed %q: %w", res.Stdout, err)
	}
	ms := func(ns float64) float64 { return ns / 1e6 }
	return cLoopResult{
		pcts: pcts{q: [3]float64{ms(v[0]), ms(v[1]), ms(v[3])}, p998: ms(v[2]), p9995: ms(v[4]), mean: ms(v[6])},
		sum:  sum,
	}, nil
}

// randRead is harnessRandRead's reads through cloop: the same n offsets of
// file, the same clients, the same cache state (cold: evicted first).
func (c *cLoop) randRead(tb testing.TB, file string, how IO, n int, cold bool) pcts {
	path, ok := c.offsets[n]
	if !ok {
		path = filepath.Join(c.dir, fmt.Sprintf("offsets-%d", n))
		if err := writeOffsets(path, randomOffsets(n, fidelityFile/4096)); err != nil {
			tb.Fatal(err)
		}
		c.offsets[n] = path
	}
	if cold {
		if err := evict(file); err != nil {
			tb.Fatal(err)
		}
	}
	r, err := c.run(file, path, fidelityClients, how)
	if err != nil {
		tb.Fatal(err)
	}
	return r.pcts
}

// cloop reads exactly the given offsets, pread and mmap alike: the sum of
// the bytes it read is the sum of those pages' bytes; an offset past the
// file is refused.
func TestCLoopReadsTheGivenOffsets(t *testing.T) {
	c, err := buildCLoop(t)
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "data")
	data := make([]byte, 64*4096)
	for i := range data {
		data[i] = byte(i*7 + i/4096)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	offsets := randomOffsets(48, 64)
	var want uint64
	for _, o := range offsets {
		for _, b := range data[o : o+4096] {
			want += uint64(b)
		}
	}
	offs := filepath.Join(dir, "offsets")
	if err := writeOffsets(offs, offsets); err != nil {
		t.Fatal(err)
	}
	for _, how := range []IO{IOPread, IOMmap} {
		r, err := c.run(file, offs, 12, how)
		if err != nil {
			t.Fatal(err)
		}
		if r.sum != want {
			t.Errorf("%s: cloop's bytes sum to %d, the offsets' pages to %d", how, r.sum, want)
		}
		if r.q[0] <= 0 || r.q[0] > r.q[1] || r.q[1] > r.q[2] {
			t.Errorf("%s: percentiles %v not positive and ordered", how, r.q)
		}
	}
	if err := writeOffsets(offs, []int64{0, 63 * 4096, 64 * 4096}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.run(file, offs, 1, IOPread); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("an offset past the file: %v, want a refusal naming it", err)
	}
}
