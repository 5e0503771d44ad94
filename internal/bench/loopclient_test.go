package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// scriptServer answers the i-th request it reads (over all connections)
// with answer(i, conn), which writes what it likes and reports whether the
// connection stays open.
func scriptServer(t *testing.T, answer func(i int, c net.Conn) bool) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n, conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					for {
						l, err := br.ReadBytes('\n')
						if err != nil {
							return
						}
						if bytes.Equal(l, []byte("\r\n")) {
							break
						}
					}
					if !answer(int(n.Add(1)-1), c) {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), &conns
}

// inPieces writes s a few bytes at a time with pauses, so that the client
// sees the answer arrive in many reads.
func inPieces(c net.Conn, s string) {
	for len(s) > 0 {
		k := min(3, len(s))
		c.Write([]byte(s[:k]))
		s = s[k:]
		time.Sleep(200 * time.Microsecond)
	}
}

type outcomes struct {
	mu  sync.Mutex
	got map[int64]Outcome
}

func (o *outcomes) observe(s Sample) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got[s.Seq] = s.Outcome
}

// replayBoth runs n requests for /x from one client through the event loop
// and through the goroutine client, each against its own server made by
// serve, and returns both runs' outcomes by request.
func replayBoth(t *testing.T, n int, timeout time.Duration, serve func(t *testing.T) string) (loop, gor []Outcome) {
	t.Helper()
	return replayWith(t, true, n, timeout, serve(t)), replayWith(t, false, n, timeout, serve(t))
}

// replayWith runs n requests for /x from one client against addr through
// the event loop or the goroutine client and returns their outcomes.
func replayWith(t *testing.T, useLoop bool, n int, timeout time.Duration, addr string) []Outcome {
	t.Helper()
	paths := make([]string, n)
	for i := range paths {
		paths[i] = "/x"
	}
	load := Load{Clients: 1, Requests: int64(n)}
	o := &outcomes{got: map[int64]Outcome{}}
	if useLoop {
		lt, ok := resolveLoopTarget(context.Background(), addr, addr, "", paths, timeout)
		if !ok {
			t.Fatalf("%s: no loop target", addr)
		}
		if _, err := driveLoop(context.Background(), load, lt, o.observe); err != nil {
			t.Fatal(err)
		}
	} else {
		base, _ := url.Parse("http://" + addr)
		lc := newLeanClient(base, 1, timeout)
		defer lc.close()
		if _, err := Drive(context.Background(), load, func(ctx context.Context, c int, seq int64) Outcome {
			return lc.get(ctx, c, paths[seq])
		}, o.observe); err != nil {
			t.Fatal(err)
		}
	}
	out := make([]Outcome, n)
	for i := range out {
		r, ok := o.got[int64(i)]
		if !ok {
			t.Fatalf("loop %v: request %d never finished", useLoop, i)
		}
		out[i] = r
	}
	return out
}

func summary(os []Outcome) string {
	var b strings.Builder
	for _, o := range os {
		if o.Err != nil {
			fmt.Fprintf(&b, "[%d err] ", o.Status)
		} else {
			fmt.Fprintf(&b, "[%d] ", o.Status)
		}
	}
	return b.String()
}

// The event loop reads answers as the goroutine client does: the same
// statuses and the same failures, whatever way the answers arrive.
func TestEventLoopAgreesWithTheGoroutineClient(t *testing.T) {
	const okAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
	for _, tc := range []struct {
		name   string
		answer func(i int, c net.Conn) bool
		want   string // the loop's statuses, failures marked err
		errHas string // in every failure's error
	}{
		{"in pieces", func(i int, c net.Conn) bool { inPieces(c, okAnswer); return true }, "[200] [200] [200] ", ""},
		{"chunked in pieces", func(i int, c net.Conn) bool {
			inPieces(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nwdl:\r\n3;ext=1\r\n 0}\r\n0\r\nX-Trailer: y\r\n\r\n")
			return true
		}, "[200] [200] [200] ", ""},
		{"interim answers", func(i int, c net.Conn) bool {
			c.Write([]byte("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"))
			c.Write([]byte(fmt.Sprintf("HTTP/1.1 %d X\r\nContent-Length: 0\r\n\r\n", 201+i)))
			return true
		}, "[201] [202] [203] ", ""},
		{"body until close", func(i int, c net.Conn) bool {
			inPieces(c, "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nno length, the close ends it")
			return false
		}, "[200] [200] [200] ", ""},
		{"keep-alive closed without a word", func(i int, c net.Conn) bool {
			c.Write([]byte(okAnswer))
			return false // the client finds out on its next request
		}, "[200] [200] [200] ", ""},
		{"connection: close", func(i int, c net.Conn) bool {
			c.Write([]byte("HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 2\r\n\r\nno"))
			return false
		}, "[404] [404] [404] ", ""},
		{"not HTTP", func(i int, c net.Conn) bool { c.Write([]byte("HTTX/1.1 200 OK\r\n\r\n")); return false },
			"[0 err] [0 err] [0 err] ", "not an HTTP/1.x answer"},
		{"cut short", func(i int, c net.Conn) bool {
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"))
			return false
		}, "[200 err] [200 err] [200 err] ", "reading body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loop, gor := replayBoth(t, 3, 5*time.Second, func(t *testing.T) string {
				addr, _ := scriptServer(t, tc.answer)
				return addr
			})
			if summary(loop) != tc.want {
				t.Errorf("event loop: %s, want %s", summary(loop), tc.want)
			}
			if summary(gor) != summary(loop) {
				t.Errorf("goroutine client %s, event loop %s", summary(gor), summary(loop))
			}
			for i, o := range loop {
				if o.Err != nil && !strings.Contains(o.Err.Error(), tc.errHas) {
					t.Errorf("request %d: %v, want an error naming %q", i, o.Err, tc.errHas)
				}
			}
		})
	}
}

