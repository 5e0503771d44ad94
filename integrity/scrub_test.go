package integrity

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/diskstats"
)

// imageFiles writes regular files standing in for the rimage devices.
func imageFiles(t *testing.T, dir string, sizes ...int64) []ScrubTarget {
	t.Helper()
	var out []ScrubTarget
	for i, sz := range sizes {
		p := filepath.Join(dir, fmt.Sprintf("img%d", i))
		b := make([]byte, sz)
		for j := range b {
			b[j] = byte(j*13 + i)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, ScrubTarget{Name: fmt.Sprintf("tables_rimage_%d", i), Path: p, Disks: []string{"/dev/sd" + string(rune('a'+i))}})
	}
	return out
}

func TestScrubFullPassDirectAndBuffered(t *testing.T) {
	for _, direct := range []bool{true, false} {
		t.Run(fmt.Sprintf("direct=%v", direct), func(t *testing.T) {
			dir := t.TempDir()
			targets := imageFiles(t, dir, 10<<20, 3<<20+4096, 512*1024) // not chunk multiples
			state := filepath.Join(dir, "scrub.state")
			var events []ScrubEvent
			var mu sync.Mutex
			res, err := Scrub(context.Background(), ScrubOptions{Targets: targets, Identity: "uuid-1", StatePath: state, Direct: direct, Parallel: 2,
				Events: func(e ScrubEvent) { mu.Lock(); events = append(events, e); mu.Unlock() }})
			if err != nil {
				t.Fatal(err)
			}
			if !res.PassCompleted || res.Pass != 1 || res.Bytes != 10<<20+3<<20+4096+512*1024 {
				t.Fatalf("%+v", res)
			}
			for _, im := range res.Images {
				if !im.Done || im.BytesRead != im.Size || im.End != im.Size || len(im.BadBlocks) != 0 {
					t.Errorf("%+v", im)
				}
				if direct && !im.Direct && im.Note == "" {
					t.Errorf("%s: O_DIRECT silently not used", im.Name)
				}
				if !direct && im.Direct {
					t.Errorf("%s: direct without being asked", im.Name)
				}
			}
			var st ScrubState
			if _, err := readJSON(state, &st); err != nil {
				t.Fatal(err)
			}
			if len(st.Passes) != 1 || st.Passes[0].Pass != 1 || st.Pass != 2 || st.Passes[0].Completed.IsZero() {
				t.Fatalf("pass not recorded: %+v", st)
			}
			for n, is := range st.Images {
				if is.Offset != 0 || is.Done {
					t.Errorf("%s: the next pass must start at 0: %+v", n, is)
				}
			}
			done := 0
			for _, e := range events {
				if e.Kind == EventDone {
					done++
				}
			}
			if done != 3 {
				t.Errorf("%d done events", done)
			}
			// the next run is pass 2 and reads everything again
			res2, err := Scrub(context.Background(), ScrubOptions{Targets: targets, Identity: "uuid-1", StatePath: state, Direct: direct})
			if err != nil || res2.Pass != 2 || !res2.PassCompleted || len(res2.Passes) != 2 || res2.Bytes != res.Bytes {
				t.Fatalf("second pass: %v %+v", err, res2)
			}
		})
	}
}

func TestScrubODirectFallsBackOnTmpfs(t *testing.T) {
	var st syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &st); err != nil || st.Type != 0x01021994 {
		t.Skip("no tmpfs at /dev/shm to refuse O_DIRECT")
	}
	dir, err := os.MkdirTemp("/dev/shm", "tbhost-scrub")
	if err != nil {
		t.Skip(err)
	}
	defer os.RemoveAll(dir)
	targets := imageFiles(t, dir, 1<<20)
	res, err := Scrub(context.Background(), ScrubOptions{Targets: targets, Direct: true})
	if err != nil {
		t.Fatal(err)
	}
	im := res.Images[0]
	if im.Direct {
		t.Skip("this tmpfs accepts O_DIRECT (kernel 6.6+): nothing to fall back from")
	}
	if !im.Done || !strings.Contains(im.Note, "buffered") {
		t.Fatalf("want a buffered read with a note: %+v", im)
	}
}

