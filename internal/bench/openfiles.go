package bench

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// openFilesSlack: descriptors a run opens besides the tables' own while it
// runs (/proc and /sys reads for the disks' statistics and the page cache,
// the raw latencies file, the output files, the runtime's).
const openFilesSlack = 16

// openFilesFor is how many descriptors configuration c keeps open while it
// runs over tables tables: pread keeps every table file open, and its
// prefix too with a store; mmap closes each file once it is mapped, so it
// holds one or two at a time.
func openFilesFor(c ProbeConfig, tables int) int {
	switch {
	case c.IO == IOMmap:
		return 2
	case c.Store != "":
		return 2 * tables
	default:
		return tables
	}
}

// descriptorsNeeded is how many descriptors configuration c needs over
// tables tables beside the open ones: what it holds, the slack, and open.
func descriptorsNeeded(c ProbeConfig, tables int, open uint64) uint64 {
	return uint64(openFilesFor(c, tables)+openFilesSlack) + open
}

// fileUse is the process's limit on open descriptors and how many are open.
type fileUse struct {
	limit, open uint64
}

// checkOpenFiles refuses, before any table is opened, a configuration
// whose descriptors do not fit beside those already open under the
// process's limit: the full 7-piece set is 3022 files, 6044 with the
// prefix store, and a service or container started with the traditional
// limit of 1024 would otherwise fail a thousand files in with "too many
// open files".
func checkOpenFiles(c ProbeConfig, tables int, use fileUse) error {
	need := descriptorsNeeded(c, tables, use.open)
	if need <= use.limit {
		return nil
	}
	what := "--io pread keeps every table file open"
	switch {
	case c.IO == IOMmap:
		what = "--io mmap opens each table file to map it"
	case c.Store != "":
		what = "--io pread keeps every table file and its prefix open"
	}
	return fmt.Errorf("%s: %d tables need about %d descriptors (with the %d open now), and this process may open %d (RLIMIT_NOFILE): %s",
		what, tables, need, use.open, use.limit, openFilesFix(need, c.IO))
}

// openFilesFix says how to get need descriptors: a higher limit, or, for
// pread, mmap.
func openFilesFix(need uint64, how IO) string {
	want := (need + 1023) / 1024 * 1024
	fix := fmt.Sprintf("raise the limit (as root, `ulimit -n %d` in the shell that starts tbhost; LimitNOFILE=%d in a systemd unit; `ulimit -Hn` shows the hard limit)", want, want)
	if how == IOPread {
		fix += ", or use --io mmap, which keeps no table open"
	}
	return fix
}

// openFileUse reads the process's limit on open descriptors (the soft
// RLIMIT_NOFILE, which Go raises to the hard limit at start) and counts
// those open (/proc/self/fd). Where the limit cannot be read, none is
// assumed and the opens say what they meet; where the count cannot be
// made, a generous one is assumed.
func openFileUse() fileUse {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return fileUse{limit: ^uint64(0)}
	}
	open := uint64(64)
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		open = uint64(len(ents))
	}
	return fileUse{limit: lim.Cur, open: open}
}

// tooManyOpenFiles reports whether err is the process's (EMFILE) or the
// system's (ENFILE) descriptor limit.
func tooManyOpenFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// CheckOpenFiles refuses configurations whose open files would not fit
// under the process's limit, before any of them runs: a --matrix whose
// store rows need twice the descriptors of its first rows fails at once,
// not after the first rows ran (or a temporary store was extracted).
func (s *TableSet) CheckOpenFiles(configs []ProbeConfig) error {
	use := openFileUse()
	for _, c := range configs {
		if err := checkOpenFiles(c, len(s.tables), use); err != nil {
			return fmt.Errorf("%s: %w", c.Name(), err)
		}
	}
	return nil
}
