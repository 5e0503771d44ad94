package monitor

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// Issue 12 item 8: the exporter held idle keep-alive connections for ever.
// A connection that made one request and then says nothing is closed by the
// server once IdleTimeout has passed (and not long before).
func TestServeClosesIdleKeepAlive(t *testing.T) {
	e := &Exporter{Env: Env{Root: derived(t, "balanced")}, Interval: time.Hour, TopologyEvery: time.Hour, Thresholds: DefaultThresholds()}
	srv, err := NewServer("127.0.0.1:0", e)
	if err != nil {
		t.Fatal(err)
	}
	if srv.IdleTimeout != DefaultIdleTimeout || srv.ReadHeaderTimeout != DefaultReadHeaderTimeout {
		t.Fatalf("defaults: idle %v, header %v", srv.IdleTimeout, srv.ReadHeaderTimeout)
	}
	const idle = 300 * time.Millisecond
	srv.IdleTimeout = idle
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	conn, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Close {
		t.Fatalf("status %d, close %v: want a kept-alive 200", resp.StatusCode, resp.Close)
	}
	answered := time.Now()
	// now idle: the next read must see the server close the connection
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = br.ReadByte()
	waited := time.Since(answered)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("idle keep-alive connection still open after %v (IdleTimeout %v)", waited, idle)
	}
	if !errors.Is(err, io.EOF) {
		t.Fatalf("read on the idle connection: %v, want EOF (closed by the server)", err)
	}
	if waited < idle/2 {
		t.Errorf("closed after %v, before IdleTimeout %v", waited, idle)
	}
}