func TestScrubBudgetThenResumeOnFakeClock(t *testing.T) {
	dir := t.TempDir()
	targets := imageFiles(t, dir, 8<<20, 8<<20)
	state := filepath.Join(dir, "s.json")
	clk := newFakeClock()
	opts := ScrubOptions{Targets: targets, Identity: "u", StatePath: state, Rate: 1 << 20, Chunk: 1 << 20, Clock: clk,
		Deadline: clk.Now().Add(5 * time.Second)}
	res, err := Scrub(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "budget" || res.PassCompleted {
		t.Fatalf("want a stop at the budget: %+v", res)
	}
	// 1 MiB/s for 5 s: 5 MiB (+- one chunk), all in image 0
	if res.Bytes < 4<<20 || res.Bytes > 6<<20 || res.Images[1].BytesRead != 0 {
		t.Fatalf("read %d bytes in a 5 s budget at 1 MiB/s: %+v", res.Bytes, res.Images)
	}
	end := res.Images[0].End
	opts.Deadline = time.Time{}
	res2, err := Scrub(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res2.Images[0].Start != end || res2.Images[0].BytesRead != 8<<20-end || res2.Images[1].Start != 0 {
		t.Fatalf("resume: image 0 from %d (want %d), read %d", res2.Images[0].Start, end, res2.Images[0].BytesRead)
	}
	if !res2.PassCompleted || res2.Bytes != 16<<20-end {
		t.Fatalf("%+v", res2)
	}
}

func TestScrubRefusesAnotherArraysState(t *testing.T) {
	dir := t.TempDir()
	targets := imageFiles(t, dir, 1<<20)
	state := filepath.Join(dir, "s.json")
	if _, err := Scrub(context.Background(), ScrubOptions{Targets: targets, Identity: "uuid-A", StatePath: state}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(state)
	_, err := Scrub(context.Background(), ScrubOptions{Targets: targets, Identity: "uuid-B", StatePath: state})
	if !errors.Is(err, ErrStateMismatch) || !strings.Contains(err.Error(), "uuid-A") {
		t.Fatalf("want a refusal naming the other array, got %v", err)
	}
	after, _ := os.ReadFile(state)
	if string(before) != string(after) {
		t.Fatal("a refused run must not touch the state file")
	}
	// the image grew (lvextend): refuse too
	os.WriteFile(targets[0].Path, make([]byte, 2<<20), 0o644)
	if _, err := Scrub(context.Background(), ScrubOptions{Targets: targets, Identity: "uuid-A", StatePath: state}); !errors.Is(err, ErrStateMismatch) {
		t.Fatalf("resized image: %v", err)
	}
}

// flakyFile fails reads that touch the given offsets, like dm-integrity
// answering EILSEQ for a block whose checksum does not match.
type flakyFile struct {
	*os.File
	bad []int64
	bs  int64
}

func (f flakyFile) ReadAt(b []byte, off int64) (int, error) {
	for _, x := range f.bad {
		if x >= off && x < off+int64(len(b)) {
			return 0, fmt.Errorf("read %s at %d: %w", f.Name(), off, syscall.EILSEQ)
		}
	}
	return f.File.ReadAt(b, off)
}

func TestScrubLocatesBadBlocksOnOneImage(t *testing.T) {
	dir := t.TempDir()
	targets := imageFiles(t, dir, 6<<20, 6<<20, 6<<20)
	badOffsets := []int64{5 << 20, 5<<20 + 8192}
	var events []ScrubEvent
	res, err := Scrub(context.Background(), ScrubOptions{Targets: targets, Chunk: 1 << 20,
		Events: func(e ScrubEvent) { events = append(events, e) },
		open: func(p string, direct bool) (blockReader, bool, string, error) {
			f, err := os.Open(p)
			if err != nil {
				return nil, false, "", err
			}
			if p == targets[1].Path {
				return flakyFile{f, badOffsets, 4096}, false, "", nil
			}
			return f, false, "", nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if res.BadBlockCount() != 2 || len(res.Images[1].BadBlocks) != 2 || res.Images[1].BadBlocks[1] != 5<<20+8192 {
		t.Fatalf("bad blocks: %+v", res.Images)
	}
	if len(res.Images[0].BadBlocks)+len(res.Images[2].BadBlocks) != 0 {
		t.Fatal("clean images reported bad blocks")
	}
	if !res.PassCompleted || res.Images[1].BytesRead != 6<<20 {
		t.Fatalf("the scrub must read past bad blocks: %+v", res.Images[1])
	}
	n := 0
	for _, e := range events {
		if e.Kind == EventBad && e.Image == "tables_rimage_1" && strings.Contains(e.Message, "checksum mismatch") {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d bad-block events naming EILSEQ", n)
	}
}

type scriptedStats struct {
	samples []diskstats.Sample
	i       int
	done    func() // called when the script runs out
}

func (s *scriptedStats) Sample(context.Context) (diskstats.Sample, error) {
	out := s.samples[s.i]
	s.i++
	if s.i == len(s.samples) {
		s.done()
		s.i--
	}
	return out, nil
}

func TestBackoffLoopDrivesTheThrottle(t *testing.T) {
	clk := newFakeClock()
	ctx, cancel := context.WithCancel(context.Background())
	// sda: 30 ms, 200 ms, 200 ms (foreground reads queueing), then 10 ms twice
	stats := &scriptedStats{done: cancel, samples: []diskstats.Sample{
		counters(0, 0, 0), counters(5, 100, 3000), counters(10, 200, 23000), counters(15, 300, 43000), counters(20, 400, 44000), counters(25, 500, 45000),
	}}
	th := NewThrottle(64<<20, clk)
	var got []BackoffDecision
	runBackoff(ctx, BackoffRule{MaxAwait: 60 * time.Millisecond, MinRate: 1 << 20, MaxRate: 64 << 20}, stats, th, clk, 5*time.Second,
		[]string{"sda"}, func(d BackoffDecision) { got = append(got, d) }, func(m string) { t.Log(m) })
	// 30 ms: in the band below MaxAwait/2 but already at MaxRate: no change
	want := []int64{32 << 20, 16 << 20, 24 << 20, 32 << 20}
	if len(got) != len(want) {
		t.Fatalf("decisions %+v", got)
	}
	for i, d := range got {
		if d.Rate != want[i] {
			t.Errorf("decision %d: rate %d MiB/s, want %d (%s)", i, d.Rate>>20, want[i]>>20, d.Reason)
		}
	}
	if !strings.Contains(got[0].Reason, "sda r_await 200ms > 60ms") || th.Rate() != 32<<20 {
		t.Errorf("reason %q, throttle at %d", got[0].Reason, th.Rate())
	}
	if clk.Now().Sub(time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)) != 25*time.Second {
		t.Errorf("sampled at the wrong interval: fake time %v", clk.Now())
	}
}

func TestOpenFallsBackToBufferedWhenODirectRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "img")
	os.WriteFile(p, make([]byte, 8192), 0o644)
	var flags []int
	refuse := func(name string, flag int, perm os.FileMode) (*os.File, error) {
		flags = append(flags, flag)
		if flag&syscall.O_DIRECT != 0 {
			return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EINVAL}
		}
		return os.OpenFile(name, flag, perm)
	}
	f, direct, note, err := openScrubWith(p, true, refuse)
	if err != nil || direct || !strings.Contains(note, "buffered") || len(flags) != 2 {
		t.Fatalf("direct %v note %q err %v flags %v", direct, note, err, flags)
	}
	f.Close()
	// any other error is not papered over
	deny := func(name string, flag int, perm os.FileMode) (*os.File, error) {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EACCES}
	}
	if _, _, _, err := openScrubWith(p, true, deny); !errors.Is(err, syscall.EACCES) {
		t.Fatalf("want EACCES, got %v", err)
	}
	// and a real O_DIRECT read of an odd-sized file works here (ext4)
	os.WriteFile(p, make([]byte, 12345), 0o644)
	res, err := Scrub(context.Background(), ScrubOptions{Targets: []ScrubTarget{{Name: "x", Path: p}}, Direct: true})
	if err != nil || res.Bytes != 12345 || !res.PassCompleted {
		t.Fatalf("%v %+v", err, res)
	}
}

// The killed-and-rerun test runs the scrub in a child process (this test
// binary, re-executed) and kills it with SIGKILL: no chance to save state
// on the way out, so only the periodic checkpoints count.
const childEnv = "TBHOST_SCRUB_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(scrubChild(spec))
	}
	os.Exit(m.Run())
}

