package playbookcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tbhost/tbhost/playbooks"
)

// buildTBHost compiles the real binary: tbhost steps run as a subprocess of
// the same binary, which an in-process test cannot show.
func buildTBHost(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go toolchain not in PATH")
	}
	bin := filepath.Join(t.TempDir(), "tbhost")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", bin, "github.com/tbhost/tbhost/cmd/tbhost")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // the lab's busybox guest runs the static build
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func tb(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

func TestEndToEndWithTheRealBinary(t *testing.T) {
	bin := buildTBHost(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	marker := filepath.Join(dir, "second-ran")

	t.Run("tbhost step runs the same binary; failure, then --resume", func(t *testing.T) {
		pb := filepath.Join(dir, "e2e.yaml")
		os.WriteFile(pb, []byte(fmt.Sprintf(`name: e2e
params:
  - name: flag
    type: path
    default: %s/allow
steps:
  - name: list
    tbhost: [playbook, list]
  - name: gate
    require:
      - exists: "{{.flag}}"
        message: "create {{.flag}} to continue"
    shell: [touch, %s]
  - name: env
    shell: [sh, -c, 'test -x "$TBHOST" && echo "step $TBHOST_STEP of $TBHOST_PLAYBOOK"']
`, dir, marker)), 0o644)
		code, out, stderr := tb(t, bin, "playbook", "run", "--state-dir", state, pb)
		if code != 1 || !strings.Contains(out, "provision-host") || !strings.Contains(out, "REFUSED") || !strings.Contains(out, "create "+dir+"/allow to continue") {
			t.Fatalf("first run: exit %d\n%s%s", code, out, stderr)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the refused step ran")
		}
		os.WriteFile(filepath.Join(dir, "allow"), nil, 0o644)
		code, out, stderr = tb(t, bin, "playbook", "run", "--resume", "--state-dir", state, pb)
		if code != 0 || strings.Contains(out, "Build the storage") || !strings.Contains(out, "step env of e2e") {
			t.Fatalf("resume: exit %d (must not re-run the list step)\n%s%s", code, out, stderr)
		}
		if !strings.Contains(out, "(previous run)") || !strings.Contains(out, "playbook e2e: done") {
			t.Errorf("summary:\n%s", out)
		}
		// The state and log are where the summary says.
		var st playbooks.State
		b, err := os.ReadFile(filepath.Join(state, "e2e", "state.json"))
		if err != nil || json.Unmarshal(b, &st) != nil || st.Status != "done" {
			t.Errorf("state: %v %s", err, b)
		}
		// Changed parameters are detected on --resume.
		code, _, stderr = tb(t, bin, "playbook", "run", "--resume", "--set", "flag=/elsewhere", "--state-dir", state, pb)
		if code != 1 || !strings.Contains(stderr, "--accept-changes") {
			t.Errorf("changed params: exit %d %s", code, stderr)
		}
	})

	t.Run("Ctrl-C kills the running step and the state says where", func(t *testing.T) {
		pidfile := filepath.Join(dir, "child.pid")
		pb := filepath.Join(dir, "long.yaml")
		os.WriteFile(pb, []byte(fmt.Sprintf(`name: long
steps:
  - name: quick
    shell: ["true"]
  - name: long
    shell: [sh, -c, 'sleep 300 & echo $! > "$0.tmp"; mv "$0.tmp" "$0"; wait', %s]
  - name: after
    shell: ["true"]
`, pidfile)), 0o644)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "playbook", "run", "--state-dir", state, pb)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var child int
		for deadline := time.Now().Add(20 * time.Second); child == 0; {
			if b, err := os.ReadFile(pidfile); err == nil && strings.HasSuffix(string(b), "\n") {
				child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			} else if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("the long step never started:\n%s", out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 130 {
			t.Errorf("exit %d after SIGINT, want 130\n%s", code, out.String())
		}
		deadline := time.Now().Add(5 * time.Second)
		for syscall.Kill(child, 0) == nil && !zombie(child) {
			if time.Now().After(deadline) {
				syscall.Kill(child, syscall.SIGKILL)
				t.Fatalf("the step's child %d survived Ctrl-C", child)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if !strings.Contains(out.String(), "INTERRUPTED") || !strings.Contains(out.String(), "stopped at step long") {
			t.Errorf("summary:\n%s", out.String())
		}
		b, _ := os.ReadFile(filepath.Join(state, "long", "state.json"))
		var st playbooks.State
		if json.Unmarshal(b, &st) != nil || st.Status != "interrupted" || st.Current != "long" {
			t.Errorf("state: %s", b)
		}
	})

	t.Run("after kill -9 the step that still runs keeps the playbook locked; then --resume redoes it", func(t *testing.T) {
		pidfile := filepath.Join(dir, "orphan.pid")
		pb := filepath.Join(dir, "orphan.yaml")
		os.WriteFile(pb, []byte(fmt.Sprintf(`name: orphan
params:
  - name: secs
    default: "300"
steps:
  - name: quick
    shell: ["true"]
  - name: long
    shell: [sh, -c, 'echo $$ > "$0.tmp"; mv "$0.tmp" "$0"; sleep $1', %s, "{{.secs}}"]
`, pidfile)), 0o644)
		cmd := exec.Command(bin, "playbook", "run", "--state-dir", state, pb)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var child int
		for deadline := time.Now().Add(20 * time.Second); child == 0; {
			if b, err := os.ReadFile(pidfile); err == nil && strings.HasSuffix(string(b), "\n") {
				child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			} else if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatal("the long step never started")
			}
			time.Sleep(20 * time.Millisecond)
		}
		defer syscall.Kill(-child, syscall.SIGKILL)
		cmd.Process.Kill() // kill -9: no chance to clean up
		cmd.Wait()
		code, _, stderr := tb(t, bin, "playbook", "run", "--resume", "--set", "secs=0", "--accept-changes", "--state-dir", state, pb)
		if code != 3 || !strings.Contains(stderr, "in progress") {
			t.Fatalf("resume while the orphaned step runs: exit %d %s", code, stderr)
		}
		syscall.Kill(-child, syscall.SIGKILL) // the step's process group ends
		for deadline := time.Now().Add(5 * time.Second); !zombie(child) && syscall.Kill(child, 0) == nil; {
			if time.Now().After(deadline) {
				t.Fatal("orphan did not die")
			}
			time.Sleep(20 * time.Millisecond)
		}
		code, out, stderr := tb(t, bin, "playbook", "run", "--resume", "--set", "secs=0", "--accept-changes", "--state-dir", state, pb)
		if code != 0 || !strings.Contains(out, "long") || strings.Contains(out, "==> [1/2] quick") {
			t.Fatalf("resume: exit %d\n%s%s", code, out, stderr)
		}
	})

	t.Run("on_interrupt finish: one SIGTERM lets the step complete, a second kills it", func(t *testing.T) {
		for _, signals := range []int{1, 2} {
			sub := filepath.Join(dir, fmt.Sprintf("fin%d", signals))
			os.MkdirAll(sub, 0o755)
			pb := filepath.Join(sub, "fin.yaml")
			os.WriteFile(pb, []byte(fmt.Sprintf(`name: fin
steps:
  - name: critical
    on_interrupt: finish
    shell: [sh, -c, 'touch "$0/started"; sleep 3; touch "$0/finished"', %[1]s]
  - name: after
    shell: [touch, %[1]s/after]
`, sub)), 0o644)
			cmd := exec.Command(bin, "playbook", "run", "--state-dir", filepath.Join(sub, "state"), pb)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if _, err := os.Stat(filepath.Join(sub, "started")); err == nil {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("never started:\n%s", out.String())
				}
			}
			for i := 0; i < signals; i++ {
				cmd.Process.Signal(syscall.SIGTERM)
				time.Sleep(200 * time.Millisecond)
			}
			cmd.Wait()
			_, errFinished := os.Stat(filepath.Join(sub, "finished"))
			_, errAfter := os.Stat(filepath.Join(sub, "after"))
			if code := cmd.ProcessState.ExitCode(); code != 130 || errAfter == nil {
				t.Errorf("%d signal(s): exit %d, next step ran: %v\n%s", signals, code, errAfter == nil, out.String())
			}
			if (errFinished == nil) != (signals == 1) {
				t.Errorf("%d signal(s): step finished = %v\n%s", signals, errFinished == nil, out.String())
			}
			if signals == 1 && !strings.Contains(out.String(), "this step finishes first") {
				t.Errorf("no notice:\n%s", out.String())
			}
		}
	})

	t.Run("runs in a busybox userland (no bash, no coreutils, no systemd)", func(t *testing.T) {
		bb, err := exec.LookPath("busybox")
		if err != nil {
			t.Skip("busybox not installed (Debian busybox-static; .ci/install-deps installs it)")
		}
		applets := filepath.Join(dir, "bb")
		os.MkdirAll(applets, 0o755)
		for _, a := range []string{"sh", "mkdir", "awk", "grep", "sed", "true", "touch"} {
			os.Symlink(bb, filepath.Join(applets, a))
		}
		pb := filepath.Join(dir, "bb.yaml")
		os.WriteFile(pb, []byte(fmt.Sprintf(`name: bb
steps:
  - name: self
    tbhost: [playbook, list]
  - name: root-is-mounted
    skip_if: {shell: [sh, -c, 'awk -v d="$0" "\$2 == d {f=1} END {exit !f}" /proc/mounts', /proc]}
    shell: [sh, -c, 'echo "/proc is not a mount point" >&2; exit 1']
  - name: dir
    shell: [mkdir, -p, %[1]s/made/by/busybox]
  - name: script
    shell: [sh, -c, 'test -d "$0" && touch "$0/ok"', %[1]s/made/by/busybox]
`, dir)), 0o644)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "playbook", "run", "--state-dir", state, pb)
		cmd.Env = []string{"PATH=" + applets, "HOME=" + dir}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "skipped") {
			t.Fatalf("%v\n%s", err, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "made/by/busybox/ok")); err != nil {
			t.Errorf("the busybox steps did not run: %v\n%s", err, out)
		}
	})

	t.Run("nagios playbook is silent when OK and exits with the worst status", func(t *testing.T) {
		pb := filepath.Join(dir, "hc.yaml")
		os.WriteFile(pb, []byte(`name: hc
nagios: true
params:
  - name: rc
    default: "0"
steps:
  - name: first
    shell: [sh, -c, 'echo first says hi; exit 0']
  - name: second
    shell: [sh, -c, 'echo "disk sdc reads 0/s while siblings read 80/s"; exit $0', "{{.rc}}"]
`), 0o644)
		code, out, stderr := tb(t, bin, "playbook", "run", "--state-dir", state, pb)
		if code != 0 || out != "" || stderr != "" {
			t.Fatalf("OK run must be silent: exit %d %q %q", code, out, stderr)
		}
		code, out, _ = tb(t, bin, "playbook", "run", "--set", "rc=2", "--state-dir", state, pb)
		if code != 2 || !strings.HasPrefix(out, "HC CRITICAL - second CRITICAL\n") || !strings.Contains(out, "disk sdc reads 0/s") || strings.Contains(out, "first says hi") {
			t.Fatalf("exit %d\n%s", code, out)
		}
	})
}

func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && (s[i+2] == 'Z' || s[i+2] == 'X')
}
