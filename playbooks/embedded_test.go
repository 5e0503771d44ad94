package playbooks

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// userland returns a PATH directory with sh, grep, sed, awk, mkdir and cat
// (from busybox when busybox is set, else the host's) and a fake of the tool
// that reads a filesystem's UUID: blkid (util-linux, real hosts) or
// tune2fs (e2fsprogs: the lab guest, whose busybox has no blkid).
func userland(t *testing.T, busybox, tool string) string {
	dir := t.TempDir()
	for _, applet := range []string{"sh", "grep", "sed", "awk", "mkdir", "cat"} {
		target := busybox
		if busybox == "" {
			p, err := exec.LookPath(applet)
			if err != nil {
				t.Fatal(err)
			}
			target = p
		}
		if err := os.Symlink(target, filepath.Join(dir, applet)); err != nil {
			t.Fatal(err)
		}
	}
	script := "#!" + filepath.Join(dir, "sh") + "\n"
	switch tool {
	case "blkid": // as util-linux prints it
		script += "case \"$1\" in *empty*) exit 2;; esac\n" +
			"echo \"$1: LABEL=\\\"tables\\\" UUID=\\\"0b6e1c6e-1111-4a4a-9c9c-123456789abc\\\" BLOCK_SIZE=\\\"4096\\\" TYPE=\\\"ext4\\\" PARTUUID=\\\"ffff\\\"\"\n"
	case "tune2fs": // tune2fs -l DEV
		script += "case \"$2\" in *empty*) echo \"tune2fs: Bad magic number in super-block\" >&2; exit 1;; esac\n" +
			"printf 'tune2fs 1.47.0 (5-Feb-2023)\\nFilesystem volume name:   tables\\nFilesystem UUID:          0b6e1c6e-1111-4a4a-9c9c-123456789abc\\nFilesystem magic number:  0xEF53\\n'\n"
	}
	if err := os.WriteFile(filepath.Join(dir, tool), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func runIn(bin string, argv []string) (int, string) {
	var out bytes.Buffer
	cmd := exec.CommandContext(context.Background(), filepath.Join(bin, "sh"), argv[1:]...)
	cmd.Env = []string{"PATH=" + bin}
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Run()
	return cmd.ProcessState.ExitCode(), out.String()
}

// provision-host's shell steps and checks (filesystem present?, mounted?,
// fstab by UUID) in the host's sh and in busybox sh, with blkid or with
// only e2fsprogs' tune2fs.
func TestProvisionShellStepsInHostAndBusyboxShell(t *testing.T) {
	// The busybox land is always listed: without busybox its subtests skip,
	// naming it, instead of the test passing on the host shell alone.
	lands := map[string]string{"host": "", "busybox": ""}
	busybox, busyboxErr := exec.LookPath("busybox")
	lands["busybox"] = busybox
	pb, err := Embedded("provision-host")
	if err != nil {
		t.Fatal(err)
	}
	step := func(name string) Step {
		i, ok := pb.Step(name)
		if !ok {
			t.Fatalf("no step %s", name)
		}
		return pb.Steps[i]
	}
	for land, bb := range lands {
		for _, tool := range []string{"blkid", "tune2fs"} {
			t.Run(land+"/"+tool, func(t *testing.T) {
				if land == "busybox" && busyboxErr != nil {
					t.Skip("busybox not installed (Debian busybox-static; .ci/install-deps installs it): cannot check the steps in busybox sh")
				}
				bin := userland(t, bb, tool)
				fstab := filepath.Join(t.TempDir(), "fstab")
				os.WriteFile(fstab, []byte("# /etc/fstab\nUUID=aaaa / ext4 defaults 0 1\n"), 0o644)
				resolve := func(c Command, set map[string][]string) []string {
					set["fstab_file"] = []string{fstab}
					vals, err := Resolve(pb, set)
					if err != nil {
						t.Fatal(err)
					}
					r := &run{e: &Engine{}, pb: pb, opts: Options{Values: vals}}
					argv, _, err := r.resolve(c)
					if err != nil {
						t.Fatal(err)
					}
					if argv[0] != "sh" {
						t.Fatalf("%v: want an sh step", argv)
					}
					return argv
				}
				// filesystem present?
				if code, out := runIn(bin, resolve(*step("mkfs-tables").SkipIf, map[string][]string{})); code != 0 {
					t.Errorf("has-filesystem check on a formatted LV: exit %d %s", code, out)
				}
				if code, out := runIn(bin, resolve(*step("mkfs-tables").SkipIf, map[string][]string{"tables_lv": {"vg/empty"}})); code == 0 {
					t.Errorf("has-filesystem check on an empty LV succeeded: %s", out)
				}
				// mounted?
				if code, out := runIn(bin, resolve(*step("mount-tables").SkipIf, map[string][]string{"tables_mount": {"/proc"}})); code != 0 {
					t.Errorf("mounted check on /proc: exit %d %s", code, out)
				}
				if code, _ := runIn(bin, resolve(*step("mount-tables").SkipIf, map[string][]string{"tables_mount": {"/srv/not-mounted"}})); code == 0 {
					t.Error("mounted check on an unmounted directory succeeded")
				}
				// fstab
				argv := resolve(step("fstab-tables").Action, map[string][]string{})
				want := "UUID=0b6e1c6e-1111-4a4a-9c9c-123456789abc /srv/syzygy ext4 noatime,nofail 0 2\n"
				if code, out := runIn(bin, argv); code != 0 || !strings.Contains(out, "added to") {
					t.Fatalf("first run: exit %d %s", code, out)
				}
				b, _ := os.ReadFile(fstab)
				if !strings.HasSuffix(string(b), want) {
					t.Fatalf("fstab:\n%s\nwant it to end with %q", b, want)
				}
				if code, out := runIn(bin, argv); code != 0 || !strings.Contains(out, "already in") {
					t.Fatalf("second run: exit %d %s", code, out)
				}
				if b2, _ := os.ReadFile(fstab); !bytes.Equal(b, b2) {
					t.Fatalf("a re-run changed fstab:\n%s", b2)
				}
				os.WriteFile(fstab, []byte("/dev/sdz1 /srv/syzygy xfs defaults 0 2\n"), 0o644)
				if code, out := runIn(bin, argv); code != 1 || !strings.Contains(out, "already mounts something else on /srv/syzygy") {
					t.Fatalf("conflict: exit %d %s", code, out)
				}
			})
		}
	}
}
