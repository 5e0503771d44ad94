package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/realdata"
)

// runOnPTY runs tbhost with stdin, stdout and stderr on one pseudo-terminal,
// as a user at a shell sees it, and returns the exit code and the screen:
// the lines as the terminal shows them once carriage returns and "erase
// line" sequences have done their work.
func runOnPTY(t *testing.T, args ...string) (int, []string, string) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	raw := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(ptmx); raw <- b }() // EIO once tty is closed: the end
	env := &cliutil.Env{Stdin: tty, Stdout: tty, Stderr: tty, Runner: execx.NewRecorded(),
		IsTerminal: cliutil.TerminalStreams(tty, tty)}
	code := run(append([]string{"tbhost"}, args...), env)
	tty.Close()
	b := <-raw
	return code, screen(b), string(b)
}

// screen renders terminal output: \r returns to column 0, \n ends the line,
// ESC[2K and ESC[K erase (the line, to its end), other escape sequences are
// dropped, printable text overwrites what is under the cursor.
func screen(b []byte) []string {
	var lines []string
	var cur []rune
	col := 0
	s := []rune(string(b))
	for i := 0; i < len(s); i++ {
		switch r := s[i]; {
		case r == '\r':
			col = 0
		case r == '\n':
			lines = append(lines, strings.TrimRight(string(cur), " "))
			cur, col = nil, 0
		case r == 0x1b && i+1 < len(s) && s[i+1] == '[':
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			if j < len(s) {
				switch param := string(s[i+2 : j]); {
				case s[j] == 'K' && param == "2":
					cur = nil
				case s[j] == 'K':
					if col < len(cur) {
						cur = cur[:col]
					}
				}
			}
			i = j
		case r < 0x20:
		default:
			for len(cur) <= col {
				cur = append(cur, ' ')
			}
			cur[col] = r
			col++
		}
	}
	if len(cur) > 0 {
		lines = append(lines, strings.TrimRight(string(cur), " "))
	}
	return lines
}

func TestScreenRendersCarriageReturnsAndErasure(t *testing.T) {
	got := screen([]byte("abc\r\x1b[2Kxy\nfiles 3/4\r         \rdone\n"))
	if strings.Join(got, "|") != "xy|done" {
		t.Fatalf("%q", got)
	}
	got = screen([]byte("files 3/4 |###| (5.8 MiB/s) [0s]extract into store\n"))
	if got[0] != "files 3/4 |###| (5.8 MiB/s) [0s]extract into store" {
		t.Fatalf("%q", got)
	}
}

// Issue 18: on a terminal, extract and verify --full left the progress bar
// on the summary line: "...| (5.8 MiB/s) [0s]extract into store ...". The
// bar is erased now; the summary starts its own line and no bar residue is
// left on the screen.
func TestProgressBarLeavesNoResidueOnATerminal(t *testing.T) {
	tables := realdata.CopyTables(t)
	store := t.TempDir()
	md5 := filepath.Join(realdata.Dir(t), "checksums/syzygy-tables.info/md5")
	for _, tc := range []struct {
		args    []string
		summary string
		code    int
	}{
		{[]string{"prefix", "extract", "--tables", tables, "--store", store, "--pause-each", "15ms", "--jobs", "1"}, "extract into ", 0},
		{[]string{"prefix", "verify", "--full", "--tables", tables, "--store", store}, "verify ", 0},
		// the six old-generator tables mismatch: exit 1
		{[]string{"integrity", "verify-tables", "-c", md5, "--rate", "400KiB/s", "--jobs", "1", tables}, "24 ok, 6 mismatching", 1},
	} {
		code, lines, raw := runOnPTY(t, tc.args...)
		if code != tc.code {
			t.Fatalf("%v: exit %d\n%s", tc.args, code, raw)
		}
		if !strings.Contains(raw, "%") || !strings.Contains(raw, "|") {
			t.Errorf("%v: no progress bar was drawn at all:\n%q", tc.args, raw)
		}
		found := false
		for _, l := range lines {
			if strings.Contains(l, tc.summary) {
				found = true
				if !strings.HasPrefix(l, tc.summary) {
					t.Errorf("%v: bar residue on the summary line: %q", tc.args, l)
				}
			}
			if strings.Contains(l, "MiB/s)") || strings.Contains(l, "KiB/s)") || strings.Contains(l, "%") && strings.Contains(l, "|") {
				t.Errorf("%v: a progress bar stays on the screen: %q", tc.args, l)
			}
		}
		if !found {
			t.Errorf("%v: no summary line on the screen: %q", tc.args, lines)
		}
	}
}
