package lab

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

func serialBlock(mark, name string, data []byte) string {
	h := sha256.Sum256(data)
	enc := base64.StdEncoding.EncodeToString(data)
	var lines []string
	for len(enc) > 76 {
		lines = append(lines, enc[:76])
		enc = enc[76:]
	}
	lines = append(lines, enc)
	return fmt.Sprintf("%s BEGIN %s %d %s\r\n%s\r\n%s END %s\r\n", mark, name, len(data), hex.EncodeToString(h[:]),
		strings.Join(lines, "\r\n"), mark, name)
}

func TestParseSerialOutputsExitAndNoise(t *testing.T) {
	mark := "TBHOST-LAB-0123456789abcdef"
	big := []byte(strings.Repeat("lvs json ", 200))
	log := "[    0.000000] Linux version 6.1.0\r\n" +
		mark + " BOOTED 3.1\r\n" +
		"lab: modprobe foo failed\r\n" +
		mark + " SCENARIO-START 5.0\r\n" +
		"TBHOST-LAB-ffffffffffffffff EXIT 99\r\n" + // another run's marker: ignored
		"scenario says " + mark[:10] + "\r\n" +
		mark + " SCENARIO-END 9.0\r\n" +
		serialBlock(mark, "lvm/lvs.json", big) +
		serialBlock(mark, "empty", nil) +
		"[   12.3] md: noise " + mark + " EXIT 3\r\n" +
		mark + " POWEROFF\r\n"
	r := parseSerial([]byte(log), mark)
	if !r.Booted || !r.Started || !r.PowerOff {
		t.Errorf("flags %+v", r)
	}
	if r.ExitCode != 3 {
		t.Errorf("exit %d, want 3", r.ExitCode)
	}
	if string(r.Outputs["lvm/lvs.json"]) != string(big) {
		t.Errorf("lvs.json: %d bytes", len(r.Outputs["lvm/lvs.json"]))
	}
	if v, ok := r.Outputs["empty"]; !ok || len(v) != 0 {
		t.Errorf("empty output: %q %v", v, ok)
	}
	if err := reportError(r, []byte(log), "x.log"); err != nil {
		t.Errorf("complete run reported %v", err)
	}
}

func TestParseSerialDetectsGarbledOutputAndMissingExit(t *testing.T) {
	mark := "TBHOST-LAB-1"
	block := serialBlock(mark, "f", []byte("hello world, hello lab"))
	garbled := strings.Replace(block, "aGVsbG8", "aGVsbG9", 1)
	r := parseSerial([]byte(mark+" BOOTED 1\n"+mark+" SCENARIO-START 2\n"+garbled+mark+" EXIT 0\n"), mark)
	if len(r.Corrupted) != 1 || r.Corrupted[0] != "f" {
		t.Errorf("corrupted %v", r.Corrupted)
	}
	if err := reportError(r, nil, "x.log"); err == nil || !strings.Contains(err.Error(), "garbled") {
		t.Errorf("err %v", err)
	}
	for _, tc := range []struct{ log, want string }{
		{"Kernel panic - not syncing\n", "never reached /init"},
		{mark + " BOOTED 1\n", "did not start the scenario"},
		{mark + " BOOTED 1\n" + mark + " SCENARIO-START 2\nstill running\n", "did not finish"},
	} {
		r := parseSerial([]byte(tc.log), mark)
		err := reportError(r, []byte(tc.log), "/w/serial.log")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "/w/serial.log") {
			t.Errorf("log %q: err %v, want %q", tc.log, err, tc.want)
		}
	}
}
