package lab

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// HangError is a boot ended because the guest's kernel reported a task
// blocked in the kernel for 300 s or more (the guest's hang watch, init.sh):
// Report holds the kernel's "blocked for more than" lines and the blocked
// tasks' stacks, as the guest printed them.
type HangError struct {
	Report  string
	LogPath string
}

func (e *HangError) Error() string {
	first, _, _ := strings.Cut(e.Report, "\n")
	return fmt.Sprintf("guest kernel hang (%s), boot ended; blocked tasks' stacks (serial log %s):\n%s", strings.TrimSpace(first), e.LogPath, e.Report)
}

// hangWatcher collects the lines the guest prints between MARK HUNG and
// MARK HUNG-END and calls onHang once, with them, at the end marker.
type hangWatcher struct {
	begin, end string
	onHang     func(report string)

	mu     sync.Mutex
	buf    []byte
	in     bool
	report strings.Builder
	fired  bool
}

func newHangWatcher(mark string, onHang func(report string)) *hangWatcher {
	return &hangWatcher{begin: mark + " HUNG", end: mark + " HUNG-END", onHang: onHang}
}

func (w *hangWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	eachLine(&w.buf, p, w.line)
	if len(w.buf) > 1<<20 { // a megabyte without a newline
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

func (w *hangWatcher) line(line string) error {
	if w.fired {
		return nil
	}
	text := strings.TrimRight(line, "\r\n")
	switch {
	case strings.HasSuffix(strings.TrimSpace(text), w.end):
		w.fired = true
		w.onHang(w.report.String())
	case strings.HasSuffix(strings.TrimSpace(text), w.begin):
		w.in = true
		w.report.Reset()
	case w.in && w.report.Len() < 64<<10:
		w.report.WriteString(text + "\n")
	}
	return nil
}

// LvcreateDeadlock tells a hang of lvm2's lvcreate stuck tearing down a
// raid table (raid_dtr; docs/lvm.md) from any other: the guest's hang
// watch names each blocked task's command line ("blocked task PID: lvm
// lvcreate ..." as tbhost runs it, "lvcreate ..." or "/sbin/lvcreate ..."
// as a lab scenario's shell does).
func (e *HangError) LvcreateDeadlock() bool {
	return strings.Contains(e.Report, "raid_dtr") && lvcreateTask.MatchString(e.Report)
}

var lvcreateTask = regexp.MustCompile(`(?m)^blocked task [0-9]+: (\S*/)?(lvm )?lvcreate `)
