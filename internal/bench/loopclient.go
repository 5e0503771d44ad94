package bench

// The replay's event loop: a closed-loop replay of a plain-HTTP target
// runs its connections from one OS thread per connsPerProc connections,
// each with its own epoll set, as wrk does, instead of a goroutine per
// connection on Go's netpoller. Per answer the netpoller costs a read that
// returns EAGAIN (Go always tries the system call first), a park and a
// wake-up; the loop reads once when epoll says the answer is there, parses
// it, and writes the client's next request at once. On the 2-CPU test
// machine against a keep-alive server, 12 connections, test binaries of
// both clients run alternately: the loop 0.87-1.15x wrk's rate (median
// 0.97 of 12 runs), the goroutine clients 0.81-0.91x (median 0.85 of 6),
// the loop ahead in each of its pairs by 4-21 %; since it polls before it
// sleeps (loopSpin), 1.06-1.29x in six runs (docs/performance.md,
// BenchmarkRatioReplayVsWrk). Answers are parsed by the
// goroutine client's readFinalHead and readBody (readAnswer), over the
// bytes received so far: a head that has not fully arrived ends in
// errNeedMore and is parsed again once more bytes are in. A body with a
// Content-Length or one that runs until the close is then counted as it
// streams past, not held (an answer of any size costs the loop no memory);
// only a chunked body is held and parsed again. https targets and
// open-loop runs (--rate, a timed log) keep the goroutine client.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
)

// maxAnswer bounds the bytes of one answer held while it arrives: its
// heads, and a chunked body. A body with a Content-Length or one that
// runs until the close is not held but counted as it streams past
// (bodyStream).
const maxAnswer = 64 << 20

// loopTick is how often a loop looks at its requests' deadlines and the
// run's context when no answer wakes it: a request times out at most this
// late, and the run's end stops the loop within it.
const loopTick = 10 * time.Millisecond

// loopSpin is how long a loop polls its epoll set (epoll_wait with no
// timeout) before it sleeps in epoll_wait. A loop that sleeps the moment
// no answer is there makes the target's every answer a wake-up of a
// sleeping thread, which the target pays for on its own CPU (on a VM an
// inter-processor interrupt, a VM exit), and a local target then serves
// fewer requests than it could: against the trivial keep-alive server on
// the 2-CPU test machine, 12 connections, the loop that slept at once made
// 137,000-196,000 context switches per 200,000 requests and reached
// 0.85-0.94x wrk's rate (wrk spends more CPU per request, so it sleeps less
// often); polling first, 3,900-10,000 switches and 1.10-1.29x wrk's rate
// (10, 25 and 50 us alike; 5 polls, a few us, in between). The cost is
// the loop's CPU: at most loopSpin each time it runs out of answers, and
// on a 200,000-request replay of that server about 1 s more of it for
// 15-25 % more requests per second. Where answers come
// further apart than that (a remote target, a slow one), polling finds
// nothing: after spinMisses polls in a row that found nothing, the loop
// sleeps at once for its next spinPause waits, then tries again, so such
// a target costs the loop about a 17th of its waits' polling
// (docs/performance.md).
const (
	loopSpin   = 25 * time.Microsecond
	spinMisses = 4
	spinPause  = 64
)

// errNeedMore ends a parse of an answer that has not fully arrived.
var errNeedMore = errors.New("answer incomplete")

// arrived is the bytes of a connection received so far, read by
// readAnswer: at their end it returns errNeedMore, or io.EOF once the
// server has closed the connection.
type arrived struct {
	b   []byte
	off int
	eof bool
}

func (a *arrived) Read(p []byte) (int, error) {
	if a.off == len(a.b) {
		if a.eof {
			return 0, io.EOF
		}
		return 0, errNeedMore
	}
	n := copy(p, a.b[a.off:])
	a.off += n
	return n, nil
}

// loopConn is one client of a loop: its connection and its request.
type loopConn struct {
	client     int
	fd         int    // -1: none
	events     uint32 // what its epoll registration waits for
	connecting bool
	reused     bool // the connection has carried an answer before
	retried    bool // this request was sent again on a new connection

	seq      int64
	begin    time.Time
	deadline time.Time
	req      []byte // the request line and Host header
	written  int    // bytes of req written
	in       []byte // the answer's bytes so far
	n        int

	// the body streaming past once the head has been parsed, with the
	// answer's status and whether the connection stays usable after it
	body   bodyStream
	status int
	keep   bool

	src arrived
}

// bodyStream is how a body that is not held goes past (loopConn.in holds
// only heads and chunked bodies).
type bodyStream struct {
	untilClose bool  // the body ends when the server closes
	left       int64 // otherwise: bytes still to come; 0 with untilClose false: no body streams
}

