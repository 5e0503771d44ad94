package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/lvm"
	"github.com/tbhost/tbhost/lvm/lvmfake"
)

// nonRootLVM answers every lvm report as lvm2 2.03.16 does for a user
// other than root (lvmfake.NonRootReply, recorded in the lab).
func nonRootLVM() *execx.Recorded {
	reply := lvmfake.NonRootReply()
	rec := execx.NewRecorded()
	for _, argv := range [][]string{lvm.LVsArgv(), lvm.PVsArgv(), lvm.VGsArgv()} {
		rec.On(reply, argv...)
	}
	return rec
}

// A Nagios check, lvm status and integrity status run by a monitoring user
// (nagios, NRPE) on this host: exit 3 (UNKNOWN for the check), saying lvm
// needs root and how to give it, without lvm's 21 report fields.
func TestNonRootUserIsToldLVMNeedsRoot(t *testing.T) {
	for _, args := range [][]string{
		{"monitor", "check", "--for", "1s", "--interval", "1s"},
		{"lvm", "status"},
		{"integrity", "status"},
	} {
		code, out, stderr := runTB(t, nonRootLVM(), args...)
		all := out + stderr
		if code != 3 {
			t.Errorf("%v: exit %d, want 3\n%s", args, code, all)
		}
		for _, want := range []string{"lvm needs root", "open failed: Permission denied", "run tbhost as root", "sudo"} {
			if !strings.Contains(all, want) {
				t.Errorf("%v: output lacks %q:\n%s", args, want, all)
			}
		}
		if strings.Contains(all, "raidintegrityblocksize") {
			t.Errorf("%v: output repeats lvm's report fields:\n%s", args, all)
		}
	}
	code, out, _ := runTB(t, nonRootLVM(), "--json", "monitor", "check", "--for", "1s", "--interval", "1s")
	var doc struct {
		Status string `json:"status"`
		Error  struct {
			Message  string `json:"message"`
			ExitCode int    `json:"exit_code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 3 || doc.Status != "UNKNOWN" || doc.Error.ExitCode != 3 || !strings.Contains(doc.Error.Message, "lvm needs root") {
		t.Errorf("--json monitor check: exit %d, %v, %+v\n%s", code, err, doc, out)
	}
}
