package monitor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves the exporter's metrics (plus the Go and process
// collectors) on /metrics and a short page on /.
func Handler(e *Exporter) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(e, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "tbhost monitor exporter: metrics on /metrics")
	})
	return mux
}

// Timeouts of the exporter's connections. A client has ReadHeaderTimeout
// to send a request's headers; a keep-alive connection with no request for
// IdleTimeout is closed (Prometheus scrapes every 15 s to 1 min and
// reconnects at no cost, while idle connections held for ever pile up).
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
)

// Server is the exporter's HTTP server, listening already.
type Server struct {
	ln  net.Listener
	exp *Exporter
	// ReadHeaderTimeout and IdleTimeout, set by NewServer to the defaults
	// above; change them before Serve (tests use short ones).
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
}

// NewServer listens on addr (host:port; port 0 picks one).
func NewServer(addr string, e *Exporter) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w (is another exporter running? pick another --listen)", addr, err)
	}
	return &Server{ln: ln, exp: e, ReadHeaderTimeout: DefaultReadHeaderTimeout, IdleTimeout: DefaultIdleTimeout}, nil
}

// Addr is the address it listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve samples in the background and serves until ctx is done.
func (s *Server) Serve(ctx context.Context) error {
	srv := &http.Server{Handler: Handler(s.exp), ReadHeaderTimeout: orDuration(s.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		IdleTimeout: orDuration(s.IdleTimeout, DefaultIdleTimeout)}
	done := make(chan error, 1)
	go func() { done <- s.exp.Run(ctx) }()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	err := srv.Serve(s.ln)
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func orDuration(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