func (b bodyStream) active() bool { return b.untilClose || b.left > 0 }

// loopTarget is where a loop's connections go and what they ask.
type loopTarget struct {
	addr    netip.AddrPort
	host    string // Host header
	prefix  string // the target's base path
	paths   []string
	timeout time.Duration
}

// resolveLoopTarget returns the loop's target for addr (host:port; host is
// the Host header), or ok false when the goroutine client must serve it: a
// name that does not resolve or none of whose addresses takes a connection
// (that client reports the errors per request), an IPv6 zone. https never
// comes here (RunReplay).
func resolveLoopTarget(ctx context.Context, addr, host, prefix string, paths []string, timeout time.Duration) (loopTarget, bool) {
	h, port, err := net.SplitHostPort(addr)
	if err != nil {
		return loopTarget{}, false
	}
	p, err := net.LookupPort("tcp", port)
	if err != nil {
		return loopTarget{}, false
	}
	ip, err := netip.ParseAddr(h)
	if err != nil {
		// a name: its first address that takes a connection (localhost
		// may be ::1 first and the server on 127.0.0.1 only), as the
		// goroutine client's dialer tries them in turn
		rctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		ips, err := net.DefaultResolver.LookupNetIP(rctx, "ip", h)
		if err != nil {
			return loopTarget{}, false
		}
		found := false
		for _, a := range ips {
			var d net.Dialer
			if c, err := d.DialContext(rctx, "tcp", netip.AddrPortFrom(a.Unmap(), uint16(p)).String()); err == nil {
				c.Close()
				ip, found = a, true
				break
			}
		}
		if !found {
			return loopTarget{}, false
		}
	}
	if ip.Zone() != "" {
		return loopTarget{}, false
	}
	return loopTarget{addr: netip.AddrPortFrom(ip.Unmap(), uint16(p)), host: host, prefix: prefix, paths: paths, timeout: timeout}, true
}

