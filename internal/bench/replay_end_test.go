package bench

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// silentServer accepts connections and never answers.
func silentServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var held []net.Conn
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	return "http://" + ln.Addr().String()
}

// Clients waiting for a server that never answers: the run's end stops
// them at once, and the per-request timeout holds.
func TestThreadedReplayEndsAndTimesOut(t *testing.T) {
	url := silentServer(t)
	paths := make([]string, 100)
	for i := range paths {
		paths[i] = "/standard?fen=x"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	rep, err := RunReplay(ctx, ReplayOptions{Paths: paths, Targets: []string{url}, Clients: 4, Warmup: Warmup{N: 1}, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the run's end took %v to stop clients asleep in read(2) (timeout 30s)", took)
	}
	if rep.Runs[0].StoppedEarly == "" {
		t.Error("the run was cut short but does not say so")
	}

	start = time.Now()
	rep, err = RunReplay(context.Background(), ReplayOptions{Paths: paths[:3], Targets: []string{url}, Clients: 3, Warmup: Warmup{N: 1}, Timeout: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if rep.Runs[0].Failures != 2 || !strings.Contains(rep.Runs[0].FirstError, "timed out") {
		t.Errorf("silent server: %d measured failures (%s), want 2 timeouts", rep.Runs[0].Failures, rep.Runs[0].FirstError)
	}
	if took < 350*time.Millisecond || took > 5*time.Second {
		t.Errorf("requests to a silent server took %v with --timeout 400ms", took)
	}
}
