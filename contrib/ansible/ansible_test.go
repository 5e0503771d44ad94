// Package ansible holds the tbhost Ansible collection (ansible_collections/
// tbhost/tbhost); this test runs it with Debian's ansible-core against
// localhost (-c local) on --root fixture hosts, with tests/fakelvm as lvm
// on PATH (it answers like lvm2 2.03.16).
package ansible

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/fixturetree"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type play struct {
	Tasks []struct {
		Task  struct{ Name string } `json:"task"`
		Hosts map[string]struct {
			Changed bool   `json:"changed"`
			Failed  bool   `json:"failed"`
			Skipped bool   `json:"skipped"`
			Msg     string `json:"msg"`
			RC      int    `json:"rc"`
			Diff    any    `json:"diff"`
		} `json:"hosts"`
	} `json:"tasks"`
}

type run struct {
	Plays []play `json:"plays"`
	Stats map[string]struct {
		Changed, Failures, Ok, Unreachable int
	} `json:"stats"`
}

// result of the task named name on host (the last one of that name).
func (r run) result(t *testing.T, task, host string) (changed, failed, skipped bool, msg string, diff string) {
	t.Helper()
	found := false
	for _, p := range r.Plays {
		for _, tk := range p.Tasks {
			if tk.Task.Name != task {
				continue
			}
			if h, ok := tk.Hosts[host]; ok {
				b, _ := json.Marshal(h.Diff)
				changed, failed, skipped, msg, diff, found = h.Changed, h.Failed, h.Skipped, h.Msg, string(b), true
			}
		}
	}
	if !found {
		t.Fatalf("no task %q ran on %s", task, host)
	}
	return
}

type env struct {
	t                  *testing.T
	dir, bin, tbhost   string
	inventory, plans   string
	collections, state string
}

