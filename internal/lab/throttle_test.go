package lab

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseThrottle(t *testing.T) {
	known := map[string]bool{"hdd1": true, "hdd2": true}
	r, err := parseThrottle("12.345 4194304 hdd1 hdd2", known)
	if err != nil || r.ID != "12.345" || r.BpsRd != 4194304 || !slices.Equal(r.Disks, []string{"hdd1", "hdd2"}) {
		t.Errorf("got %+v, %v", r, err)
	}
	if r, err := parseThrottle("7 0 hdd2", known); err != nil || r.BpsRd != 0 {
		t.Errorf("0 lifts the cap: %+v %v", r, err)
	}
	for _, bad := range []string{"", "1 100", "1 -5 hdd1", "1 x hdd1", "1 100 hdd3", "a;b 100 hdd1"} {
		if _, err := parseThrottle(bad, known); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

// the watcher passes every byte through, finds requests split across
// writes, and answers each on the console input: ok, or the error
func TestThrottleWatcherAnswersRequests(t *testing.T) {
	var out bytes.Buffer
	var mu sync.Mutex
	var applied []ThrottleRequest
	apply := func(r ThrottleRequest) error {
		mu.Lock()
		defer mu.Unlock()
		applied = append(applied, r)
		if r.BpsRd == 13 {
			return errors.New("qmp block_set_io_throttle: GenericError: no such device")
		}
		return nil
	}
	disks, _ := Disks(HDD, 2, 64, "512n")
	var amu lockedBuffer
	w := newRequestWatcher(&out, "TBHOST-LAB-ab", map[string]requestHandler{"THROTTLE": throttleHandler(disks, apply)}, &amu)
	input := "boot\r\nTBHOST-LAB-ab THROTTLE 1.1 4096 hd" + "d1 hdd2\r\nlab: noise THROTTLE 9 9 hdd1\nTBHOST-LAB-ab THROTTLE 2.2 13 hdd1\nTBHOST-LAB-ab THROTTLE 3.3 1 hdd9\nend"
	for _, chunk := range []string{input[:20], input[20:33], input[33:]} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	w.Wait()
	if out.String() != input {
		t.Errorf("console changed:\n%q\nwant\n%q", out.String(), input)
	}
	got := strings.Split(strings.TrimSpace(amu.String()), "\n")
	slices.Sort(got)
	want := []string{
		"lab-throttle 1.1 ok",
		"lab-throttle 2.2 error: qmp block_set_io_throttle: GenericError: no such device",
		`lab-throttle 3.3 error: throttle request "3.3 1 hdd9": no disk "hdd9" in this run`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("answers:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(applied) != 2 { // the unknown disk never reaches qemu
		t.Errorf("applied %+v", applied)
	}
	if h := w.Handled(); len(h) != 3 {
		t.Errorf("handled %v", h)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// fakeQMP is a QMP server: greeting, capabilities, then
// block_set_io_throttle (an event first, to be skipped), an error for
// drive "bad".
func fakeQMP(t *testing.T) (string, chan map[string]any) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "q.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan map[string]any, 10)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write([]byte(`{"QMP": {"version": {"qemu": {"major": 7}}, "capabilities": []}}` + "\r\n"))
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			var req map[string]any
			if json.Unmarshal(line, &req) != nil {
				c.Write([]byte(`{"error": {"class": "GenericError", "desc": "JSON parse error"}}` + "\r\n"))
				continue
			}
			got <- req
			switch req["execute"] {
			case "qmp_capabilities":
				c.Write([]byte(`{"return": {}}` + "\r\n"))
			case "block_set_io_throttle":
				c.Write([]byte(`{"timestamp": {"seconds": 1}, "event": "RTC_CHANGE", "data": {}}` + "\r\n"))
				if a, _ := req["arguments"].(map[string]any); a["device"] == "bad" {
					c.Write([]byte(`{"error": {"class": "GenericError", "desc": "Device 'bad' not found"}}` + "\r\n"))
				} else {
					c.Write([]byte(`{"return": {}}` + "\r\n"))
				}
			default:
				c.Write([]byte(`{"error": {"class": "CommandNotFound", "desc": "no"}}` + "\r\n"))
			}
		}
	}()
	return path, got
}

func TestQMPThrottlerSetsReadCaps(t *testing.T) {
	path, got := fakeQMP(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	q := &qmpHost{ctx: ctx, path: path}
	defer q.Close()
	if err := q.throttle(ThrottleRequest{ID: "1", BpsRd: 2 << 20, Disks: []string{"hdd1", "hdd2"}}); err != nil {
		t.Fatal(err)
	}
	if req := <-got; req["execute"] != "qmp_capabilities" {
		t.Fatalf("first command %v, want qmp_capabilities", req)
	}
	for _, d := range []string{"hdd1", "hdd2"} {
		req := <-got
		a, _ := req["arguments"].(map[string]any)
		if req["execute"] != "block_set_io_throttle" || a["device"] != d || a["bps_rd"] != float64(2<<20) ||
			a["bps"] != float64(0) || a["iops_rd"] != float64(0) || a["bps_wr"] != float64(0) {
			t.Errorf("request %v", req)
		}
	}
	// the same connection again; an error names the drive and qemu's reason
	err := q.throttle(ThrottleRequest{ID: "2", BpsRd: 0, Disks: []string{"bad"}})
	if err == nil || !strings.Contains(err.Error(), "bad") || !strings.Contains(err.Error(), "Device 'bad' not found") {
		t.Errorf("error %v", err)
	}
}

func TestQMPDialGivesUpWithoutQemu(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := dialQMP(ctx, filepath.Join(t.TempDir(), "none.sock"))
	if err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("err %v after %v", err, time.Since(start))
	}
}
