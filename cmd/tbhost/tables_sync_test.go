package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/realdata"
	"github.com/tbhost/tbhost/internal/tablesync/rsyncd"
)

// Issue 17 item 1: `tbhost tables sync` killed with SIGKILL in the middle
// of the transfer and run again completes, every file verified and
// byte-identical, and a third run has nothing left to do.
func TestTablesSyncSurvivesSIGKILL(t *testing.T) {
	h := rsyncd.NewOldHost(t)
	bin := filepath.Join(t.TempDir(), "tbhost")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	to := t.TempDir()
	args := []string{"tables", "sync", "--from", h.URL, "--to", to, "--checksums", h.Lists}
	// 1.5 MB at 64 KiB/s: about 25 s of transfer; killed after 3 s
	slow := exec.Command(bin, append(args, "--bwlimit", "64KiB/s")...)
	if err := slow.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	slow.Process.Signal(syscall.SIGKILL)
	slow.Wait()
	landed, _ := filepath.Glob(filepath.Join(to, "*.rtb?"))
	if len(landed) >= 24 {
		t.Fatalf("the first run finished before the kill (%d files): the test proves nothing", len(landed))
	}
	var rep struct {
		Landed          int  `json:"landed"`
		AlreadyVerified int  `json:"already_verified"`
		Complete        bool `json:"complete"`
		Refused         []any
	}
	run := func() int {
		cmd := exec.Command(bin, append([]string{"--json"}, args...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil {
			t.Fatalf("not one JSON document (%v): %s\nstderr: %s", jerr, out.String(), errb.String())
		}
		return code
	}
	if code := run(); code != 0 || !rep.Complete || rep.Landed+rep.AlreadyVerified != 24 || len(rep.Refused) != 0 {
		t.Fatalf("rerun after SIGKILL: exit %d, %+v; want exit 0, complete, 24 files", code, rep)
	}
	t.Logf("after the kill: %d files had landed; the rerun verified %d more", len(landed), rep.Landed)
	for _, n := range h.Names {
		rel := strings.TrimPrefix(h.Path(n), h.Dir+"/")
		got, err := os.ReadFile(filepath.Join(to, rel))
		want, _ := os.ReadFile(h.Path(n))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: not byte-identical after the resumed sync (%v)", rel, err)
		}
	}
	if code := run(); code != 0 || rep.AlreadyVerified != 24 || rep.Landed != 0 {
		t.Errorf("third run: exit %d, %+v; want nothing to do", code, rep)
	}
	// the rsync the killed run left (its receiver outlives a SIGKILLed
	// parent) was stopped by the rerun: none is left writing
	if alive, _ := exec.Command("pgrep", "-a", "-f", "rsync.*"+to).Output(); len(bytes.TrimSpace(alive)) > 0 {
		t.Errorf("an rsync is still running into %s: %s", to, alive)
	}
}

// Audit defect 2: a missing --to (an unmounted tables array) is exit 3,
// naming the path and the fix, and is not created.
func TestTablesSyncMissingDestinationIsThree(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "srv", "syzygy")
	code, out, stderr := runTB(t, nil, "tables", "sync", "--from", realdata.Tables(t), "--to", missing, "--set", "3")
	if code != 3 || !strings.Contains(out+stderr, missing) || !strings.Contains(out+stderr, "mount the tables file system there") {
		t.Errorf("exit %d, want 3 naming %s and the fix:\n%s%s", code, missing, out, stderr)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("tables sync created the missing destination %s (%v)", missing, err)
	}
}

// Audit defect 3: a dangling symlink on the source is that table refused
// and named, exit 1, the rest copied; it was exit 3 with rsync's raw
// "exit status 23".
func TestTablesSyncDanglingSymlinkIsOne(t *testing.T) {
	if _, err := exec.LookPath("rsync"); err != nil {
		t.Skip("SKIP: rsync not installed (Debian package rsync; `make deps` installs it)")
	}
	src := realdata.CopyTables(t)
	os.Remove(filepath.Join(src, "KQvK.rtbw"))
	os.Symlink("/nonexistent/KQvK.rtbw", filepath.Join(src, "KQvK.rtbw"))
	to := t.TempDir()
	code, out, stderr := runTB(t, nil, "tables", "sync", "--from", src, "--to", to, "--set", "3")
	if code != 1 || !strings.Contains(out, "REFUSED KQvK.rtbw: unreadable on the source: a symlink with no referent") {
		t.Errorf("exit %d, want 1 naming KQvK.rtbw:\n%s%s", code, out, stderr)
	}
	if got, _ := filepath.Glob(filepath.Join(to, "*.rtb?")); len(got) != 9 {
		t.Errorf("%d files copied, want the 9 others of set 3: %v", len(got), got)
	}
}
