package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// leanClient is the replay's HTTP/1.1 client: one persistent connection per
// benchmark client, requests written directly and answers parsed with
// readAnswer. It skips http.Transport's connection pool and
// per-connection goroutines, which cost more CPU per request than a small
// tablebase answer takes to serve, and would make the harness, not the
// target, the bottleneck on a small machine (see BenchmarkRatioReplayVsWrk).
type leanClient struct {
	scheme, addr, host string
	timeout            time.Duration
	tlsConf            *tls.Config

	mu     sync.Mutex
	conns  []*leanConn // by client
	closed bool
	// bufs keeps each client's buffers across connections: a server that
	// closes every connection (HTTP/1.0, python3 -m http.server) costs a
	// dial per request, not also 20 KiB of garbage.
	bufs []leanBufs
}

type leanBufs struct {
	br *bufio.Reader
	bw *bufio.Writer
}

type leanConn struct {
	c  net.Conn
	br *bufio.Reader
	bw *bufio.Writer
	// deadlineAt is when the connection's deadline was last set (see
	// refreshDeadline).
	deadlineAt time.Time
}

// refreshDeadline gives the request about to be sent the client's timeout:
// the connection's deadline is moved to now+timeout unless it was moved less
// than timeout/100 ago, so a request always has at least 99 % of the timeout
// and a busy connection does not re-arm the runtime's timer on every request
// (a timer update costs about as much CPU as parsing a small answer).
func (cn *leanConn) refreshDeadline(timeout time.Duration) {
	now := time.Now()
	if !cn.deadlineAt.IsZero() && now.Sub(cn.deadlineAt) < timeout/100 {
		return
	}
	cn.c.SetDeadline(now.Add(timeout))
	cn.deadlineAt = now
}

func newLeanClient(base *url.URL, clients int, timeout time.Duration) *leanClient {
	addr := base.Host
	if base.Port() == "" {
		if base.Scheme == "https" {
			addr = net.JoinHostPort(base.Hostname(), "443")
		} else {
			addr = net.JoinHostPort(base.Hostname(), "80")
		}
	}
	lc := &leanClient{scheme: base.Scheme, addr: addr, host: base.Host, timeout: timeout, conns: make([]*leanConn, clients), bufs: make([]leanBufs, clients)}
	if base.Scheme == "https" {
		lc.tlsConf = &tls.Config{ServerName: base.Hostname()}
	}
	return lc
}

// abort makes every request in flight fail now (the run has ended).
func (lc *leanClient) abort() {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.closed = true
	for _, c := range lc.conns {
		if c != nil {
			c.c.SetDeadline(time.Unix(1, 0))
		}
	}
}

// close closes every connection.
func (lc *leanClient) close() {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.closed = true
	for i, c := range lc.conns {
		if c != nil {
			c.c.Close()
			lc.conns[i] = nil
		}
	}
}

func (lc *leanClient) dial(ctx context.Context, client int) (*leanConn, error) {
	// No TCP keep-alive probes: a benchmark connection is never idle for
	// long, and the probes' setsockopt calls cost a little on every dial.
	//
	// DialContext with the address string, never Dialer.DialTCP with a zero
	// local netip.AddrPort: that becomes a non-nil local address, and the
	// socket is bound to port 0 before it connects. bind must find a port
	// that no socket holds, TIME_WAIT ones included, where connect may reuse
	// a TIME_WAIT port (net.ipv4.tcp_tw_reuse): against a server that closes
	// every connection, ~28,000 connections in a minute left each bind
	// searching an almost exhausted port range, and the replay's rate fell to
	// 120-760 requests/s where wrk kept ~1,300 (TestDialDoesNotBind). An IP
	// literal is parsed, not looked up.
	d := net.Dialer{Timeout: lc.timeout, KeepAlive: -1}
	c, err := d.DialContext(ctx, "tcp", lc.addr)
	if err != nil {
		return nil, err
	}
	if lc.tlsConf != nil {
		tc := tls.Client(c, lc.tlsConf)
		tc.SetDeadline(time.Now().Add(lc.timeout))
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		c = tc
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.closed {
		c.Close()
		return nil, context.Canceled
	}
	b := &lc.bufs[client]
	if b.br == nil {
		b.br, b.bw = bufio.NewReaderSize(c, 16<<10), bufio.NewWriterSize(c, 4<<10)
	} else {
		b.br.Reset(c)
		b.bw.Reset(c)
	}
	cn := &leanConn{c: c, br: b.br, bw: b.bw}
	lc.conns[client] = cn
	return cn, nil
}

func (lc *leanClient) drop(client int) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if c := lc.conns[client]; c != nil {
		c.c.Close()
		lc.conns[client] = nil
	}
}

// get sends GET path on the client's connection and reads the whole answer.
// A request on a kept-alive connection that the server had closed is sent
// again once on a new connection (as net/http does).
func (lc *leanClient) get(ctx context.Context, client int, path string) Outcome {
	lc.mu.Lock()
	cn := lc.conns[client]
	lc.mu.Unlock()
	reused := cn != nil
	for attempt := 0; ; attempt++ {
		if cn == nil {
			var err error
			if cn, err = lc.dial(ctx, client); err != nil {
				return Outcome{Err: lc.wrap(ctx, err)}
			}
		}
		status, keep, fresh, err := lc.roundTrip(cn, path)
		if err == nil {
			if !keep {
				lc.drop(client)
			}
			return Outcome{Status: status}
		}
		lc.drop(client)
		cn = nil
		if reused && !fresh && attempt == 0 && ctx.Err() == nil {
			continue // stale keep-alive connection: nothing came back
		}
		return Outcome{Status: status, Err: lc.wrap(ctx, err)}
	}
}

