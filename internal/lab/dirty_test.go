package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseDirty(t *testing.T) {
	known := map[string]bool{"hdd1": true, "hdd2": true}
	r, err := parseDirty("12.345 count hdd1 hdd2", known)
	if err != nil || r.ID != "12.345" || r.Op != "count" || !slices.Equal(r.Disks, []string{"hdd1", "hdd2"}) {
		t.Errorf("got %+v, %v", r, err)
	}
	for _, bad := range []string{"", "1 start", "1 stop hdd1", "1 count hdd3", "a;b start hdd1"} {
		if _, err := parseDirty(bad, known); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

// one watcher answers both kinds, each on its own answer word; a request
// of a kind nobody handles, and a THROTTLE-looking line without the mark,
// get no answer
func TestRequestWatcherAnswersEachKind(t *testing.T) {
	var out bytes.Buffer
	disks, _ := Disks(HDD, 2, 64, "512n")
	var got []DirtyRequest
	var amu lockedBuffer
	w := newRequestWatcher(&out, "TBHOST-LAB-ab", map[string]requestHandler{
		"THROTTLE": throttleHandler(disks, func(ThrottleRequest) error { return nil }),
		"DIRTY": dirtyHandler(disks, func(r DirtyRequest) (string, error) {
			got = append(got, r)
			if r.Op == "count" {
				return "hdd1=0 hdd2=65536", nil
			}
			return "", nil
		}),
	}, &amu)
	input := "TBHOST-LAB-ab DIRTY 1.1 start hdd1 hdd2\r\nTBHOST-LAB-ab THROTTLE 2.2 0 hdd1\r\nTBHOST-LAB-ab BEGIN x 1 y\nDIRTY 9 count hdd1\n"
	if _, err := w.Write([]byte(input)); err != nil {
		t.Fatal(err)
	}
	w.Wait()
	if _, err := w.Write([]byte("TBHOST-LAB-ab DIRTY 3.3 count hdd1 hdd2\n")); err != nil {
		t.Fatal(err)
	}
	w.Wait()
	answers := strings.Split(strings.TrimSpace(amu.String()), "\n")
	slices.Sort(answers)
	want := []string{"lab-dirty 1.1 ok", "lab-dirty 3.3 ok hdd1=0 hdd2=65536", "lab-throttle 2.2 ok"}
	if !slices.Equal(answers, want) {
		t.Errorf("answers:\n%s\nwant\n%s", strings.Join(answers, "\n"), strings.Join(want, "\n"))
	}
	if len(got) != 2 || got[0].Op != "start" || got[1].Op != "count" {
		t.Errorf("dirty requests carried out: %+v", got)
	}
	if h := w.Handled(); len(h) != 3 || !slices.Contains(h, "DIRTY 3.3 count hdd1 hdd2: ok hdd1=0 hdd2=65536") {
		t.Errorf("handled %q", h)
	}
}

func TestDirtyCounts(t *testing.T) {
	// qemu 7.2's query-block (abridged): the bitmaps under "inserted"; a
	// drive without one; an old qemu's list beside "inserted"
	ret := json.RawMessage(`[
	 {"device": "hdd1", "inserted": {"dirty-bitmaps": [{"name": "other", "count": 5}, {"name": "lab", "recording": true, "granularity": 65536, "count": 0}]}},
	 {"device": "hdd2", "inserted": {"dirty-bitmaps": [{"name": "lab", "granularity": 65536, "count": 131072}]}},
	 {"device": "hdd3", "inserted": {}},
	 {"device": "hdd4", "dirty-bitmaps": [{"name": "lab", "count": 4096}], "inserted": {}}]`)
	c, err := dirtyCounts(ret)
	if err != nil {
		t.Fatal(err)
	}
	if len(c) != 3 || c["hdd1"] != 0 || c["hdd2"] != 131072 || c["hdd4"] != 4096 {
		t.Errorf("counts %v", c)
	}
	if _, ok := c["hdd3"]; ok {
		t.Error("hdd3 has no bitmap")
	}
	if _, err := dirtyCounts(json.RawMessage(`[{"device": "hdd1", "inserted": {"dirty-bitmaps": [{"name": "lab"}]}}]`)); err == nil {
		t.Error("a bitmap without a count: want an error")
	}
	if _, err := dirtyCounts(json.RawMessage(`{"device": "hdd1"}`)); err == nil {
		t.Error("not a list: want an error")
	}
}

// Against a real qemu (no guest: the drive is written through qemu's own
// qemu-io, the same block layer a guest's writes go through): a fresh
// bitmap counts 0, a 4 KiB write marks one 64 KiB block, a second start
// empties it, and a drive that never got one is an error naming it.
func TestQMPDirtyBitmapsOnRealQemu(t *testing.T) {
	if _, err := exec.LookPath(QemuBinary); err != nil {
		t.Skipf("%s not installed (make deps installs it)", QemuBinary)
	}
	dir, err := qmpSocketDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	img := filepath.Join(t.TempDir(), "hdd1.img")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 64<<20); err != nil {
		t.Fatal(err)
	}
	img2 := img + "2"
	os.WriteFile(img2, make([]byte, 1<<20), 0o644)
	sock := filepath.Join(dir, qmpSocketName)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, QemuBinary, "-machine", "q35", "-accel", "tcg", "-display", "none", "-S", "-nodefaults",
		"-drive", "if=none,id=hdd1,format=raw,cache=unsafe,file="+img,
		"-drive", "if=none,id=hdd2,format=raw,cache=unsafe,file="+img2,
		"-qmp", "unix:"+sock+",server=on,wait=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	q := &qmpHost{ctx: ctx, path: sock}
	defer q.Close()
	count := func(disks ...string) (string, error) {
		return q.dirty(DirtyRequest{ID: "1", Op: "count", Disks: disks})
	}
	if _, err := q.dirty(DirtyRequest{ID: "1", Op: "start", Disks: []string{"hdd1"}}); err != nil {
		t.Fatalf("start: %v (qemu: %s)", err, stderr.String())
	}
	if got, err := count("hdd1"); err != nil || got != "hdd1=0" {
		t.Errorf("fresh bitmap: %q, %v", got, err)
	}
	if err := qemuIO(q, "hdd1", "write -P 0 1M 4k"); err != nil {
		t.Fatal(err)
	}
	if got, err := count("hdd1"); err != nil || got != "hdd1=65536" {
		t.Errorf("after a 4 KiB write (of zeros onto zeros): %q, %v", got, err)
	}
	if _, err := q.dirty(DirtyRequest{ID: "2", Op: "start", Disks: []string{"hdd1"}}); err != nil {
		t.Fatalf("second start: %v", err)
	}
	if got, err := count("hdd1"); err != nil || got != "hdd1=0" {
		t.Errorf("after a second start: %q, %v", got, err)
	}
	if got, err := count("hdd1", "hdd2"); err == nil || !strings.Contains(err.Error(), "hdd2") {
		t.Errorf("hdd2 has no bitmap: %q, %v", got, err)
	}
}

// qemuIO runs qemu-io on a drive through the human monitor.
func qemuIO(q *qmpHost, drive, command string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	c, err := q.client()
	if err != nil {
		return err
	}
	ret, err := c.call("human-monitor-command", map[string]any{"command-line": fmt.Sprintf("qemu-io %s %q", drive, command)})
	if err != nil {
		return err
	}
	// qemu-io prints its "wrote ..." on qemu's stdout, not in the reply;
	// the reply holds errors only
	var s string
	json.Unmarshal(ret, &s)
	if strings.TrimSpace(s) != "" {
		return fmt.Errorf("qemu-io %s %q: %s", drive, command, s)
	}
	return nil
}