// Bytes after an answer that no request asked for are never read as the
// next request's answer: the loop takes a new connection.
func TestEventLoopDropsAConnectionWithBytesAfterTheAnswer(t *testing.T) {
	addr, conns := scriptServer(t, func(i int, c net.Conn) bool {
		c.Write([]byte(fmt.Sprintf("HTTP/1.1 %d OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 500 Junk\r\n\r\n", 200+i)))
		return true
	})
	loop := replayWith(t, true, 3, 5*time.Second, addr)
	if summary(loop) != "[200] [201] [202] " {
		t.Errorf("event loop: %s, want [200] [201] [202]", summary(loop))
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections, want 3 (one per answer followed by junk)", n)
	}
}

// A target that refuses every connection fails every request at once,
// naming the refusal, through a long log (no recursion per request).
func TestEventLoopRefusedConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	// by name, a target none of whose addresses takes a connection is left
	// to the goroutine client, which reports each address's error
	_, port, _ := net.SplitHostPort(addr)
	if _, ok := resolveLoopTarget(context.Background(), "localhost:"+port, "localhost:"+port, "", nil, time.Second); ok {
		t.Error("localhost with nothing listening: want no loop target")
	}
	const n = 50_000
	paths := make([]string, n)
	for i := range paths {
		paths[i] = "/x"
	}
	lt, ok := resolveLoopTarget(context.Background(), addr, addr, "", paths, time.Second)
	if !ok {
		t.Fatal("no loop target")
	}
	var first atomic.Value
	res, err := driveLoop(context.Background(), Load{Clients: 4, Requests: n}, lt, func(s Sample) {
		if s.Outcome.Err != nil {
			first.CompareAndSwap(nil, s.Outcome.Err.Error())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failures != n || res.Issued != n {
		t.Errorf("%d failures of %d issued, want %d of %d", res.Failures, res.Issued, n, n)
	}
	if e, _ := first.Load().(string); !strings.Contains(e, "connection refused") || !strings.Contains(e, addr) {
		t.Errorf("error %q, want the refusal naming %s", e, addr)
	}
}

// A server that never answers: each request fails at the timeout, and
// the run's end stops the loop at once without counting failures.
func TestEventLoopTimeoutAndRunEnd(t *testing.T) {
	addr, _ := scriptServer(t, func(i int, c net.Conn) bool { time.Sleep(time.Hour); return false })
	paths := []string{"/x", "/x", "/x"}
	lt, _ := resolveLoopTarget(context.Background(), addr, addr, "", paths, 150*time.Millisecond)
	start := time.Now()
	res, err := driveLoop(context.Background(), Load{Clients: 3, Requests: 3}, lt, nil)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); res.Failures != 3 || took < 150*time.Millisecond || took > 2*time.Second {
		t.Errorf("%d failures in %v, want 3 at about 150ms (first: %s)", res.Failures, took, res.FirstError)
	}
	if !strings.Contains(res.FirstError, "timed out after 150ms") {
		t.Errorf("error %q, want the timeout", res.FirstError)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	lt.timeout = time.Minute
	start = time.Now()
	res, err = driveLoop(ctx, Load{Clients: 3, Requests: 3}, lt, nil)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second || res.Failures != 0 || res.Issued != 3 {
		t.Errorf("run end: %v, %d failures, %d issued; want ~200ms, 0 failures (the run's end), 3 issued", took, res.Failures, res.Issued)
	}
}

// More clients than one loop drives (connsPerProc): two loops, each on its
// own thread, share the log; every request is answered once, over one
// kept-alive connection per client.
func TestEventLoopShardsManyClients(t *testing.T) {
	const clients, n = connsPerProc + 44, 6000
	addr, conns := scriptServer(t, func(i int, c net.Conn) bool {
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		return true
	})
	paths := make([]string, n)
	for i := range paths {
		paths[i] = "/x"
	}
	lt, _ := resolveLoopTarget(context.Background(), addr, addr, "", paths, 10*time.Second)
	var seen sync.Map
	res, err := driveLoop(context.Background(), Load{Clients: clients, Requests: n}, lt, func(s Sample) {
		if _, dup := seen.LoadOrStore(s.Seq, true); dup {
			t.Errorf("request %d finished twice", s.Seq)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Issued != n || res.Failures != 0 || res.OK.TotalCount() != n {
		t.Errorf("issued %d, failures %d (%s), ok %d; want %d, 0, %d", res.Issued, res.Failures, res.FirstError, res.OK.TotalCount(), n, n)
	}
	if c := conns.Load(); c != clients {
		t.Errorf("%d connections for %d clients", c, clients)
	}
}

// An IPv6 target: the loop connects over AF_INET6 and sends the target's
// Host header and path prefix; a link-local address with a zone is left to
// the goroutine client (the loop's sockaddr carries no scope).
func TestEventLoopIPv6Target(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	defer ln.Close()
	var lines sync.Map
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					first, err := br.ReadString('\n')
					if err != nil {
						return
					}
					lines.Store(strings.TrimSpace(first), true)
					for {
						l, err := br.ReadString('\n')
						if err != nil {
							return
						}
						if strings.HasPrefix(l, "Host: ") {
							lines.Store(strings.TrimSpace(l), true)
						}
						if l == "\r\n" {
							break
						}
					}
					c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
				}
			}()
		}
	}()
	addr := ln.Addr().String()
	lt, ok := resolveLoopTarget(context.Background(), addr, addr, "/api", []string{"/a", "/b"}, 5*time.Second)
	if !ok || !lt.addr.Addr().Is6() {
		t.Fatalf("%s: loop target %v ok %v, want an IPv6 one", addr, lt.addr, ok)
	}
	res, err := driveLoop(context.Background(), Load{Clients: 1, Requests: 2}, lt, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK.TotalCount() != 2 || res.Failures != 0 {
		t.Errorf("%d answered, %d failures (%s); want 2, 0", res.OK.TotalCount(), res.Failures, res.FirstError)
	}
	for _, want := range []string{"GET /api/a HTTP/1.1", "GET /api/b HTTP/1.1", "Host: " + addr} {
		if _, ok := lines.Load(want); !ok {
			t.Errorf("the server never saw %q", want)
		}
	}
	if _, ok := resolveLoopTarget(context.Background(), "[fe80::1%lo]:80", "x", "", nil, time.Second); ok {
		t.Error("a zoned address: want no loop target")
	}
}

// Bodies larger than any buffer (80 MiB, with a Content-Length and until
// the close) are answers as for the goroutine client, and the loop streams
// them past: it allocates a few MiB in all, not the body.
func TestEventLoopStreamsLargeBodies(t *testing.T) {
	const size = 80 << 20
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	body := func(c net.Conn) {
		for i := 0; i < size/len(chunk); i++ {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	}
	for _, tc := range []struct {
		name   string
		answer func(i int, c net.Conn) bool
	}{
		{"content-length", func(i int, c net.Conn) bool {
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", size)
			body(c)
			return true
		}},
		{"until close", func(i int, c net.Conn) bool {
			c.Write([]byte("HTTP/1.0 200 OK\r\n\r\n"))
			body(c)
			return false
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, _ := scriptServer(t, tc.answer)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			loop := replayWith(t, true, 2, time.Minute, addr)
			runtime.ReadMemStats(&after)
			if summary(loop) != "[200] [200] " {
				t.Errorf("event loop: %s, want [200] [200] (first error: %v)", summary(loop), loop[0].Err)
			}
			if a := after.TotalAlloc - before.TotalAlloc; a > 8<<20 {
				t.Errorf("the loop allocated %d MiB for two %d MiB answers, want at most 8", a>>20, size>>20)
			}
			if gor := replayWith(t, false, 2, time.Minute, addr); summary(gor) != summary(loop) {
				t.Errorf("goroutine client %s, event loop %s", summary(gor), summary(loop))
			}
		})
	}
}

// The loop keeps its processor while it waits (raw epoll_wait), so the
// process must have another one for everything else. A target served by
// this very process shows it: on one processor its handler ran only when
// the runtime preempted the loop, about every 10 ms, and 2,000 requests
// from one client took 20 s or more; with the spare processor they take a
// fraction of a second. GOMAXPROCS is 1 before the run (as on a 1-CPU
// host), so the run must add the spare processor itself.
func TestEventLoopLeavesAProcessorForTheProcess(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("{}"))
	}))
	defer srv.Close()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const n = 2000
	addr := strings.TrimPrefix(srv.URL, "http://")
	paths := make([]string, n)
	for i := range paths {
		paths[i] = "/x"
	}
	lt, ok := resolveLoopTarget(context.Background(), addr, addr, "", paths, 10*time.Second)
	if !ok {
		t.Fatalf("no loop target for %s", addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := driveLoop(ctx, Load{Clients: 1, Requests: n}, lt, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK.TotalCount() != n || res.Failures != 0 {
		t.Fatalf("%d of %d requests answered in 10 s (%d failures: %s): the in-process server got no processor while the loop waited",
			res.OK.TotalCount(), n, res.Failures, res.FirstError)
	}
	if p := runtime.GOMAXPROCS(0); p != 1 {
		t.Errorf("GOMAXPROCS %d after the run, want the 1 it had", p)
	}
}

// An event there at the first poll is neither a hit nor a miss of the
// polling: misses go on counting through it, and spinMisses of them pause
// the polling; an event that the polling finds ends a run of misses.
func TestSpinCountsOnlyWhatThePollingFound(t *testing.T) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ep)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, p[0], &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(p[0])}); err != nil {
		t.Fatal(err)
	}
	l := &eventLoop{ep: ep}
	events := make([]unix.EpollEvent, 4)
	spin := func() int {
		t.Helper()
		n, err := l.spin(events)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	ready := func(yes bool) {
		t.Helper()
		if yes {
			unix.Write(p[1], []byte{1})
			return
		}
		unix.Read(p[0], make([]byte, 16))
	}
	for i := 1; i < spinMisses; i++ {
		if spin() != 0 || l.spinMissed != i {
			t.Fatalf("after %d empty spins: spinMissed %d", i, l.spinMissed)
		}
	}
	ready(true)
	if spin() != 1 || l.spinMissed != spinMisses-1 {
		t.Fatalf("an event there at once: spinMissed %d, want %d kept", l.spinMissed, spinMisses-1)
	}
	ready(false)
	if spin() != 0 || l.spinPaused != spinPause || l.spinMissed != 0 {
		t.Fatalf("miss %d: spinPaused %d, spinMissed %d; want %d and 0", spinMisses, l.spinPaused, l.spinMissed, spinPause)
	}
	// paused: one poll, no wait, and the pause counts down. A spin that
	// polled would take loopSpin every time; one that does not is quicker
	// at least once in 20 (a single one may be descheduled on a loaded
	// machine)
	fastest := time.Duration(math.MaxInt64)
	for i := 1; i <= 20; i++ {
		start := time.Now()
		if spin() != 0 || l.spinPaused != spinPause-i || l.spinMissed != 0 {
			t.Fatalf("paused spin %d: spinPaused %d, spinMissed %d; want %d and 0", i, l.spinPaused, l.spinMissed, spinPause-i)
		}
		fastest = min(fastest, time.Since(start))
	}
	if fastest >= loopSpin {
		t.Errorf("the quickest of 20 paused spins took %s, at least loopSpin %s: they polled", fastest, loopSpin)
	}
	// polling that finds an event (a timer that fires while it polls) ends
	// the misses; on a loaded machine the timer may fire before the first
	// poll, or the loop be descheduled past its window: then try again,
	// with the timer at another point of the window, for up to 5 s (a
	// full `go test ./...` on 2 CPUs failed 100 tries at loopSpin/3)
	tfd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(tfd)
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, tfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(tfd)}); err != nil {
		t.Fatal(err)
	}
	ready(false)
	l.spinPaused = 0
	deadline := time.Now().Add(5 * time.Second)
	for attempt := 0; ; attempt++ {
		if time.Now().After(deadline) {
			t.Fatalf("in %d tries over 5 s the timer never fired while the loop polled", attempt)
		}
		unix.Read(tfd, make([]byte, 8))
		l.spinMissed = 2
		at := loopSpin * time.Duration(1+attempt%5) / 6 // 1/6 to 5/6 of the window
		in := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(at))}
		if err := unix.TimerfdSettime(tfd, 0, &in, nil); err != nil {
			t.Fatal(err)
		}
		n := spin()
		if n == 1 && l.spinMissed == 0 {
			break
		}
		if !(n == 1 && l.spinMissed == 2) && !(n == 0 && l.spinMissed == 3) {
			t.Fatalf("spin found %d events, spinMissed %d: want 1 and 0 (found by polling), 1 and 2 (there at once) or 0 and 3 (a miss)", n, l.spinMissed)
		}
		time.Sleep(time.Millisecond)
	}
}
