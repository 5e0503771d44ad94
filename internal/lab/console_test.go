package lab

import (
	"bytes"
	"strings"
	"testing"
)

func TestConsoleFilterHidesOutputBlocks(t *testing.T) {
	mark := "TBHOST-LAB-00ff"
	var out bytes.Buffer
	f := newConsoleFilter(&out, mark)
	log := "[ 1.0] Linux version\r\n" + mark + " BOOTED 1.2\nscenario line\n" +
		serialBlock(mark, "lvs.json", []byte(strings.Repeat("x", 500))) + mark + " EXIT 0\n" + mark + " POWEROFF\npartial"
	for i := 0; i < len(log); i += 7 { // arbitrary write boundaries
		f.Write([]byte(log[i:min(i+7, len(log))]))
	}
	got := out.String()
	want := "[ 1.0] Linux version\r\nscenario line\nlab: output lvs.json, 500 bytes\nlab: scenario exit status 0\n"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