func scrubChild(spec string) int {
	parts := strings.Split(spec, "|") // image|state
	res, err := Scrub(context.Background(), ScrubOptions{
		Targets:  []ScrubTarget{{Name: "tables_rimage_0", Path: parts[0], Disks: []string{"/dev/sda"}}},
		Identity: "child", StatePath: parts[1], Rate: 4 << 20, Chunk: 256 << 10, Direct: true,
		CheckpointEvery: 50 * time.Millisecond,
	})
	fmt.Println(res.Bytes, err)
	return 0
}

func TestScrubKilledAndRerunResumesFromCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	dir := t.TempDir()
	targets := imageFiles(t, dir, 16<<20) // 4 s at 4 MiB/s
	state := filepath.Join(dir, "scrub.state")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+targets[0].Path+"|"+state)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var checkpoint int64
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var st ScrubState
		if found, _ := readJSON(state, &st); found && st.Images["tables_rimage_0"] != nil && st.Images["tables_rimage_0"].Offset >= 2<<20 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	var st ScrubState
	if found, err := readJSON(state, &st); !found || err != nil {
		t.Fatalf("no readable state after SIGKILL: %v", err)
	}
	checkpoint = st.Images["tables_rimage_0"].Offset
	if checkpoint <= 0 || checkpoint >= 16<<20 {
		t.Fatalf("checkpoint %d: the child should have been killed mid-pass", checkpoint)
	}
	res, err := Scrub(context.Background(), ScrubOptions{Targets: targets, Identity: "child", StatePath: state, Direct: true})
	if err != nil {
		t.Fatal(err)
	}
	im := res.Images[0]
	if im.Start != checkpoint || im.BytesRead != 16<<20-checkpoint || !res.PassCompleted || res.Pass != 1 {
		t.Fatalf("rerun started at %d (checkpoint %d), read %d: %+v", im.Start, checkpoint, im.BytesRead, res)
	}
	t.Logf("killed at checkpoint %s of 16 MiB; rerun read the remaining %d bytes", strconv.FormatInt(checkpoint, 10), im.BytesRead)
}

