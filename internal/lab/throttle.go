package lab

// Runtime read caps on a running guest's disks. A scenario asks with
// lab_throttle (lib.sh): it prints "MARK THROTTLE ID BYTES_PER_S NAME..."
// on the console; the host (throttleWatcher, on the serial stream) applies
// qemu's block_set_io_throttle to each named drive over QMP and answers on
// the guest's console input "lab-throttle ID ok" (or "lab-throttle ID
// error: ..."), which lab_throttle waits for. A cap set at boot
// (Disk.ReadIOPS) holds for the whole boot; this one holds for one step,
// e.g. to keep an integrity re-initialisation running long enough to be
// interrupted.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ThrottleRequest is one parsed request of the guest.
type ThrottleRequest struct {
	ID    string
	BpsRd int64 // bytes per second of reads; 0 lifts the cap
	Disks []string
}

// parseThrottle parses the part of a console line after "MARK THROTTLE ".
// known holds the run's disk names.
func parseThrottle(rest string, known map[string]bool) (ThrottleRequest, error) {
	f := strings.Fields(rest)
	if len(f) < 3 {
		return ThrottleRequest{}, fmt.Errorf("throttle request %q: want ID BYTES_PER_S DISK...", rest)
	}
	r := ThrottleRequest{ID: f[0], Disks: f[2:]}
	if !validName(strings.ReplaceAll(r.ID, ".", "_")) {
		return r, fmt.Errorf("throttle request %q: bad id", rest)
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || n < 0 {
		return r, fmt.Errorf("throttle request %q: bytes per second %q: want an integer >= 0", rest, f[1])
	}
	r.BpsRd = n
	for _, d := range r.Disks {
		if !known[d] {
			return r, fmt.Errorf("throttle request %q: no disk %q in this run", rest, d)
		}
	}
	return r, nil
}

// qmpClient speaks QMP (qemu's JSON monitor protocol) on one connection.
type qmpClient struct {
	conn net.Conn
	r    *bufio.Reader
}

// dialQMP connects to qemu's QMP socket (retrying while qemu starts) and
// leaves capabilities negotiation mode.
func dialQMP(ctx context.Context, path string) (*qmpClient, error) {
	var conn net.Conn
	var err error
	var d net.Dialer
	for range 50 {
		if conn, err = d.DialContext(ctx, "unix", path); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("qmp %s: %w", path, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err != nil {
		return nil, fmt.Errorf("qmp %s: %w", path, err)
	}
	c := &qmpClient{conn: conn, r: bufio.NewReader(conn)}
	if _, err := c.readMessage(); err != nil { // the greeting
		conn.Close()
		return nil, fmt.Errorf("qmp greeting: %w", err)
	}
	if err := c.execute("qmp_capabilities", nil); err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

type qmpMessage struct {
	QMP    json.RawMessage `json:"QMP"`
	Return json.RawMessage `json:"return"`
	Event  string          `json:"event"`
	Error  *struct {
		Class string `json:"class"`
		Desc  string `json:"desc"`
	} `json:"error"`
}

func (c *qmpClient) readMessage() (*qmpMessage, error) {
	c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		return nil, err
	}
	var m qmpMessage
	if err := json.Unmarshal(bytes.TrimSpace(line), &m); err != nil {
		return nil, fmt.Errorf("qmp reply %q: %w", bytes.TrimSpace(line), err)
	}
	return &m, nil
}

// execute runs one command and waits for its reply (events are skipped).
func (c *qmpClient) execute(cmd string, args any) error {
	req := map[string]any{"execute": cmd}
	if args != nil {
		req["arguments"] = args
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	c.conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.conn.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("qmp %s: %w", cmd, err)
	}
	for {
		m, err := c.readMessage()
		if err != nil {
			return fmt.Errorf("qmp %s: %w", cmd, err)
		}
		switch {
		case m.Error != nil:
			return fmt.Errorf("qmp %s: %s: %s", cmd, m.Error.Class, m.Error.Desc)
		case m.Return != nil:
			return nil
		}
		// an event or a stray greeting: keep reading
	}
}

// setReadCap caps drive's reads at bps bytes per second (0: no cap).
// qemu's block_set_io_throttle replaces every limit of the drive.
func (c *qmpClient) setReadCap(drive string, bps int64) error {
	return c.execute("block_set_io_throttle", map[string]any{
		"device": drive, "bps": 0, "bps_rd": bps, "bps_wr": 0, "iops": 0, "iops_rd": 0, "iops_wr": 0,
	})
}

func (c *qmpClient) Close() error { return c.conn.Close() }

// throttleWatcher passes the serial console through to out and answers
// the guest's throttle requests (see the file comment).
type throttleWatcher struct {
	out    io.Writer
	prefix string // MARK + " THROTTLE "
	known  map[string]bool
	apply  func(ThrottleRequest) error
	answer io.Writer // the guest's console input

	mu  sync.Mutex // buf
	buf []byte
	wg  sync.WaitGroup

	amu  sync.Mutex // done, answer
	done []string   // each request and its outcome
}

func newThrottleWatcher(out io.Writer, mark string, disks []Disk, apply func(ThrottleRequest) error, answer io.Writer) *throttleWatcher {
	known := map[string]bool{}
	for _, d := range disks {
		known[d.Name] = true
	}
	return &throttleWatcher{out: out, prefix: mark + " THROTTLE ", known: known, apply: apply, answer: answer}
}

func (w *throttleWatcher) Write(p []byte) (int, error) {
	n, err := w.out.Write(p)
	w.mu.Lock()
	eachLine(&w.buf, p, func(line string) error {
		if j := strings.Index(line, w.prefix); j >= 0 {
			rest := strings.TrimSpace(line[j+len(w.prefix):])
			w.wg.Add(1)
			go w.handle(rest) // never block the console
		}
		return nil
	})
	if len(w.buf) > 1<<20 { // a megabyte without a newline: not a request
		w.buf = w.buf[:0]
	}
	w.mu.Unlock()
	return n, err
}

func (w *throttleWatcher) handle(rest string) {
	defer w.wg.Done()
	req, err := parseThrottle(rest, w.known)
	if err == nil {
		err = w.apply(req)
	}
	id := req.ID
	if id == "" {
		id = "-"
	}
	msg := "ok"
	if err != nil {
		msg = "error: " + strings.ReplaceAll(err.Error(), "\n", " ")
	}
	w.amu.Lock()
	defer w.amu.Unlock()
	w.done = append(w.done, fmt.Sprintf("%s: %s", rest, msg))
	fmt.Fprintf(w.answer, "lab-throttle %s %s\n", id, msg)
}

// Wait waits for the requests being answered.
func (w *throttleWatcher) Wait() { w.wg.Wait() }

// Handled lists each request and its outcome.
func (w *throttleWatcher) Handled() []string {
	w.amu.Lock()
	defer w.amu.Unlock()
	return append([]string(nil), w.done...)
}

// qmpThrottler applies requests over one lazily opened QMP connection.
type qmpThrottler struct {
	ctx  context.Context
	path string
	mu   sync.Mutex
	c    *qmpClient
}

func (q *qmpThrottler) apply(r ThrottleRequest) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.c == nil {
		c, err := dialQMP(q.ctx, q.path)
		if err != nil {
			return err
		}
		q.c = c
	}
	var errs []error
	for _, d := range r.Disks {
		if err := q.c.setReadCap(d, r.BpsRd); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

func (q *qmpThrottler) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.c != nil {
		q.c.Close()
		q.c = nil
	}
}
