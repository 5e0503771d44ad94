package execx

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// Reply is a recorded answer to one command line.
type Reply struct {
	Stdout   string
	Stderr   string
	ExitCode int
}

// Recorded is a Runner for tests: it answers command lines from a table of
// recorded outputs and keeps the list of calls it received. A command line
// with no recorded reply fails as "program not found", so a test notices an
// unexpected call instead of silently passing.
type Recorded struct {
	mu      sync.Mutex
	replies map[string][]Reply
	Calls   [][]string
}

// NewRecorded returns an empty Recorded runner.
func NewRecorded() *Recorded { return &Recorded{replies: map[string][]Reply{}} }

// On records reply for the exact argv. Several replies for the same argv are
// returned in order; the last one repeats.
func (r *Recorded) On(reply Reply, argv ...string) *Recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := strings.Join(argv, "\x00")
	r.replies[k] = append(r.replies[k], reply)
	return r
}

// Run implements Runner.
func (r *Recorded) Run(ctx context.Context, argv ...string) (Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Calls = append(r.Calls, append([]string(nil), argv...))
	res := Result{Argv: argv}
	if err := ctx.Err(); err != nil {
		return res, &CommandError{Argv: argv, ExitCode: -1, Err: err}
	}
	k := strings.Join(argv, "\x00")
	q := r.replies[k]
	if len(q) == 0 {
		return res, &CommandError{Argv: argv, ExitCode: -1, Err: fmt.Errorf("no recorded reply: %w", errNotRecorded)}
	}
	rep := q[0]
	if len(q) > 1 {
		r.replies[k] = q[1:]
	}
	res.Stdout, res.Stderr = []byte(rep.Stdout), []byte(rep.Stderr)
	if rep.ExitCode != 0 {
		return res, &CommandError{Argv: argv, ExitCode: rep.ExitCode, Stderr: rep.Stderr}
	}
	return res, nil
}

var errNotRecorded = fmt.Errorf("command not recorded")
