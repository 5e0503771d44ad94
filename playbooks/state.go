package playbooks

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tbhost/tbhost/internal/atomicfile"
	"github.com/tbhost/tbhost/internal/filelock"
	"github.com/tbhost/tbhost/internal/jsonlines"
	"github.com/tbhost/tbhost/internal/sysread"
)

// Step statuses in the state file, the log and the summary.
const (
	StepDone        = "done"
	StepSkipped     = "skipped"
	StepFailed      = "failed"
	StepRefused     = "refused"
	StepInterrupted = "interrupted"
	StepNotRun      = "not-run"
)

// StepState is what the state file remembers about one step.
type StepState struct {
	Name     string    `json:"name"`
	Status   string    `json:"status"`
	Reason   string    `json:"reason,omitempty"`
	ExitCode *int      `json:"exit_code,omitempty"`
	Nagios   string    `json:"nagios,omitempty"`
	Attempts int       `json:"attempts,omitempty"`
	Start    time.Time `json:"start,omitzero"`
	End      time.Time `json:"end,omitzero"`
}

// Completed reports whether a resumed run may skip this step.
func (s StepState) Completed() bool { return s.Status == StepDone || s.Status == StepSkipped }

// State is the state file of a playbook: the last run and where it got to.
type State struct {
	Playbook     string      `json:"playbook"`
	File         string      `json:"file"`
	PlaybookHash string      `json:"playbook_sha256"`
	ParamsHash   string      `json:"params_sha256"`
	Params       []string    `json:"params"`
	RunID        string      `json:"run_id"`
	Status       string      `json:"status"` // running, done, failed, refused, interrupted
	Current      string      `json:"current_step,omitempty"`
	Started      time.Time   `json:"started"`
	Updated      time.Time   `json:"updated"`
	Steps        []StepState `json:"steps"`
}

// Hashes returns the SHA-256 of the playbook's source and of its resolved
// parameters: a resumed run compares them with the state file.
func Hashes(pb *Playbook, vals Values) (playbook, params string) {
	a := sha256.Sum256(pb.Source)
	b := sha256.Sum256([]byte(strings.Join(vals.Canonical(pb), "\n")))
	return hex.EncodeToString(a[:]), hex.EncodeToString(b[:])
}

// Store is the directory holding one playbook's state file, log and lock.
type Store struct{ Dir string }

// Paths of the store's files.
func (s Store) StatePath() string { return filepath.Join(s.Dir, "state.json") }

// LogPath is the append-only JSON-lines log of every run.
func (s Store) LogPath() string { return filepath.Join(s.Dir, "log.jsonl") }

func (s Store) lockPath() string { return filepath.Join(s.Dir, "lock") }

// Lock is the held lock of a store. Its File is inherited by the steps,
// so a step that outlives a killed tbhost (kill -9) keeps the playbook
// locked until it ends: a --resume cannot start the same work twice.
type Lock = filelock.Lock

// Lock takes the store's exclusive lock so two runs of one playbook never
// overlap. It fails at once when another run holds it.
func (s Store) Lock() (*Lock, error) {
	if err := os.MkdirAll(s.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("state directory %s: %w (choose another with --state-dir)", s.Dir, err)
	}
	l, err := filelock.Exclusive(s.lockPath(), 0o640)
	switch {
	case errors.Is(err, filelock.ErrHeld):
		return nil, fmt.Errorf("another run of this playbook is in progress (lock %s is held; after a killed run, a step it started may still be finishing: wait for it and retry)", s.lockPath())
	case err != nil:
		return nil, fmt.Errorf("lock %s: %w", s.lockPath(), err)
	}
	// a run killed between a checkpoint's create and its rename left its
	// temporary file; the lock's holder is the state's only writer
	atomicfile.RemoveTemps(s.StatePath(), stateTemp())
	return l, nil
}

// Load reads the state file; (nil, nil) when there is none yet.
func (s Store) Load() (*State, error) {
	b, err := sysread.StateFile(s.StatePath(), sysread.StateLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("state file %s is damaged (%v): move it away to start afresh", s.StatePath(), err)
	}
	return &st, nil
}

// stateTemp names Save's temporary file: .state-<digits>.json.
func stateTemp() atomicfile.Options { return atomicfile.Options{Temp: ".state-*.json"} }

// Save writes the state file atomically and durably (temporary file,
// fsync, rename, fsync of the directory).
func (s Store) Save(st *State) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	if err := atomicfile.WriteFile(s.StatePath(), append(b, '\n'), stateTemp()); err != nil {
		return fmt.Errorf("write state %s: %w", s.StatePath(), err)
	}
	return nil
}

// Event is one line of the run log.
type Event struct {
	Time     time.Time `json:"time"`
	Run      string    `json:"run"`
	Event    string    `json:"event"` // run-start, check, confirm, hold, step, run-end
	Playbook string    `json:"playbook,omitempty"`
	Step     string    `json:"step,omitempty"`
	Kind     string    `json:"kind,omitempty"` // check: when, skip_if, require, load
	Argv     []string  `json:"argv,omitempty"`
	Start    time.Time `json:"start,omitzero"`
	End      time.Time `json:"end,omitzero"`
	ExitCode *int      `json:"exit_code,omitempty"`
	Status   string    `json:"status,omitempty"`
	Nagios   string    `json:"nagios,omitempty"`
	Attempt  int       `json:"attempt,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	Output   string    `json:"output_tail,omitempty"`
	Hash     string    `json:"playbook_sha256,omitempty"`
	Params   []string  `json:"params,omitempty"`
}

// Log appends events to the store's JSON-lines log.
type Log struct {
	f    *os.File
	size int64 // the log's length, up to the end of its last whole line
}

// OpenLog opens the log for appending (O_APPEND: lines are never rewritten).
// A last line cut short (a crash mid-write) is ended, so that the next
// event starts a line of its own.
func (s Store) OpenLog() (*Log, error) {
	f, err := os.OpenFile(s.LogPath(), os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	size, torn, err := jsonlines.TornTail(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open log: %w", err)
	}
	l := &Log{f: f, size: size}
	// On a full disk the newline fails too: the run's first event then
	// fails (Write cuts it off) and the run goes on without its log.
	if torn {
		if _, err := f.Write([]byte{'\n'}); err == nil {
			l.size++
		}
	}
	return l, nil
}

// Write appends one event as a line and syncs it.
func (l *Log) Write(ev Event) error {
	if l == nil {
		return nil
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode log event: %w", err)
	}
	line := append(b, '\n')
	if _, err := l.f.Write(line); err != nil {
		// A full disk takes part of a line: cut it off, so that the log
		// holds whole lines only and a later event starts its own.
		_ = l.f.Truncate(l.size)
		return fmt.Errorf("write log %s: %w", l.f.Name(), err)
	}
	l.size += int64(len(line))
	return l.f.Sync()
}

// Close closes the log.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	return l.f.Close()
}