func TestScrubFailsFastOnUnwritableState(t *testing.T) {
	dir := t.TempDir()
	targets := imageFiles(t, dir, 1<<20)
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o644)
	var read int64
	_, err := Scrub(context.Background(), ScrubOptions{Targets: targets, StatePath: filepath.Join(blocker, "sub", "state.json"),
		Events: func(e ScrubEvent) { read += e.Bytes }})
	if err == nil || !strings.Contains(err.Error(), "--state") || read != 0 {
		t.Fatalf("err %v after reading %d bytes; want a refusal before any read", err, read)
	}
}

// Two scrubs of one array (cron starting tonight's run while last night's
// still reads, or one started by hand): the second is refused at once,
// names the lock and its holder, reads nothing and leaves the first one's
// checkpoint alone; once the first ends (or is killed: the kernel drops an
// flock with its process), the next run goes ahead.
func TestScrubRefusesWhileAnotherHoldsTheState(t *testing.T) {
	dir := t.TempDir()
	targets := imageFiles(t, dir, 1<<20)
	state := filepath.Join(dir, "s.json")
	clk := newFakeClock()
	opts := ScrubOptions{Targets: targets, Identity: "u", StatePath: state, Rate: 256 << 10, Chunk: 64 << 10, Clock: clk,
		Deadline: clk.Now().Add(time.Second)}
	if _, err := Scrub(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	unlock, err := lockScrubState(state) // the running scrub
	if err != nil {
		t.Fatal(err)
	}
	var st ScrubState
	readJSON(state, &st)
	st.PID = 4242
	if err := writeJSONAtomic(state, &st); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(state)
	var read int64
	opts.Deadline = time.Time{}
	opts.Events = func(e ScrubEvent) { read += e.Bytes }
	_, err = Scrub(context.Background(), opts)
	if !errors.Is(err, ErrScrubBusy) || !strings.Contains(err.Error(), state+".lock") || !strings.Contains(err.Error(), "pid 4242") {
		t.Fatalf("second scrub on a held state: %v; want ErrScrubBusy naming the lock and the holder's pid", err)
	}
	if after, _ := os.ReadFile(state); read != 0 || string(after) != string(before) {
		t.Fatalf("the refused scrub read %d bytes or changed the state file", read)
	}
	unlock()
	res, err := Scrub(context.Background(), opts)
	if err != nil || !res.PassCompleted {
		t.Fatalf("after the first scrub ended: %v %+v", err, res)
	}
}

// A scrub killed between a checkpoint's create and its rename (kill -9)
// leaves the temporary file; the next run, holding the state's lock,
// removes it, and leaves another state's temporary files alone (a
// verify-tables state beside it may be writing one).
func TestScrubRemovesTheTemporaryFilesOfAKilledRun(t *testing.T) {
	dir := t.TempDir()
	targets := imageFiles(t, dir, 1<<20)
	state := filepath.Join(dir, "s[1].json") // a name with glob characters
	left := filepath.Join(dir, ".s[1].json.tmp123456")
	other := filepath.Join(dir, ".verify.json.tmp654321")
	for _, f := range []string{left, other} {
		if err := os.WriteFile(f, []byte(`{"half`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	clk := newFakeClock()
	if _, err := Scrub(context.Background(), ScrubOptions{Targets: targets, Identity: "u", StatePath: state, Rate: 256 << 10,
		Chunk: 64 << 10, Clock: clk, Deadline: clk.Now().Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("the killed run's temporary file is still there: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another state's temporary file was removed: %v", err)
	}
}
