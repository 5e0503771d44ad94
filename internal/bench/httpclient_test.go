package bench

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestReadAnswer(t *testing.T) {
	for _, c := range []struct {
		name, in string
		status   int
		keep     bool
		rest     string // what must remain unread (the next answer)
		bad      bool
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloNEXT", 200, true, "NEXT", false},
		{"chunked+trailer", "HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\nNEXT", 500, true, "NEXT", false},
		{"close", "HTTP/1.1 404 Not Found\r\nconnection: Close\r\ncontent-length: 2\r\n\r\nnoNEXT", 404, false, "NEXT", false},
		{"http/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\nNEXT", 200, false, "NEXT", false},
		{"http/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nxNEXT", 200, true, "NEXT", false},
		{"no content", "HTTP/1.1 204 No Content\r\n\r\nNEXT", 204, true, "NEXT", false},
		{"until close", "HTTP/1.1 200 OK\r\n\r\neverything", 200, false, "", false},
		{"garbage", "SSH-2.0-OpenSSH\r\n", 0, false, "", true},
		{"truncated", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 200, false, "", true},
	} {
		br := bufio.NewReader(strings.NewReader(c.in))
		status, keep, err := readAnswer(br)
		if (err != nil) != c.bad || status != c.status || (!c.bad && keep != c.keep) {
			t.Errorf("%s: status %d keep %v err %v", c.name, status, keep, err)
			continue
		}
		if !c.bad {
			rest := make([]byte, 16)
			n, _ := br.Read(rest)
			if string(rest[:n]) != c.rest {
				t.Errorf("%s: left %q unread, want %q", c.name, rest[:n], c.rest)
			}
		}
	}
}

// Against Go's own server: chunked bodies, keep-alive reuse, and a server
// that drops idle connections (the stale connection is retried once).
func TestLeanClientAgainstNetHTTP(t *testing.T) {
	big := strings.Repeat("x", 10000)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("fen") != "8/8 w" || r.Host == "" {
			http.Error(w, "bad request line", 400)
			return
		}
		w.Write([]byte(big[:1])) // flushes below: chunked
		w.(http.Flusher).Flush()
		w.Write([]byte(big))
	}))
	srv.Config.IdleTimeout = 50 * time.Millisecond
	srv.Start()
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	lc := newLeanClient(u, 1, 2*time.Second)
	defer lc.close()
	for i := 0; i < 5; i++ {
		out := lc.get(context.Background(), 0, "/standard?fen=8%2F8+w")
		if out.Err != nil || out.Status != 200 {
			t.Fatalf("request %d: %+v", i, out)
		}
		if i == 2 {
			time.Sleep(150 * time.Millisecond) // the server closes the idle connection
		}
	}
	// a run that ends aborts what is in flight
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hang.Close()
	hu, _ := url.Parse(hang.URL)
	hc := newLeanClient(hu, 1, 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, hc.abort)
	defer stop()
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	start := time.Now()
	out := hc.get(ctx, 0, "/")
	if out.Err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("abort: %+v after %s", out, time.Since(start))
	}
}

// An IP-literal target and a host name (localhost) are both dialled, and
// both send the URL's host as Host.
func TestLeanClientDialsIPLiteralAndHostName(t *testing.T) {
	hosts := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hosts <- r.Host
		w.Write([]byte("{}"))
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	for _, base := range []string{srv.URL, "http://localhost:" + u.Port()} {
		bu, _ := url.Parse(base)
		lc := newLeanClient(bu, 1, 2*time.Second)
		out := lc.get(context.Background(), 0, "/standard")
		lc.close()
		if out.Err != nil || out.Status != 200 {
			t.Fatalf("%s: %+v", base, out)
		}
		if h := <-hosts; h != bu.Host {
			t.Errorf("%s: Host %q, want %q", base, h, bu.Host)
		}
	}
}
