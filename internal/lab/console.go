package lab

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
)

// consoleFilter passes the serial console to w line by line, replacing
// each base64 output block between the run's markers by one line
// ("lab: output NAME, N bytes"), so a person watching is not flooded.
type consoleFilter struct {
	mu     sync.Mutex
	w      io.Writer
	mark   string
	buf    []byte
	inBody bool
}

func newConsoleFilter(w io.Writer, mark string) *consoleFilter {
	return &consoleFilter{w: w, mark: mark + " "}
}

func (f *consoleFilter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(p), eachLine(&f.buf, p, f.line)
}

// eachLine appends p to *buf and calls fn with every complete line in it
// (its newline included), in order, keeping the incomplete rest in *buf;
// it stops at fn's first error. The serial console arrives in arbitrary
// pieces; every reader of its lines (the filter, the throttle watcher)
// splits them here.
func eachLine(buf *[]byte, p []byte, fn func(line string) error) error {
	*buf = append(*buf, p...)
	for {
		i := bytes.IndexByte(*buf, '\n')
		if i < 0 {
			return nil
		}
		line := string((*buf)[:i+1])
		*buf = (*buf)[i+1:]
		if err := fn(line); err != nil {
			return err
		}
	}
}

func (f *consoleFilter) line(line string) error {
	j := strings.Index(line, f.mark)
	if j < 0 {
		if f.inBody {
			return nil
		}
		_, err := io.WriteString(f.w, line)
		return err
	}
	fields := strings.Fields(line[j+len(f.mark):])
	switch {
	case len(fields) >= 3 && fields[0] == "BEGIN":
		f.inBody = true
		_, err := fmt.Fprintf(f.w, "lab: output %s, %s bytes\n", fields[1], fields[2])
		return err
	case len(fields) >= 1 && fields[0] == "END":
		f.inBody = false
		return nil
	case len(fields) >= 2 && fields[0] == "EXIT":
		_, err := fmt.Fprintf(f.w, "lab: scenario exit status %s\n", fields[1])
		return err
	}
	return nil // BOOTED, SCENARIO-START/END, POWEROFF: the harness's own bookkeeping
}
