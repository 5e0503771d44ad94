package bench

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

// validTarget reports whether p may be written into a request line as an
// origin-form request-target: it starts with "/" and holds only the bytes
// RFC 3986 allows in a path and query, with "%" only as a %XX escape.
func validTarget(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case targetByte(c):
		case c == '%' && i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]):
		default:
			return false
		}
	}
	return true
}

// FuzzReadLog: a production log is user-controlled. Whatever it holds,
// every request ReadLog returns is a valid request-target (no CR, LF,
// space, control or non-ASCII byte reaches the server), there is at most
// one request per input line, and escaping is idempotent.
func FuzzReadLog(f *testing.F) {
	f.Add([]byte("8/8/8/8/8/8/8/K1k5 w - - 0 1\n/standard?fen=4k3/8/8/8/8/8/8/4K3_w_-_-_0_1\n"))
	f.Add([]byte("https://tablebase.lichess.ovh/standard?fen=8/8/8/8/8/8/8/K1k5%20w%20-%20-\n# c\n\n"))
	f.Add([]byte("/p HTTP/1.1\rHost: evil\n"))
	f.Add([]byte("/\xff\xfe%zz%4\x00 \t\n"))
	f.Add([]byte("http://[::1\n"))
	f.Add([]byte("http://h/a#frag?x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ReadLog(bytes.NewReader(b))
		if err != nil {
			return
		}
		if lines := bytes.Count(b, []byte("\n")) + 1; len(l.Paths) == 0 || len(l.Paths) > lines {
			t.Fatalf("%d requests from %d lines", len(l.Paths), lines)
		}
		if l.Escaped < 0 || l.Escaped > len(l.Paths) {
			t.Fatalf("Escaped = %d of %d requests", l.Escaped, len(l.Paths))
		}
		for _, p := range l.Paths {
			if !validTarget(p) {
				t.Fatalf("request-target %q may not be sent", p)
			}
			if e := EscapeTarget(p); e != p {
				t.Fatalf("an escaped target changes when escaped again: %q -> %q", p, e)
			}
		}
	})
}

// FuzzEscapeTarget: the result of escaping anything is valid after a
// leading "/", idempotent, and unchanged for input that was already valid.
func FuzzEscapeTarget(f *testing.F) {
	f.Add("/standard?fen=8/8/8/8/8/8/8/K1k5_w_-_-_0_1")
	f.Add("/a b\r\nHost: evil")
	f.Add("/%%41%4g%")
	f.Add("/\x80\xff")
	f.Fuzz(func(t *testing.T, p string) {
		e := EscapeTarget(p)
		if !validTarget("/" + e) {
			t.Fatalf("EscapeTarget(%q) = %q is not a valid target", p, e)
		}
		if again := EscapeTarget(e); again != e {
			t.Fatalf("not idempotent: %q -> %q -> %q", p, e, again)
		}
		if validTarget("/"+p) && e != p {
			t.Fatalf("a valid target was changed: %q -> %q", p, e)
		}
	})
}

// FuzzReadAnswer: a lying or broken server. readAnswer never panics,
// returns only final statuses (200-599) without error, and the end of an
// answer it keeps the connection for does not depend on what follows it
// (it never reads into the next answer): the same bytes followed by a
// second answer give the same status and the same length consumed.
func FuzzReadAnswer(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"))
	f.Add([]byte("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX: y\r\n\r\n"))
	f.Add([]byte("HTTP/1.0 200 OK\r\n\r\nbody until close"))
	f.Add([]byte("HTTP/1.1 101 Switching Protocols\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 999 Nope\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\nshort"))
	f.Add([]byte("HTTP/1.1 204 No Content\r\nConnection: keep-alive\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		read := func(in []byte) (status int, keep bool, consumed int64, err error) {
			r := bytes.NewReader(in)
			br := bufio.NewReaderSize(r, 4096)
			status, keep, err = readAnswer(br)
			return status, keep, r.Size() - int64(r.Len()) - int64(br.Buffered()), err
		}
		status, keep, n, err := read(b)
		if err != nil {
			return
		}
		if status < 200 || status > 599 {
			t.Fatalf("final status %d returned without error", status)
		}
		if n > int64(len(b)) {
			t.Fatalf("consumed %d of %d bytes", n, len(b))
		}
		if !keep {
			return
		}
		const next = "HTTP/1.1 204 No Content\r\n\r\n"
		status2, keep2, n2, err := read(append(append([]byte{}, b[:n]...), next...))
		if err != nil || status2 != status || !keep2 || n2 != n {
			t.Fatalf("followed by another answer: status %d->%d keep %v n %d->%d err %v", status, status2, keep2, n, n2, err)
		}
	})
}
