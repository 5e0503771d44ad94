package playbookcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dirIsEmpty fails the test when dir holds anything.
func dirIsEmpty(t *testing.T, dir, what string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(ents) > 0 {
		t.Errorf("%s: %s holds %v; nothing may be written", what, dir, ents[0].Name())
	}
}

// Issue 12 defect 5: newlines and spaces reached generated files. Each
// repro is now a usage error (exit 2) naming the parameter, before any file
// is written (with --install into a temporary --dest) or printed.
func TestScheduleRefusesValuesThatBreakLines(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"cron --user with a newline (a second cron line)",
			[]string{"--cron", "--user", "root\n* * * * * root touch /tmp/x"}, "--user"},
		{"cron --user with a space (moves the command)",
			[]string{"--cron", "--user", "root touch"}, "--user"},
		{"cron --user upper case", []string{"--cron", "--user", "Root"}, "--user"},
		{"--set value with a newline (breaks the systemd unit)",
			[]string{"--set", "scrub_rate=50MiB/s\nExecStartPre=/bin/touch /tmp/x"}, "parameter scrub_rate"},
		{"--set value with a newline in cron",
			[]string{"--cron", "--set", "array=vg-hdd/tables\n* * * * * root touch /tmp/x"}, "parameter array"},
		{"--set value with a carriage return",
			[]string{"--set", "scrub_rate=50MiB/s\rx"}, "parameter scrub_rate"},
		{"--set path with a space", []string{"--set", "store=/srv/my store"}, "parameter store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, install := range []bool{false, true} {
				dest := t.TempDir()
				args := append([]string{"playbook", "schedule", "--binary", "/usr/local/bin/tbhost", "--dest", dest}, tc.args...)
				if install {
					args = append(args, "--install")
				}
				args = append(args, "health-check")
				code, out, stderr := runApp(t, true, args...)
				if code != 2 || !strings.Contains(stderr, tc.want) {
					t.Errorf("install=%v: exit %d, want 2 naming %s\nstdout: %s\nstderr: %s", install, code, tc.want, out, stderr)
				}
				if out != "" {
					t.Errorf("install=%v: printed a unit or cron file:\n%s", install, out)
				}
				dirIsEmpty(t, dest, tc.name)
			}
		})
	}
	// What is valid still works: a user name by useradd's rules.
	code, out, stderr := runApp(t, true, "playbook", "schedule", "--cron", "--user", "tb_host-1", "--binary", "/usr/local/bin/tbhost", "health-check")
	if code != 0 || !strings.Contains(out, "* * * tb_host-1 flock -n") {
		t.Errorf("valid user: exit %d\n%s%s", code, out, stderr)
	}
}

// provision-host's tables_mount with a space wrote a 7-field fstab line, with
// a newline a second line; --set values of every type with control characters
// are refused before any step runs (or is planned).
func TestRunRefusesValuesThatBreakFstabLines(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"tables_mount=/srv/syzy gy", "parameter tables_mount"},
		{"tables_mount=/srv/syzygy\nUUID=x / ext4 defaults 0 1", "parameter tables_mount"},
		{`tables_mount=/srv/a\040b`, "parameter tables_mount"},
		{"prefix_mount=/srv/p\tq", "parameter prefix_mount"},
		{"fstab_file=/etc/fstab\n", "parameter fstab_file"},
		{"tables_lv=vg-hdd/tables\n/dev/x /mnt ext4", "parameter tables_lv"},
		{"hdd=/dev/sda,/dev/sdb\n", "parameter hdd"},
		{"prefix_size=1GiB\x00", "parameter prefix_size"},
		{"monitor_for=30s\x7f", "parameter monitor_for"},
	} {
		state := t.TempDir()
		fstab := filepath.Join(t.TempDir(), "fstab")
		code, out, stderr := runApp(t, true, "playbook", "run", "--dry-run", "--state-dir", state,
			"--set", "fstab_file="+fstab, "--set", tc.set, "provision-host")
		if strings.HasPrefix(tc.set, "fstab_file=") {
			code, out, stderr = runApp(t, true, "playbook", "run", "--dry-run", "--state-dir", state, "--set", tc.set, "provision-host")
		}
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("--set %q: exit %d, want 2 naming %s\n%s%s", tc.set, code, tc.want, out, stderr)
		}
		if strings.Contains(out, "fstab") {
			t.Errorf("--set %q: planned the fstab steps:\n%s", tc.set, out)
		}
		dirIsEmpty(t, state, tc.set)
		if _, err := os.Stat(fstab); err == nil {
			t.Errorf("--set %q: %s was written", tc.set, fstab)
		}
	}
}

