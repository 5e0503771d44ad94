package lab

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// serialReport is what the guest's /init printed between its markers.
type serialReport struct {
	Booted    bool
	Started   bool // the scenario started
	ExitCode  int  // -1 when the guest never printed it
	PowerOff  bool
	Outputs   map[string][]byte
	Corrupted []string // outputs whose size or checksum did not match
}

// parseSerial reads a serial log for the lines of marker mark:
//
//	MARK BEGIN <name> <size> <sha256>  / base64 lines /  MARK END <name>
//	MARK EXIT <code>
//	MARK POWEROFF
//
// Carriage returns and other console lines are ignored.
func parseSerial(log []byte, mark string) serialReport {
	r := serialReport{ExitCode: -1, Outputs: map[string][]byte{}}
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var (
		cur       string
		size      int
		sum       string
		collected strings.Builder
		inBody    bool
	)
	prefix := mark + " "
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		// the marker may follow kernel noise on the same line
		i := strings.Index(line, prefix)
		if i < 0 {
			if inBody {
				collected.WriteString(strings.TrimSpace(line))
			}
			continue
		}
		f := strings.Fields(line[i+len(prefix):])
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "BOOTED":
			r.Booted = true
		case "SCENARIO-START":
			r.Started = true
		case "BEGIN":
			if len(f) != 4 {
				continue
			}
			cur, sum, inBody = f[1], f[3], true
			size, _ = strconv.Atoi(f[2])
			collected.Reset()
		case "END":
			if !inBody || len(f) != 2 || f[1] != cur {
				continue
			}
			inBody = false
			data, err := base64.StdEncoding.DecodeString(collected.String())
			h := sha256.Sum256(data)
			if err != nil || len(data) != size || hex.EncodeToString(h[:]) != sum {
				r.Corrupted = append(r.Corrupted, cur)
				continue
			}
			r.Outputs[cur] = data
		case "EXIT":
			if len(f) == 2 {
				if n, err := strconv.Atoi(f[1]); err == nil {
					r.ExitCode = n
				}
			}
		case "POWEROFF":
			r.PowerOff = true
		}
	}
	return r
}

// tailLines returns the last n lines of log (for error messages).
func tailLines(log []byte, n int) string {
	lines := strings.Split(strings.TrimRight(strings.ReplaceAll(string(log), "\r", ""), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// reportError explains a boot that did not end with an exit status.
func reportError(r serialReport, log []byte, logPath string) error {
	if r.ExitCode >= 0 && len(r.Corrupted) == 0 {
		return nil
	}
	var what string
	switch {
	case len(r.Corrupted) > 0:
		what = "garbled outputs on the serial console: " + strings.Join(r.Corrupted, ", ")
	case !r.Booted:
		what = "the guest never reached /init (kernel or initramfs problem)"
	case !r.Started:
		what = "the guest's /init did not start the scenario"
	default:
		what = "the scenario did not finish"
	}
	return fmt.Errorf("%s; serial log %s ends with:\n%s", what, logPath, tailLines(log, 15))
}
