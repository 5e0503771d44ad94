package lab

// Requests of a running guest to the host, over its serial console. A
// scenario prints "MARK KIND ID ARGS..." on the console; the host
// (requestWatcher, on the serial stream) carries it out over QMP and
// answers on the guest's console input "lab-kind ID ok [REPLY]" (or
// "lab-kind ID error: ..."), which the guest waits for. Two kinds:
//
//   - THROTTLE (lab_throttle in lib.sh): runtime read caps on the guest's
//     disks with qemu's block_set_io_throttle. A cap set at boot
//     (Disk.ReadIOPS) holds for the whole boot; this one holds for one
//     step, e.g. to keep an integrity re-initialisation running long enough
//     to be interrupted.
//   - DIRTY (lab_dirty, dirty.go): qemu's dirty bitmaps, which count every
//     byte the guest writes to a disk.

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
	_, err := c.call(cmd, args)
	return err
}

// call runs one command and returns its reply's "return" value (events
// are skipped).
func (c *qmpClient) call(cmd string, args any) (json.RawMessage, error) {
	req := map[string]any{"execute": cmd}
	if args != nil {
		req["arguments"] = args
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	c.conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.conn.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("qmp %s: %w", cmd, err)
	}
	for {
		m, err := c.readMessage()
		if err != nil {
			return nil, fmt.Errorf("qmp %s: %w", cmd, err)
		}
		switch {
		case m.Error != nil:
			return nil, fmt.Errorf("qmp %s: %s: %s", cmd, m.Error.Class, m.Error.Desc)
		case m.Return != nil:
			return m.Return, nil
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

// requestHandler carries out one request: rest is the console line after
// "MARK KIND "; it returns the request's id and the answer's text after
// "ok" (may be empty).
type requestHandler func(rest string) (id, reply string, err error)

// requestWatcher passes the serial console through to out and answers the
// guest's requests (see the file comment).
type requestWatcher struct {
	out      io.Writer
	mark     string
	handlers map[string]requestHandler // by KIND
	answer   io.Writer                 // the guest's console input

	mu  sync.Mutex // buf
	buf []byte
	wg  sync.WaitGroup

	amu  sync.Mutex // done, answer
	done []string   // each request and its outcome
}

func newRequestWatcher(out io.Writer, mark string, handlers map[string]requestHandler, answer io.Writer) *requestWatcher {
	return &requestWatcher{out: out, mark: mark, handlers: handlers, answer: answer}
}

// throttleHandler parses a THROTTLE request for the run's disks and applies
// it.
func throttleHandler(disks []Disk, apply func(ThrottleRequest) error) requestHandler {
	known := diskNames(disks)
	return func(rest string) (string, string, error) {
		req, err := parseThrottle(rest, known)
		if err == nil {
			err = apply(req)
		}
		return req.ID, "", err
	}
}

func diskNames(disks []Disk) map[string]bool {
	known := map[string]bool{}
	for _, d := range disks {
		known[d.Name] = true
	}
	return known
}

func (w *requestWatcher) Write(p []byte) (int, error) {
	n, err := w.out.Write(p)
	w.mu.Lock()
	eachLine(&w.buf, p, func(line string) error {
		j := strings.Index(line, w.mark+" ")
		if j < 0 {
			return nil
		}
		kind, rest, _ := strings.Cut(line[j+len(w.mark)+1:], " ")
		if h, ok := w.handlers[kind]; ok {
			w.wg.Add(1)
			go w.handle(kind, h, strings.TrimSpace(rest)) // never block the console
		}
		return nil
	})
	if len(w.buf) > 1<<20 { // a megabyte without a newline: not a request
		w.buf = w.buf[:0]
	}
	w.mu.Unlock()
	return n, err
}

func (w *requestWatcher) handle(kind string, h requestHandler, rest string) {
	defer w.wg.Done()
	id, reply, err := h(rest)
	if id == "" {
		id = "-"
	}
	msg := "ok"
	if reply != "" {
		msg += " " + reply
	}
	if err != nil {
		msg = "error: " + strings.ReplaceAll(err.Error(), "\n", " ")
	}
	w.amu.Lock()
	defer w.amu.Unlock()
	w.done = append(w.done, fmt.Sprintf("%s %s: %s", kind, rest, msg))
	fmt.Fprintf(w.answer, "lab-%s %s %s\n", strings.ToLower(kind), id, msg)
}

// Wait waits for the requests being answered.
func (w *requestWatcher) Wait() { w.wg.Wait() }

// Handled lists each request ("KIND ARGS...") and its outcome.
func (w *requestWatcher) Handled() []string {
	w.amu.Lock()
	defer w.amu.Unlock()
	return append([]string(nil), w.done...)
}

// qmpHost carries out the guest's requests over one lazily opened QMP
// connection.
type qmpHost struct {
	ctx  context.Context
	path string
	mu   sync.Mutex
	c    *qmpClient
}

// client is the connection, opened on first use; call with q.mu held.
func (q *qmpHost) client() (*qmpClient, error) {
	if q.c == nil {
		c, err := dialQMP(q.ctx, q.path)
		if err != nil {
			return nil, err
		}
		q.c = c
	}
	return q.c, nil
}

// throttle applies a THROTTLE request.
func (q *qmpHost) throttle(r ThrottleRequest) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	c, err := q.client()
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range r.Disks {
		if err := c.setReadCap(d, r.BpsRd); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

func (q *qmpHost) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.c != nil {
		q.c.Close()
		q.c = nil
	}
}