// driveLoop runs a closed-loop load (load.Rate 0, no Schedule) against t
// with event loops, as Drive runs op with goroutines.
func driveLoop(ctx context.Context, load Load, t loopTarget, observe Observer) (*Result, error) {
	if err := load.Validate(); err != nil {
		return nil, err
	}
	if load.Rate > 0 || load.Schedule != nil {
		return nil, errors.New("the replay's event loop runs closed-loop loads only")
	}
	var next, done atomic.Int64
	defer reportProgress(load, &done)()
	stats := newClientStats(load.Clients)
	// one processor per loop, which its raw system calls keep (epollWait),
	// and one for every other goroutine: the run's deadline, the progress
	// line, a signal, a target served by this process (tests, and a
	// harness that replays against itself)
	if want, prev := procsFor(load.Clients)+1, runtime.GOMAXPROCS(0); prev != want {
		runtime.GOMAXPROCS(want)
		defer runtime.GOMAXPROCS(prev)
	}
	runtime.GC() // as Drive: no collection of the set-up's garbage in the run
	// polling before a sleep (loopSpin) pays where a CPU is free for it,
	// not where the loops alone outnumber the CPUs: 4096 clients (16 loops)
	// on the 2-CPU test machine made the same rate either way (24,800-
	// 31,700 requests/s, noise), with 3-8 % more CPU when they polled
	spins := procsFor(load.Clients) < runtime.NumCPU()
	start := time.Now()
	var g errgroup.Group
	for first := 0; first < load.Clients; first += connsPerProc {
		last := min(first+connsPerProc, load.Clients)
		g.Go(func() error {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			l := &eventLoop{ctx: ctx, load: load, t: t, next: &next, done: &done, stats: stats, observe: observe, start: start, spins: spins}
			return l.run(first, last)
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return collect(ctx, load, stats, start, time.Now()), nil
}

// eventLoop drives clients [first, last) of a run from one OS thread.
type eventLoop struct {
	ctx     context.Context
	load    Load
	t       loopTarget
	next    *atomic.Int64
	done    *atomic.Int64
	stats   []*clientStats
	observe Observer
	start   time.Time

	ep     int
	byFD   map[int]*loopConn
	active int // clients with a request in flight
	// idle are the clients whose request has finished, waiting for their
	// next one (a queue, not a call from finish: a target that refuses
	// every connection at once would otherwise recurse through the log)
	idle []*loopConn
	// br parses one answer at a time, over the connection's arrived bytes
	br *bufio.Reader
	// scratch takes in a streaming body's bytes, which nobody keeps
	scratch []byte
	// whether it polls before it sleeps (driveLoop), polls in a row that
	// found nothing, and waits left that sleep at once (spin)
	spins                  bool
	spinMissed, spinPaused int
}

func (l *eventLoop) run(first, last int) error {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("epoll_create1: %w", err)
	}
	l.ep = ep
	l.byFD = map[int]*loopConn{}
	l.br = bufio.NewReaderSize(nil, 16<<10) // as the goroutine client's
	l.scratch = make([]byte, 64<<10)
	conns := make([]*loopConn, 0, last-first)
	defer func() {
		for _, c := range conns {
			l.closeConn(c)
		}
		unix.Close(ep)
	}()
	for c := first; c < last; c++ {
		lc := &loopConn{client: c, fd: -1, seq: -1, in: make([]byte, 4<<10)}
		conns = append(conns, lc)
		l.idle = append(l.idle, lc)
	}
	l.startIdle()
	events := make([]unix.EpollEvent, 128)
	nextTick := time.Now().Add(loopTick)
	for l.active > 0 {
		if l.ctx.Err() != nil {
			// requests in flight are the run's end, not failures: issued,
			// not counted (as Drive's clients do)
			for _, c := range conns {
				if c.seq >= 0 {
					l.stats[c.client].issued++
					l.done.Add(1)
				}
			}
			return nil
		}
		wait := int(time.Until(nextTick) / time.Millisecond)
		n, err := 0, error(nil)
		if l.spins {
			n, err = l.spin(events)
		}
		if n == 0 && err == nil {
			n, err = epollWait(ep, events, max(wait, 0)+1)
		}
		if err != nil && err != unix.EINTR {
			return fmt.Errorf("epoll_wait: %w", err)
		}
		for i := 0; i < n; i++ {
			c := l.byFD[int(events[i].Fd)]
			switch {
			case c == nil:
			case c.seq < 0: // a retired client's connection: nobody waits on it
				l.closeConn(c)
			case c.connecting:
				l.connected(c)
			case c.written < len(c.req):
				l.write(c)
			default:
				l.read(c)
			}
		}
		if now := time.Now(); !now.Before(nextTick) {
			nextTick = now.Add(loopTick)
			for _, c := range conns {
				if c.seq >= 0 && !c.deadline.IsZero() && now.After(c.deadline) {
					l.finish(c, 0, fmt.Errorf("timed out after %s: %w", l.t.timeout, os.ErrDeadlineExceeded), false)
				}
			}
		}
		l.startIdle()
	}
	return nil
}

// spin polls the epoll set for up to loopSpin. An event that is there at
// the first poll says nothing of the polling: against a server that closes
// every connection, a new connection's EPOLLOUT is there at once and the
// answer after it is not, and counted as a hit it ended every run of misses
// before the pause (against python3 -m http.server, 10-14 % of the replay's
// perf samples went to polling; 6 % counted so). While polling is paused it
// polls once.
func (l *eventLoop) spin(events []unix.EpollEvent) (int, error) {
	if n, err := epollWait(l.ep, events, 0); n != 0 || err != nil {
		return n, err
	}
	if l.spinPaused > 0 {
		l.spinPaused--
		return 0, nil
	}
	until := time.Now().Add(loopSpin)
	for time.Now().Before(until) {
		if n, err := epollWait(l.ep, events, 0); n != 0 || err != nil {
			l.spinMissed = 0
			return n, err
		}
	}
	if l.spinMissed++; l.spinMissed == spinMisses {
		l.spinMissed, l.spinPaused = 0, spinPause
	}
	return 0, nil
}

// startIdle starts the idle clients' next requests.
func (l *eventLoop) startIdle() {
	for len(l.idle) > 0 {
		c := l.idle[len(l.idle)-1]
		l.idle = l.idle[:len(l.idle)-1]
		l.nextRequest(c)
	}
}

// nextRequest starts the client's next request, or retires the client
// when the log is done or the run has ended.
func (l *eventLoop) nextRequest(c *loopConn) {
	if l.ctx.Err() != nil {
		l.closeConn(c)
		return
	}
	seq := l.next.Add(1) - 1
	if seq >= l.load.Requests {
		l.closeConn(c)
		return
	}
	c.seq, c.begin, c.retried = seq, time.Now(), false // the request's clock starts
	c.req = append(c.req[:0], "GET "...)
	c.req = append(c.req, l.t.prefix...)
	c.req = append(c.req, l.t.paths[seq]...)
	c.req = append(c.req, " HTTP/1.1\r\nHost: "...)
	c.req = append(c.req, l.t.host...)
	c.req = append(c.req, "\r\n\r\n"...) // Host only, as wrk sends and the goroutine client
	l.active++
	l.send(c, c.begin)
}

// send writes c's request, on a new connection if it has none; it must be
// answered within the timeout from now.
func (l *eventLoop) send(c *loopConn, now time.Time) {
	c.written, c.n, c.body = 0, 0, bodyStream{}
	c.deadline = now.Add(l.t.timeout)
	if c.fd < 0 {
		if err := l.dial(c); err != nil {
			l.finish(c, 0, err, false)
		}
		return
	}
	l.write(c)
}

// dial starts a non-blocking connect; connected goes on once the socket
// is writable.
func (l *eventLoop) dial(c *loopConn) error {
	addr := l.t.addr
	family := unix.AF_INET
	var sa unix.Sockaddr
	if addr.Addr().Is4() {
		sa = &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()}
	} else {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: int(addr.Port()), Addr: addr.Addr().As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return l.dialError(os.NewSyscallError("socket", err))
	}
	// as Go's net package: no Nagle delay for a small request
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	if err := unix.Connect(fd, sa); err != nil && err != unix.EINPROGRESS {
		unix.Close(fd)
		return l.dialError(os.NewSyscallError("connect", err))
	}
	if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLOUT, Fd: int32(fd)}); err != nil {
		unix.Close(fd)
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	c.fd, c.events, c.connecting, c.reused = fd, unix.EPOLLOUT, true, false
	l.byFD[fd] = c
	return nil
}

