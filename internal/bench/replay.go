package bench

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Log is a request log read by ReadLog.
type Log struct {
	Paths []string // request targets, safe to write into a request line
	// Escaped counts the lines whose path held bytes a request-target may
	// not (space, CR, control characters, non-ASCII, a stray %); they were
	// percent-encoded, never sent verbatim.
	Escaped int
	// Offsets, for a timed log (every request line has a timestamp), is
	// each request's time after the first one's; nil for an untimed log.
	Offsets []time.Duration
	// Disordered counts timed lines earlier than the line before them
	// (servers log a request when it ends): sent right after it instead.
	Disordered int
	// Skipped counts access-log lines of other methods than GET and HEAD.
	Skipped int
}

// ReadLog reads a request log, one request per line, in one of these forms
// (blank lines and lines starting with # are skipped):
//
//	8/8/8/8/8/8/8/KRk5 w - - 0 1                 a FEN: GET /standard?fen=...
//	/standard?fen=...                            a request target
//	https://tablebase.lichess.ovh/standard?...   a URL: its path and query
//
// or, with the time each request was made (a timed log, replayed at its
// own pace by bench replay):
//
//	1733061558.123 /standard?fen=...             nginx $msec, then a target, URL or FEN
//	2026-12-01T13:59:18.123Z /standard?fen=...   RFC 3339 time ($time_iso8601), then the same
//	127.0.0.1 - - [01/Dec/2026:13:59:18 +0000] "GET /standard?fen=... HTTP/1.1" 200 ...
//	                                             the combined/common access log format of
//	                                             nginx and Apache ($time_local; fractions of
//	                                             a second allowed); methods other than GET
//	                                             and HEAD are skipped
//
// A log is timed or not as a whole. A production log is user-controlled
// input: every path is made a valid origin-form request-target (RFC 9112
// 3.2.1, RFC 3986), so no CR, LF, space or control byte ever reaches the
// server.
func ReadLog(r io.Reader) (Log, error) {
	var l Log
	var times []time.Time
	timed := -1 // unknown until the first request line
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		when, rest, isTimed, skip, err := splitTime(s)
		if err != nil {
			return Log{}, fmt.Errorf("line %d: %w", line, err)
		}
		if skip {
			l.Skipped++
			continue
		}
		switch {
		case timed == -1 && isTimed:
			timed = 1
		case timed == -1:
			timed = 0
		case (timed == 1) != isTimed:
			return Log{}, fmt.Errorf("line %d: %.80q: a log is timed on every line or on none (the first request line decided: timed %v)", line, s, timed == 1)
		}
		target, escaped, err := requestTarget(rest)
		if err != nil {
			return Log{}, fmt.Errorf("line %d: %w", line, err)
		}
		if escaped {
			l.Escaped++
		}
		l.Paths = append(l.Paths, target)
		if isTimed {
			times = append(times, when)
		}
	}
	if err := sc.Err(); err != nil {
		return Log{}, fmt.Errorf("line %d: %w", line+1, err)
	}
	if len(l.Paths) == 0 {
		return Log{}, errors.New("no requests in the log (empty, or only comments)")
	}
	if timed == 1 {
		l.Offsets = make([]time.Duration, len(times))
		for i, t := range times {
			d := t.Sub(times[0])
			if i > 0 && d < l.Offsets[i-1] {
				d = l.Offsets[i-1]
				l.Disordered++
			}
			l.Offsets[i] = d
		}
		if span := l.Offsets[len(l.Offsets)-1]; span > 31*24*time.Hour {
			return Log{}, fmt.Errorf("the log's timestamps span %s: more than a month (a wrong field read as time?)", span)
		}
	}
	return l, nil
}

// requestTarget turns a log entry (FEN, target or URL) into a safe request-target.
func requestTarget(s string) (target string, escaped bool, err error) {
	switch {
	case strings.HasPrefix(s, "/"):
		e := EscapeTarget(s)
		return e, e != s, nil
	case strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://"):
		e := EscapeTarget(s) // url.Parse refuses control bytes; escape them like a path's
		u, err := url.Parse(e)
		if err != nil {
			return "", false, err
		}
		t := u.RequestURI()
		return EscapeTarget(t), e != s, nil
	default:
		if strings.Count(s, "/") != 7 {
			return "", false, fmt.Errorf("%.80q is neither a FEN (8 ranks separated by /) nor a URL path starting with /", s)
		}
		return "/standard?fen=" + url.QueryEscape(s), false, nil
	}
}