func build(t *testing.T, out, pkg string, ldflags ...string) {
	t.Helper()
	args := []string{"build", "-o", out}
	args = append(args, ldflags...)
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

func setup(t *testing.T) *env {
	t.Helper()
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook not installed (Debian package ansible-core): skipping the Ansible collection test")
	}
	dir := t.TempDir()
	e := &env{t: t, dir: dir, bin: filepath.Join(dir, "bin"), plans: filepath.Join(dir, "plans")}
	e.tbhost = filepath.Join(e.bin, "tbhost")
	build(t, e.tbhost, "github.com/tbhost/tbhost/cmd/tbhost")
	build(t, filepath.Join(e.bin, "lvm"), "github.com/tbhost/tbhost/contrib/ansible/tests/fakelvm")
	here, _ := os.Getwd()
	e.collections = here
	var inv strings.Builder
	inv.WriteString("[tablebase]\n")
	for _, h := range []string{"tb1", "tb2"} {
		hd := filepath.Join(dir, h)
		if err := os.MkdirAll(hd, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(filepath.Join(e.bin, "lvm"), "fake-setup", hd).CombinedOutput(); err != nil {
			t.Fatalf("fake-setup: %v %s", err, out)
		}
		// the fake lvm answers for the fixture tree (tbhost asks no lvm
		// about a --root tree without lvm/ reports unless told so)
		envJSON, _ := json.Marshal(map[string]string{"PATH": e.bin + ":" + os.Getenv("PATH"), "FAKE_LVM_STATE": hd,
			cliutil.RootLVMOnPathEnv: "1"})
		inv.WriteString(h + " ansible_connection=local ansible_python_interpreter=/usr/bin/python3" +
			" tbhost_root=" + filepath.Join(hd, "root") + " tbhost_plan_file=" + filepath.Join(hd, "plan.yaml") +
			" tbhost_binary=" + e.tbhost + " tbhost_environment='" + string(envJSON) + "'\n")
	}
	e.inventory = filepath.Join(dir, "hosts")
	if err := os.WriteFile(e.inventory, []byte(inv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) playbook(args ...string) (run, string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ansible-playbook", append([]string{"-i", e.inventory, "-e", "tbhost_review_dir=" + e.plans}, args...)...)
	cmd.Env = append(os.Environ(),
		"ANSIBLE_COLLECTIONS_PATH="+e.collections, "ANSIBLE_STDOUT_CALLBACK=tbhost_json", "ANSIBLE_CALLBACK_PLUGINS="+filepath.Join(e.collections, "tests/callback_plugins"),
		"ANSIBLE_LOCAL_TEMP="+filepath.Join(e.dir, "atmp"), "ANSIBLE_REMOTE_TEMP="+filepath.Join(e.dir, "rtmp"),
		"ANSIBLE_NOCOLOR=1", "ANSIBLE_RETRY_FILES_ENABLED=0", "ANSIBLE_HOST_KEY_CHECKING=0", "ANSIBLE_GATHERING=explicit")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run() // failures are in the JSON
	var r run
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		e.t.Fatalf("ansible-playbook %v: no JSON result: %v\nstdout: %s\nstderr: %s", args, err, out.String(), errb.String())
	}
	return r, out.String()
}

func writes(t *testing.T, hostDir string) int {
	b, err := os.ReadFile(filepath.Join(hostDir, "writes"))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

const provision = "ansible_collections/tbhost/tbhost/playbooks/provision.yml"

const applyTask = "Apply (in check mode, the commands it would run; nothing written)"

// The example playbook: plan both hosts and collect the plans; apply in
// check mode reports the commands and writes nothing; apply builds; apply
// again on a host that matches its plan changes nothing.
func TestProvisionPlaybook(t *testing.T) {
	e := setup(t)
	tb1, tb2 := filepath.Join(e.dir, "tb1"), filepath.Join(e.dir, "tb2")

	r, raw := e.playbook(provision)
	for _, h := range []string{"tb1", "tb2"} {
		if ch, failed, _, msg, _ := r.result(t, "Plan", h); !ch || failed {
			t.Fatalf("plan on %s: changed %v failed %v %s\n%s", h, ch, failed, msg, raw)
		}
		if _, err := os.Stat(filepath.Join(e.plans, h+".yaml")); err != nil {
			t.Errorf("plan of %s not collected for review: %v", h, err)
		}
		if _, _, skipped, _, _ := r.result(t, applyTask, h); !skipped {
			t.Errorf("apply ran on %s without tbhost_apply", h)
		}
	}

	r, raw = e.playbook(provision, "--check", "--diff", "-e", "tbhost_apply=true")
	for _, h := range []string{"tb1", "tb2"} {
		if ch, _, _, _, _ := r.result(t, "Plan", h); ch {
			t.Errorf("re-plan of an unchanged host %s reported changed", h)
		}
		ch, failed, _, msg, diff := r.result(t, applyTask, h)
		if !ch || failed || !strings.Contains(diff, "lvm lvcreate --yes --wipesignatures y --type raid5 --stripes 5") || !strings.Contains(diff, "lvm pvcreate") {
			t.Errorf("check-mode apply on blank %s: changed %v failed %v %s diff %s\n%s", h, ch, failed, msg, diff, raw)
		}
	}
	if n := writes(t, tb1) + writes(t, tb2); n != 0 {
		t.Fatalf("check mode wrote %d lvm commands", n)
	}

	r, raw = e.playbook(provision, "-e", "tbhost_apply=true", "-e", "tbhost_hosts=tb1")
	if ch, failed, _, msg, diff := r.result(t, applyTask, "tb1"); !ch || failed || !strings.Contains(diff, "lvm vgcreate") {
		t.Fatalf("apply on tb1: changed %v failed %v %s %s\n%s", ch, failed, msg, diff, raw)
	}
	if n := writes(t, tb1); n != 12 {
		t.Errorf("apply ran %d lvm writes on tb1, want the plan's 12", n)
	}
	if n := writes(t, tb2); n != 0 {
		t.Errorf("apply limited to tb1 wrote %d commands on tb2", n)
	}

	r, raw = e.playbook(provision, "-e", "tbhost_apply=true", "-e", "tbhost_hosts=tb1")
	if ch, failed, _, msg, _ := r.result(t, applyTask, "tb1"); ch || failed {
		t.Errorf("apply on tb1, which matches its plan: changed %v failed %v %s\n%s", ch, failed, msg, raw)
	}
	if n := writes(t, tb1); n != 12 {
		t.Errorf("second apply wrote more: %d", n)
	}

	// the other modules, and a refused apply (tb2: the reference host's plan)
	stale := filepath.Join(e.dir, "reference-plan.yaml")
	if out, err := exec.Command(e.tbhost, "lvm", "plan", "--example", "-o", stale).CombinedOutput(); err != nil {
		t.Fatalf("plan --example: %v %s", err, out)
	}
	store := filepath.Join(e.dir, "store")
	if err := os.MkdirAll(store, 0o755); err != nil {
		t.Fatal(err)
	}
	here, _ := os.Getwd()
	captures := filepath.Join(here, "../../internal/lab/testdata/captures")
	tables := filepath.Join(here, "../../../shared/syzygy")
	if _, err := os.Stat(tables); err != nil {
		t.Skipf("the shared tables (%s) are not there: skipping the module checks", tables)
	}
	r, raw = e.playbook("tests/modules.yml", "-e", "tbhost_hosts=tb1", "-e", "integrity_host=true",
		"-e", "stale_plan="+stale, "-e", "store_dir="+store, "-e", "tables_dir="+tables,
		"-e", "capture_balanced="+fixturetree.Dir(t, filepath.Join(captures, "raid5-integrity-stripes5.tar.gz")),
		"-e", "capture_misbuilt="+fixturetree.Dir(t, filepath.Join(captures, "raid5-no-stripes.tar.gz")))
	if s := r.Stats["tb1"]; s.Failures != 0 || s.Ok == 0 {
		t.Errorf("tests/modules.yml: %+v\n%s", s, raw)
	}
	if n := writes(t, tb1); n != 12 {
		t.Errorf("the refused apply wrote: %d lvm writes", n)
	}
}