func (l *eventLoop) dialError(err error) error {
	return &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(l.t.addr), Err: err}
}

// connected: the connect has finished, well or not.
func (l *eventLoop) connected(c *loopConn) {
	c.connecting = false
	if errno, err := unix.GetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_ERROR); err != nil || errno != 0 {
		if err == nil {
			err = unix.Errno(errno)
		}
		l.closeConn(c)
		l.finish(c, 0, l.dialError(os.NewSyscallError("connect", err)), false)
		return
	}
	l.write(c)
}

// write writes what is left of c's request; the rest, if the socket takes
// only part, once it is writable again.
func (l *eventLoop) write(c *loopConn) {
	for c.written < len(c.req) {
		n, err := rawWrite(c.fd, c.req[c.written:])
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			l.watch(c, unix.EPOLLOUT)
			return
		}
		if err != nil {
			l.failSend(c, os.NewSyscallError("write", err))
			return
		}
		c.written += n
	}
	l.watch(c, unix.EPOLLIN)
}

// watch sets the one event c's connection waits for (a kept-alive
// connection waits for EPOLLIN throughout: no system call per request).
func (l *eventLoop) watch(c *loopConn, ev uint32) {
	if c.events == ev {
		return
	}
	if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_MOD, c.fd, &unix.EpollEvent{Events: ev, Fd: int32(c.fd)}); err != nil {
		l.failSend(c, fmt.Errorf("epoll_ctl: %w", err))
		return
	}
	c.events = ev
}

// read takes in what arrived and finishes the request once its answer is
// whole.
func (l *eventLoop) read(c *loopConn) {
	if c.body.active() {
		l.readStream(c)
		return
	}
	if c.n == len(c.in) {
		if len(c.in) >= maxAnswer {
			l.closeConn(c)
			l.finish(c, 0, fmt.Errorf("answer over %d MiB before its end (heads, or a chunked body)", maxAnswer>>20), false)
			return
		}
		c.in = append(c.in, make([]byte, len(c.in))...)
	}
	n, err := rawRead(c.fd, c.in[c.n:])
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		return
	case err != nil || n == 0:
		if c.n == 0 {
			// nothing of an answer came: a kept-alive connection the server
			// had closed is tried once more on a new one, as net/http does
			if c.reused && !c.retried && l.ctx.Err() == nil {
				l.closeConn(c)
				c.retried = true
				l.send(c, time.Now())
				return
			}
		}
		if err != nil {
			l.closeConn(c)
			l.finish(c, 0, os.NewSyscallError("read", err), false)
			return
		}
		c.src.eof = true
	default:
		c.n += n
	}
	c.src.b, c.src.off = c.in[:c.n], 0
	l.br.Reset(&c.src)
	// as readAnswer, but a body that needs not be held streams past
	h, err := readFinalHead(l.br)
	keep := false
	if err == nil {
		if l.startStream(c, h) {
			return
		}
		keep, err = readBody(l.br, h)
	}
	if errors.Is(err, errNeedMore) {
		c.src.eof = false
		return
	}
	l.answered(c, h.status, keep, err, c.src.off-l.br.Buffered() < c.n)
}

