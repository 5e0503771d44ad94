package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/stracetest"
)

const dialHelperEnv = "TBHOST_BENCH_DIAL_HELPER_URL"

// TestHelperReplayDials is not a test: run by TestDialDoesNotBind under
// strace, it sends 20 requests through the replay's goroutine client and
// 20 through its event loop to a server that closes every connection, so
// it dials 40 times.
func TestHelperReplayDials(t *testing.T) {
	target := os.Getenv(dialHelperEnv)
	if target == "" {
		t.Skip("helper process for TestDialDoesNotBind")
	}
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	lc := newLeanClient(u, 1, 5*time.Second)
	defer lc.close()
	for i := 0; i < 20; i++ {
		if out := lc.get(context.Background(), 0, "/standard"); out.Failed() {
			t.Fatalf("request %d: %+v", i, out)
		}
	}
	paths := make([]string, 20)
	for i := range paths {
		paths[i] = "/standard"
	}
	rep, err := RunReplay(context.Background(), ReplayOptions{Paths: paths, Targets: []string{target}, Clients: 1, Warmup: Warmup{N: 1}, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Runs[0]; r.Failures > 0 {
		t.Fatalf("event loop: %d failures: %s", r.Failures, r.FirstError)
	}
}

// The replay's client connects without binding first. A bind to port 0
// must find a port no socket holds, TIME_WAIT ones included, while connect
// may reuse a TIME_WAIT port: against a server that closes every
// connection (python3 -m http.server), Dialer.DialTCP with a zero local
// address bound every socket, and after ~28,000 connections in a minute
// the replay fell to 120-760 requests/s where wrk kept ~1,300. Watched with
// strace (skips without it): the 40 dials of the helper (goroutine client
// and event loop) make 40 connects to the server's port and no bind.
func TestDialDoesNotBind(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		w.Write([]byte("{}\n"))
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	for _, target := range []string{srv.URL, "http://localhost:" + u.Port()} {
		calls := stracetest.Trace(t, "bind,connect", "TestHelperReplayDials", dialHelperEnv+"="+target)
		connects := regexp.MustCompile(fmt.Sprintf(`connect\(\d+, \{sa_family=AF_INET6?, sin6?_port=htons\(%s\)`, u.Port())).FindAll(calls, -1)
		binds := regexp.MustCompile(`\bbind\(`).FindAll(calls, -1)
		if len(connects) < 40 {
			t.Fatalf("%s: %d connects to port %s traced, want at least 40 (one per request):\n%s", target, len(connects), u.Port(), calls)
		}
		if len(binds) != 0 {
			t.Errorf("%s: %d binds for %d connects, want none (a bound socket cannot take a TIME_WAIT port):\n%s", target, len(binds), len(connects), calls)
		}
	}
}