var (
	msecRE     = regexp.MustCompile(`^([0-9]{9,11})(?:\.([0-9]{1,9}))?\s+(.+)$`)
	accessRE   = regexp.MustCompile(`^\S+ \S+ \S+ \[([^\]]+)\] "([A-Z]+) (\S+)(?: [^"]*)?"`)
	rfc3339Pre = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T\S+\s+`)
)

// splitTime takes the timestamp off a timed line: it returns the time, the
// rest (the request), whether the line was timed, and whether it is an
// access-log line to skip (another method).
func splitTime(s string) (when time.Time, rest string, timed, skip bool, err error) {
	if m := accessRE.FindStringSubmatch(s); m != nil {
		t, err := parseAccessTime(m[1])
		if err != nil {
			return time.Time{}, "", false, false, err
		}
		if m[2] != "GET" && m[2] != "HEAD" {
			return t, "", true, true, nil
		}
		return t, m[3], true, false, nil
	}
	if m := msecRE.FindStringSubmatch(s); m != nil && !strings.Contains(m[1], "/") {
		sec, _ := strconv.ParseInt(m[1], 10, 64)
		var ns int64
		if m[2] != "" {
			frac := (m[2] + "000000000")[:9]
			ns, _ = strconv.ParseInt(frac, 10, 64)
		}
		return time.Unix(sec, ns), strings.TrimSpace(m[3]), true, false, nil
	}
	if loc := rfc3339Pre.FindStringIndex(s); loc != nil {
		field := strings.TrimSpace(s[:loc[1]])
		t, err := time.Parse(time.RFC3339Nano, field)
		if err != nil {
			return time.Time{}, "", false, false, fmt.Errorf("timestamp %q: want RFC 3339 (2026-12-01T13:59:18.123Z): %w", field, err)
		}
		return t, strings.TrimSpace(s[loc[1]:]), true, false, nil
	}
	return time.Time{}, s, false, false, nil
}

// parseAccessTime reads $time_local: 01/Dec/2026:13:59:18 +0000, with an
// optional fraction of a second (01/Dec/2026:13:59:18.123 +0000).
func parseAccessTime(v string) (time.Time, error) {
	for _, layout := range []string{"02/Jan/2006:15:04:05 -0700", "02/Jan/2006:15:04:05.999999999 -0700"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("access log time [%.40s]: want [01/Dec/2026:13:59:18 +0000]", v)
}

// EscapeTarget returns p with every byte that may not appear in an
// origin-form request-target percent-encoded: what RFC 3986 allows in a
// path and query (unreserved, sub-delims, ":", "@", "/", "?") and valid
// %XX escapes stay, everything else (space, CTL, DEL, non-ASCII, "#",
// quotes, brackets, a "%" not followed by two hex digits) becomes %XX.
func EscapeTarget(p string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if targetByte(c) || c == '%' && i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]) {
			if b.Cap() > 0 {
				b.WriteByte(c)
			}
			continue
		}
		if b.Cap() == 0 {
			b.Grow(len(p) + 16)
			b.WriteString(p[:i])
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	if b.Cap() == 0 {
		return p
	}
	return b.String()
}

func targetByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@/?", c) >= 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// Warmup is a warm-up given as a count ("800000") or as a share of the log
// ("80%").
type Warmup struct {
	N       int64
	Percent float64 // used when >= 0 and N < 0
}

// ParseWarmup reads the --warmup flag.
func ParseWarmup(s string) (Warmup, error) {
	if p, ok := strings.CutSuffix(strings.TrimSpace(s), "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f < 0 || f >= 100 {
			return Warmup{}, fmt.Errorf("--warmup %q: want a count (800000) or a share of the requests below 100%% (80%%)", s)
		}
		return Warmup{N: -1, Percent: f}, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 {
		return Warmup{}, fmt.Errorf("--warmup %q: want a count (800000) or a share of the requests (80%%)", s)
	}
	return Warmup{N: n}, nil
}

// Of returns the number of warm-up requests out of total.
func (w Warmup) Of(total int64) int64 {
	if w.N >= 0 {
		return w.N
	}
	return int64(float64(total) * w.Percent / 100)
}

func (w Warmup) String() string {
	if w.N >= 0 {
		return strconv.FormatInt(w.N, 10)
	}
	return strconv.FormatFloat(w.Percent, 'g', -1, 64) + "%"
}

// ReplayOptions is a bench replay run.
type ReplayOptions struct {
	Paths      []string // from ReadLog
	Targets    []string // base URLs, e.g. http://127.0.0.1:9090
	Clients    int
	Warmup     Warmup
	Rate       float64
	Timeout    time.Duration // per request
	goroutines bool          // tests: the goroutine clients (netpoller), for comparison
	// Names, if set, name the targets in the report (--target old=URL), one
	// per target; a target without a name is named by its URL.
	Names []string
	// Failures receives one CSV line per failed request (warm-up included).
	Failures *CSVSink
	// Raw, when set, receives one CSV line per request (latencies.csv).
	Raw *CSVSink
	// Progress, when set, is told about each target's start and, about
	// once a second, its finished requests.
	Progress func(target string, done, total int64)

	// Schedule, when set, is the intended send time of each request after
	// the start (a timed log's Offsets divided by the speed); Speed is that
	// speed, for the report.
	Schedule []time.Duration
	Speed    float64
}

// FailureHeader is the CSV columns of the failures file.
func FailureHeader() []string {
	return []string{"target", "seq", "path", "status", "error", "latency_ms", "warmup"}
}

// RawHeader is the CSV columns of latencies.csv.
func RawHeader() []string {
	return []string{"run", "seq", "client", "start_ms", "latency_ms", "status", "failed", "warmup"}
}

// connsPerProc is how many replay connections one Go processor (and one
// event loop, loopclient.go) drives: a request costs the harness a few
// microseconds of CPU (write, read, parse), so one processor keeps a couple
// of hundred connections busy at the rates a tablebase server answers.
const connsPerProc = 256

// procsFor is how many processors (and event loops) a replay of clients
// connections gets: one per connsPerProc, at least one.
func procsFor(clients int) int { return 1 + (clients-1)/connsPerProc }

// replayProcs lowers GOMAXPROCS for a replay to one processor per
// connsPerProc connections (at least one; never raised) and returns the
// function that restores it, for a run of the goroutine clients (https,
// --rate, timed logs); the event loops' run sets its own, one processor per
// loop and one more (driveLoop). More processors than the
// connections need do not make requests faster: idle ones spin looking for
// the next ready connection and wake each other, CPU that a server on the
// same host (the pre-cutover replay runs on the tablebase host) loses.
// Measured against wrk on the 2-CPU test machine, 12 connections: 1
// processor 0.92-1.0x wrk's rate, 2 processors 0.80-0.94x
// (BenchmarkRatioReplayVsWrk).
func replayProcs(clients int) (restore func()) {
	prev := runtime.GOMAXPROCS(0)
	if want := procsFor(clients); want < prev {
		runtime.GOMAXPROCS(want)
		return func() { runtime.GOMAXPROCS(prev) }
	}
	return func() {}
}

// RunReplay replays the log against every target in turn, the same
// requests in the same order, and returns one run per target.
func RunReplay(ctx context.Context, o ReplayOptions) (*Report, error) {
	if len(o.Targets) == 0 {
		return nil, errors.New("no --target given")
	}
	if o.Timeout <= 0 {
		return nil, fmt.Errorf("--timeout %s: must be positive", o.Timeout)
	}
	// Paths are input (ReadLog makes them safe; a library caller may not
	// have): never write a byte into the request line that does not belong.
	paths := make([]string, len(o.Paths))
	for i, p := range o.Paths {
		if !strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("request %d: path %.80q does not start with /", i, p)
		}
		paths[i] = EscapeTarget(p)
	}
	o.Paths = paths
	bases := make([]*url.URL, len(o.Targets))
	for i, t := range o.Targets {
		u, err := url.Parse(t)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
			return nil, fmt.Errorf("--target %q: want a base URL such as http://127.0.0.1:9090", t)
		}
		bases[i] = u
	}
	load := Load{Clients: o.Clients, Requests: int64(len(o.Paths)), Warmup: o.Warmup.Of(int64(len(o.Paths))), Rate: o.Rate, Schedule: o.Schedule}
	if err := load.Validate(); err != nil {
		if load.Warmup >= load.Requests {
			return nil, fmt.Errorf("--warmup %s is %d of the log's %d requests: nothing left to measure; lower --warmup (e.g. 80%%)", o.Warmup, load.Warmup, load.Requests)
		}
		return nil, err
	}
	rep := &Report{Command: "replay", Started: time.Now().UTC(), Clients: o.Clients, Rate: o.Rate}
	if o.Schedule != nil {
		rep.Speed = o.Speed
	}
	for i, base := range bases {
		if o.Progress != nil {
			name := o.Targets[i]
			o.Progress(name, 0, load.Requests)
			load.Progress = func(done, total int64) { o.Progress(name, done, total) }
		}
		client := newLeanClient(base, o.Clients, o.Timeout)
		prefix := strings.TrimSuffix(base.EscapedPath(), "/") // a target may live under a path
		observe := func(s Sample) {
			if s.Outcome.Failed() && o.Failures != nil {
				o.Failures.Write(o.Targets[i], strconv.FormatInt(s.Seq, 10), o.Paths[s.Seq], strconv.Itoa(s.Outcome.Status),
					errString(s.Outcome.Err), msString(s.Latency), strconv.FormatBool(s.Warmup))
			}
			if o.Raw != nil {
				o.Raw.Write(o.Targets[i], strconv.FormatInt(s.Seq, 10), strconv.Itoa(s.Client), msString(s.Elapsed-s.Latency),
					msString(s.Latency), strconv.Itoa(s.Outcome.Status), strconv.FormatBool(s.Outcome.Failed()), strconv.FormatBool(s.Warmup))
			}
		}
		var res *Result
		var err error
		// closed loop over plain HTTP: the event loops (loopclient.go)
		var lt loopTarget
		loop := base.Scheme == "http" && load.Rate == 0 && load.Schedule == nil && !o.goroutines
		if loop {
			lt, loop = resolveLoopTarget(ctx, client.addr, client.host, prefix, o.Paths, o.Timeout)
		}
		if loop {
			res, err = driveLoop(ctx, load, lt, observe)
		} else {
			stop := context.AfterFunc(ctx, client.abort)
			restore := replayProcs(o.Clients)
			res, err = Drive(ctx, load, func(ctx context.Context, c int, seq int64) Outcome {
				return client.get(ctx, c, prefix+o.Paths[seq])
			}, observe)
			restore()
			stop()
		}
		client.close()
		if err != nil {
			return nil, err
		}
		name := o.Targets[i]
		if i < len(o.Names) && o.Names[i] != "" {
			name = o.Names[i]
		}
		run := newRun(name, load, res)
		run.Target = o.Targets[i]
		rep.Runs = append(rep.Runs, run)
		if ctx.Err() != nil {
			break
		}
	}
	return rep, nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func msString(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64)
}

// CSVSink is a CSV file written concurrently, created on the first line
// (so a run without failures leaves no empty failures file behind).
type CSVSink struct {
	Path   string
	header []string
	mu     sync.Mutex
	f      *os.File
	w      *csv.Writer
	lines  int64
	err    error
}

// NewCSVSink returns a sink that will write header and lines to path.
func NewCSVSink(path string, header []string) *CSVSink {
	return &CSVSink{Path: path, header: header}
}

// Write adds one record; errors are kept for Close.
func (s *CSVSink) Write(fields ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	if s.f == nil {
		if err := os.MkdirAll(filepath.Dir(s.Path), 0o755); err != nil {
			s.err = err
			return
		}
		f, err := os.Create(s.Path)
		if err != nil {
			s.err = err
			return
		}
		s.f, s.w = f, csv.NewWriter(f)
		s.err = s.w.Write(s.header)
	}
	s.lines++
	if err := s.w.Write(fields); err != nil && s.err == nil {
		s.err = err
	}
}

// Lines is the number of records written.
func (s *CSVSink) Lines() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lines
}

// Close flushes the file (if any was created).
func (s *CSVSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return s.err
	}
	s.w.Flush()
	err := s.err // the writer's error after the flush is the same, when it is one
	if err == nil {
		err = s.w.Error()
	}
	err = errors.Join(err, s.f.Close())
	s.f = nil
	if err != nil {
		os.Remove(s.Path)                                // not left half-written (a full disk)
		return fmt.Errorf("CSV file: %w (removed)", err) // err names the file (*fs.PathError)
	}
	return nil
}
