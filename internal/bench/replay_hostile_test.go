package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawServer is a loopback HTTP/1.1 server that records the raw bytes of
// every request head it gets and answers the i-th request with answer(i).
type rawServer struct {
	ln     net.Listener
	mu     sync.Mutex
	heads  [][]byte
	answer func(i int) string
}

func newRawServer(t *testing.T, answer func(i int) string) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln, answer: answer}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *rawServer) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		var head []byte
		for {
			l, err := br.ReadBytes('\n')
			head = append(head, l...)
			if err != nil {
				return
			}
			if bytes.Equal(l, []byte("\r\n")) || bytes.Equal(l, []byte("\n")) {
				break
			}
		}
		s.mu.Lock()
		i := len(s.heads)
		s.heads = append(s.heads, head)
		s.mu.Unlock()
		if _, err := c.Write([]byte(s.answer(i))); err != nil {
			return
		}
	}
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() }

func (s *rawServer) got() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.heads...)
}

// Issue 12 defect 7: log lines were written verbatim into the request line.
func TestReplayNeverSendsCRLFSpaceOrControlBytes(t *testing.T) {
	srv := newRawServer(t, func(int) string { return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" })
	hostile := strings.Join([]string{
		"/p HTTP/1.1\rHost: evil",
		"/p?fen=8/8/8/8/8/8/8/KRk5 w - - 0 1",
		"/caf\xe9\xff?x=\x00\x7f",
		"/a%zz%4g%41#frag",
		"http://example.org/q?a=b c\td",
		"/fine?fen=8/8/8/8/8/8/8/KRk5_w_-_-_0_1",
	}, "\n")
	log, err := ReadLog(strings.NewReader(hostile))
	if err != nil {
		t.Fatal(err)
	}
	if log.Escaped != 5 {
		t.Errorf("%d lines counted as escaped, want 5: %q", log.Escaped, log.Paths)
	}
	if _, err := RunReplay(context.Background(), ReplayOptions{Paths: log.Paths, Targets: []string{srv.url()}, Clients: 1, Timeout: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	heads := srv.got()
	if len(heads) != len(log.Paths) {
		t.Fatalf("server got %d requests, want %d (an injected line would split or merge them): %q", len(heads), len(log.Paths), heads)
	}
	requestLine := regexp.MustCompile(`^GET /[!-~]* HTTP/1\.1\r\n`)
	for i, h := range heads {
		if !requestLine.Match(h) {
			t.Errorf("request %d: request line %q holds bytes outside visible ASCII", i, strings.SplitN(string(h), "\n", 2)[0])
		}
		if n := bytes.Count(bytes.ToLower(h), []byte("\nhost:")); n != 1 || bytes.Contains(h, []byte("evil")) && !bytes.Contains(h, []byte("%0DHost:%20evil")) {
			t.Errorf("request %d: %d Host headers or an injected one: %q", i, n, h)
		}
		if bytes.Count(h, []byte("\r")) != bytes.Count(h, []byte("\n")) {
			t.Errorf("request %d: a bare CR or LF: %q", i, h)
		}
		target := strings.Fields(string(h))[1]
		if _, err := url.ParseRequestURI(target); err != nil {
			t.Errorf("request %d: %q is not a valid request-target: %v", i, target, err)
		}
	}
	// what was valid stays exactly as logged
	last := strings.Fields(string(heads[len(heads)-1]))[1]
	if last != "/fine?fen=8/8/8/8/8/8/8/KRk5_w_-_-_0_1" {
		t.Errorf("a valid path was rewritten: %q", last)
	}
	// a valid escape is kept, a stray % is escaped, and decoding gives back the line
	if got := EscapeTarget("/a%zz%4g%41#frag"); got != "/a%25zz%254g%41%23frag" {
		t.Errorf("EscapeTarget: %q", got)
	}
}

func TestReplayRefusesPathsNotStartingWithSlash(t *testing.T) {
	_, err := RunReplay(context.Background(), ReplayOptions{Paths: []string{"p HTTP/1.1"}, Targets: []string{"http://127.0.0.1:1"}, Clients: 1, Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "does not start with /") {
		t.Fatalf("got %v", err)
	}
}

// Issue 12 defect 7: 100 Continue desynchronised the client: the interim
// answer was taken for the answer, and the real one for the next request's.
func TestLeanClientSkipsInterimAnswers(t *testing.T) {
	srv := newRawServer(t, func(i int) string {
		switch i {
		case 0:
			return "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\nabc"
		default:
			return fmt.Sprintf("HTTP/1.1 %d X\r\nContent-Length: 0\r\n\r\n", 202+i)
		}
	})
	base, _ := url.Parse(srv.url())
	lc := newLeanClient(base, 1, 5*time.Second)
	defer lc.close()
	var got []int
	for i := 0; i < 3; i++ {
		o := lc.get(context.Background(), 0, "/x")
		if o.Err != nil {
			t.Fatalf("request %d: %v", i, o.Err)
		}
		got = append(got, o.Status)
	}
	if fmt.Sprint(got) != "[201 203 204]" {
		t.Fatalf("statuses %v, want [201 203 204]: the client is out of step with the server", got)
	}
	if n := len(srv.got()); n != 3 {
		t.Fatalf("server saw %d requests, want 3", n)
	}
}

func TestReadAnswerRejectsStatusesOutside100To599(t *testing.T) {
	for _, ans := range []string{
		"HTTP/1.1 000 Zero\r\n\r\n",
		"HTTP/1.1 099 Low\r\n\r\n",
		"HTTP/1.1 600 High\r\n\r\n",
		"HTTP/1.1 999 High\r\n\r\n",
		"HTTP/1.1 -12 Neg\r\n\r\n",
		"HTTP/1.1 +20 Plus\r\n\r\n",
		"HTTP/1.1 2000 Long\r\n\r\n",
		"HTTP/1.1 101 Switching Protocols\r\n\r\n",
		"HTTP/1.2 200 OK\r\n\r\n",
		strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", maxInterim+2) + "HTTP/1.1 200 OK\r\n\r\n",
	} {
		if st, _, err := readAnswer(bufio.NewReader(strings.NewReader(ans))); err == nil {
			t.Errorf("%.40q accepted as status %d", ans, st)
		}
	}
	for ans, want := range map[string]int{
		"HTTP/1.1 599 Edge\r\nContent-Length: 0\r\n\r\n": 599,
		"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n":      200,
		"HTTP/1.0 404 Not Found\r\n\r\nbody":             404,
	} {
		if st, _, err := readAnswer(bufio.NewReader(strings.NewReader(ans))); err != nil || st != want {
			t.Errorf("%.40q: %d %v, want %d", ans, st, err, want)
		}
	}
}