// provision-host formats /dev/{{.tables_lv}} and /dev/{{.prefix_lv}}: a
// value that is no VG/LV name (../sda, a kernel name, an option) would have
// made mkfs's target a raw disk, guarded only by the step's "has blkid a
// TYPE=" skip, which a disk holding just a partition table passes. Such
// values are a usage error before anything is planned; VG/LV names pass.
func TestRunRefusesLVNamesThatNameAnotherDevice(t *testing.T) {
	for _, set := range []string{
		"tables_lv=../sda", "tables_lv=sdb", "tables_lv=vg-hdd/../../sda", "tables_lv=vg-hdd/-tables",
		"prefix_lv=../nvme0n1", "prefix_lv=mapper", "prefix_lv=./vg/prefix", "prefix_lv=vg-nvme/prefix/x",
	} {
		state := t.TempDir()
		code, out, stderr := runApp(t, true, "playbook", "run", "--dry-run", "--state-dir", state, "--set", set, "provision-host")
		param, _, _ := strings.Cut(set, "=")
		if code != 2 || !strings.Contains(stderr, "parameter "+param) {
			t.Errorf("--set %q: exit %d, want 2 naming parameter %s\n%s%s", set, code, param, out, stderr)
		}
		if strings.Contains(out, "mkfs") {
			t.Errorf("--set %q: planned the mkfs steps:\n%s", set, out)
		}
		dirIsEmpty(t, state, set)
	}
	for _, set := range []string{"tables_lv=vg_hdd2/tb.tables+1", "prefix_lv=nvme/prefix-store"} {
		code, out, stderr := runApp(t, true, "playbook", "run", "--dry-run", "--state-dir", t.TempDir(), "--set", set, "provision-host")
		_, lv, _ := strings.Cut(set, "=")
		if code != 0 || !strings.Contains(out, "/dev/"+lv) {
			t.Errorf("--set %q: exit %d, want 0 with /dev/%s in the plan\n%s%s", set, code, lv, out, stderr)
		}
	}
}

// Issue 12 item 8: schedule --install wrote through a pre-planted symlink.
// A symlink at a unit's path is refused (exit 1, with or without --force),
// its target and the link stay as they were, and no file is written; a
// symlink at the old fixed temporary name is never followed.
func TestScheduleInstallRefusesSymlinks(t *testing.T) {
	victimDir := t.TempDir()
	victim := filepath.Join(victimDir, "shadow")
	const secret = "root:$y$...:19000:0:99999:7:::\n"
	if err := os.WriteFile(victim, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, planted := range []string{"tbhost-health-check.service", "tbhost-health-check.timer", "tbhost-health-check.service.tbhost-new"} {
		for _, extra := range [][]string{nil, {"--force"}} {
			for _, target := range []string{victim, filepath.Join(victimDir, "missing")} {
				dest := t.TempDir()
				link := filepath.Join(dest, planted)
				if err := os.Symlink(target, link); err != nil {
					t.Fatal(err)
				}
				args := append([]string{"playbook", "schedule", "--install", "--dest", dest, "--binary", "/usr/local/bin/tbhost"}, extra...)
				code, out, stderr := runApp(t, true, append(args, "health-check")...)
				if strings.HasSuffix(planted, ".tbhost-new") {
					// not a name tbhost uses any more: the install works and ignores it
					if code != 0 {
						t.Errorf("%s %v: exit %d %s%s", planted, extra, code, out, stderr)
					}
				} else {
					if code != 1 || !strings.Contains(stderr, "is a symlink") {
						t.Errorf("%s -> %s %v: exit %d, want 1 refusing the symlink\n%s%s", planted, target, extra, code, out, stderr)
					}
					ents, _ := os.ReadDir(dest)
					if len(ents) != 1 {
						t.Errorf("%s %v: the refused install wrote files: %v", planted, extra, ents)
					}
				}
				if got, err := os.Readlink(link); err != nil || got != target {
					t.Errorf("%s: the link was replaced or changed (%q, %v)", planted, got, err)
				}
				if b, _ := os.ReadFile(victim); string(b) != secret {
					t.Fatalf("%s %v: the install wrote through the symlink into %s:\n%s", planted, extra, victim, b)
				}
				if _, err := os.Lstat(filepath.Join(victimDir, "missing")); err == nil {
					t.Fatalf("%s %v: the install created the dangling link's target", planted, extra)
				}
			}
		}
	}
	// A directory in the way is refused the same way.
	dest := t.TempDir()
	os.Mkdir(filepath.Join(dest, "tbhost-health-check.timer"), 0o755)
	if code, _, stderr := runApp(t, true, "playbook", "schedule", "--install", "--dest", dest, "--binary", "/usr/local/bin/tbhost", "health-check"); code != 1 || !strings.Contains(stderr, "is a directory") {
		t.Errorf("directory in the way: exit %d %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dest, "tbhost-health-check.service")); err == nil {
		t.Error("the service was written although the timer was refused")
	}
}