// roundTrip returns the status, whether the connection can be kept, and
// whether any byte of an answer arrived (if none did, a retry cannot
// duplicate a request the server answered).
func (lc *leanClient) roundTrip(cn *leanConn, path string) (status int, keep, fresh bool, err error) {
	cn.refreshDeadline(lc.timeout)
	cn.bw.WriteString("GET ")
	cn.bw.WriteString(path)
	cn.bw.WriteString(" HTTP/1.1\r\nHost: ")
	cn.bw.WriteString(lc.host)
	cn.bw.WriteString("\r\n\r\n") // Host only, as wrk sends: no header the log did not have
	if err := cn.bw.Flush(); err != nil {
		return 0, false, false, err
	}
	if _, err := cn.br.Peek(1); err != nil {
		return 0, false, false, err
	}
	status, keep, err = readAnswer(cn.br)
	return status, keep, true, err
}

// maxInterim bounds the 1xx interim answers skipped before the final one.
const maxInterim = 8

// readAnswer reads one HTTP/1.x answer to a GET from br and discards its
// body; it returns the final status (200-599) and whether the connection
// stays usable. Interim 1xx answers (100 Continue, 103 Early Hints) are
// skipped, as RFC 9110 15.2 requires; 101 Switching Protocols to a GET that
// asked for no upgrade is an error, as is a status outside 100-599. Only
// what a GET needs: Content-Length, chunked, or body until close.
func readAnswer(br *bufio.Reader) (status int, keep bool, err error) {
	h, err := readFinalHead(br)
	if err != nil {
		return h.status, false, err
	}
	keep, err = readBody(br, h)
	return h.status, keep, err
}

// answerHead is the head of a final answer: its status, whether the
// connection stays usable after it, and how its body is framed.
type answerHead struct {
	status  int
	keep    bool
	length  int64 // Content-Length, -1 without one
	chunked bool
}

// bodyless: a 204 or 304 answer has no body, whatever its headers say.
func (h answerHead) bodyless() bool {
	return h.status == http.StatusNoContent || h.status == http.StatusNotModified
}

// readFinalHead reads heads up to the final (200-599) one, skipping the
// interim 1xx answers (readAnswer).
func readFinalHead(br *bufio.Reader) (answerHead, error) {
	var h answerHead
	for interim := 0; ; interim++ {
		var err error
		h.status, h.keep, h.length, h.chunked, err = readHead(br)
		if err != nil {
			return h, err
		}
		if h.status >= 200 {
			return h, nil
		}
		if h.status == http.StatusSwitchingProtocols {
			return h, errors.New("101 Switching Protocols to a GET that asked for no upgrade")
		}
		if interim == maxInterim {
			return h, fmt.Errorf("more than %d interim (1xx) answers before the final one", maxInterim)
		}
	}
}

// readBody discards the body of the answer whose head is h and returns
// whether the connection stays usable.
func readBody(br *bufio.Reader, h answerHead) (keep bool, err error) {
	switch {
	case h.bodyless():
		return h.keep, nil
	case h.chunked:
		if _, err := io.Copy(io.Discard, httputil.NewChunkedReader(br)); err != nil {
			return false, fmt.Errorf("reading chunked body: %w", err)
		}
		for { // trailers, up to the empty line
			t, err := br.ReadSlice('\n')
			if err != nil {
				return false, fmt.Errorf("reading trailers: %w", err)
			}
			if len(bytes.TrimRight(t, "\r\n")) == 0 {
				return h.keep, nil
			}
		}
	case h.length >= 0:
		if _, err := br.Discard(int(h.length)); err != nil {
			return false, fmt.Errorf("reading body: %w", err)
		}
		return h.keep, nil
	default: // body until the server closes
		if _, err := io.Copy(io.Discard, br); err != nil {
			return false, fmt.Errorf("reading body: %w", err)
		}
		return false, nil
	}
}

// readHead reads a status line and the headers up to the empty line.
func readHead(br *bufio.Reader) (status int, keep bool, length int64, chunked bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, false, -1, false, fmt.Errorf("reading the status line: %w", err)
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || (line[7] != '0' && line[7] != '1') || line[8] != ' ' {
		return 0, false, -1, false, fmt.Errorf("not an HTTP/1.x answer: %.80q", bytes.TrimSpace(line))
	}
	code := line[9:12]
	if !isDigit(code[0]) || !isDigit(code[1]) || !isDigit(code[2]) || (len(line) > 12 && line[12] != ' ' && line[12] != '\r' && line[12] != '\n') {
		return 0, false, -1, false, fmt.Errorf("bad status line %.80q", bytes.TrimSpace(line))
	}
	status = int(code[0]-'0')*100 + int(code[1]-'0')*10 + int(code[2]-'0')
	if status < 100 || status > 599 {
		return 0, false, -1, false, fmt.Errorf("status %d outside 100-599 in %.80q", status, bytes.TrimSpace(line))
	}
	keep = line[7] == '1' // HTTP/1.1 keeps the connection by default
	length = -1
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return status, false, -1, false, fmt.Errorf("reading headers: %w", err)
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			return status, keep, length, chunked, nil
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.ParseInt(string(value), 10, 64); err != nil || length < 0 {
				return status, false, -1, false, fmt.Errorf("bad Content-Length %.40q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.Contains(bytes.ToLower(value), []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			v := bytes.ToLower(value)
			if bytes.Contains(v, []byte("close")) {
				keep = false
			} else if bytes.Contains(v, []byte("keep-alive")) {
				keep = true
			}
		}
	}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func (lc *leanClient) wrap(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%w): %w", ctx.Err(), context.Cause(ctx), err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("timed out after %s: %w", lc.timeout, err)
	}
	return err
}