// answered finishes c's request with its answer; extra is whether bytes
// came after the answer, which no request asked for: they are not read as
// the next request's answer (a new connection carries that one).
func (l *eventLoop) answered(c *loopConn, status int, keep bool, err error, extra bool) {
	if err != nil || !keep || extra || c.src.eof {
		l.closeConn(c)
	} else {
		c.reused = true
	}
	c.src.eof, c.body = false, bodyStream{}
	l.finish(c, status, err, true)
}

// startStream: where h's body has a Content-Length or runs until the
// close and has not all arrived, the bytes of it that have are counted and
// the rest streams past (readStream); it returns whether it does.
func (l *eventLoop) startStream(c *loopConn, h answerHead) bool {
	if h.bodyless() || h.chunked || c.src.eof {
		return false
	}
	have := int64(l.br.Buffered() + len(c.src.b) - c.src.off) // the body's bytes so far
	if h.length >= 0 && have >= h.length {
		return false // all here: readBody takes it
	}
	c.status, c.keep = h.status, h.keep
	if h.length >= 0 {
		c.body = bodyStream{left: h.length - have}
	} else {
		c.body = bodyStream{untilClose: true}
	}
	c.n, c.src.eof = 0, false
	return true
}

// readStream counts a streaming body's bytes as they arrive, and finishes
// the request at its end.
func (l *eventLoop) readStream(c *loopConn) {
	n, err := rawRead(c.fd, l.scratch)
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		return
	case err != nil:
		l.answered(c, c.status, false, fmt.Errorf("reading body: %w", os.NewSyscallError("read", err)), false)
	case n == 0 && c.body.untilClose:
		c.src.eof = true
		l.answered(c, c.status, false, nil, false)
	case n == 0:
		c.src.eof = true
		l.answered(c, c.status, false, fmt.Errorf("reading body: %w", io.EOF), false)
	case c.body.untilClose:
	case int64(n) < c.body.left:
		c.body.left -= int64(n)
	default:
		extra := int64(n) > c.body.left
		c.body.left = 0
		l.answered(c, c.status, c.keep, nil, extra)
	}
}

// failSend: the request could not be written; a kept-alive connection the
// server had closed gets the request once more on a new one.
func (l *eventLoop) failSend(c *loopConn, err error) {
	l.closeConn(c)
	if c.reused && !c.retried && l.ctx.Err() == nil {
		c.retried = true
		l.send(c, time.Now())
		return
	}
	l.finish(c, 0, err, false)
}

// finish records c's request; the client is idle then (startIdle sends
// its next one).
func (l *eventLoop) finish(c *loopConn, status int, err error, answered bool) {
	lat := time.Since(c.begin)
	if err != nil {
		l.closeConn(c)
		if !answered {
			status = 0
		}
	}
	l.active--
	l.done.Add(1)
	out := Outcome{Status: status, Err: err}
	seq := c.seq
	c.seq, c.deadline = -1, time.Time{}
	if l.stats[c.client].record(l.ctx, l.load, Sample{Seq: seq, Client: c.client, Start: c.begin, Latency: lat,
		Outcome: out, Elapsed: c.begin.Sub(l.start) + lat}, l.observe) {
		l.idle = append(l.idle, c)
	}
}

func (l *eventLoop) closeConn(c *loopConn) {
	if c.fd < 0 {
		return
	}
	delete(l.byFD, c.fd)
	unix.Close(c.fd) // also leaves the epoll set
	c.fd, c.connecting, c.reused = -1, false, false
}

// The loop's system calls are raw: they never enter the Go runtime's
// system-call state. Through unix.EpollWait (syscall.Syscall) a wait that
// blocked for more than a sysmon tick had its processor taken away and
// another thread woken to look for work, and the returning loop had to get
// a processor back: 11,000-17,000 involuntary context switches in a
// 200,000-request replay, where h2load's one thread made 350-650 and the
// raw loop makes 800-2,600, and a p99 1.2-1.4x h2load's
// (docs/performance.md). So a loop keeps its processor while epoll_wait
// blocks; driveLoop gives the process one processor more than it has
// loops, where every other goroutine runs. A wait lasts at most loopTick,
// and the runtime's preemption signal ends it early (EINTR) when a
// garbage collection has to stop the loop.

// epollWait is epoll_wait(2) (epoll_pwait with no signal mask, which
// every architecture has) as a raw system call.
func epollWait(ep int, events []unix.EpollEvent, msec int) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(ep), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(msec), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// rawRead is read(2) as a raw system call; p must not be empty.
func rawRead(fd int, p []byte) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// rawWrite is write(2) as a raw system call; p must not be empty.
func rawWrite(fd int, p []byte) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
