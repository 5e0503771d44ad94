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

// userland returns a PATH directory with sh, grep, sed and a fake blkid,
// from busybox when busybox is set, else from the host.
func userland(t *testing.T, busybox string) string {
	dir := t.TempDir()
	for _, applet := range []string{"sh", "grep", "sed", "mkdir", "cat"} {
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
	// blkid as util-linux prints it (busybox's has the same UUID="..." form).
	blkid := "#!" + filepath.Join(dir, "sh") + "\necho \"$1: LABEL=\\\"tables\\\" UUID=\\\"0b6e1c6e-1111-4a4a-9c9c-123456789abc\\\" BLOCK_SIZE=\\\"4096\\\" TYPE=\\\"ext4\\\" PARTUUID=\\\"ffff\\\"\"\n"
	if err := os.WriteFile(filepath.Join(dir, "blkid"), []byte(blkid), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The fstab step of provision-host: adds the line by UUID once, leaves it
// alone on a re-run, and refuses a conflicting line, in sh and busybox sh.
func TestProvisionFstabStepInHostAndBusyboxShell(t *testing.T) {
	lands := map[string]string{"host": ""}
	if bb, err := exec.LookPath("busybox"); err == nil {
		lands["busybox"] = bb
	} else {
		t.Log("busybox not installed (Debian busybox-static): checking the host shell only")
	}
	pb, err := Embedded("provision-host")
	if err != nil {
		t.Fatal(err)
	}
	i, ok := pb.Step("fstab-tables")
	if !ok {
		t.Fatal("no fstab-tables step")
	}
	for name, bb := range lands {
		t.Run(name, func(t *testing.T) {
			bin := userland(t, bb)
			fstab := filepath.Join(t.TempDir(), "fstab")
			os.WriteFile(fstab, []byte("# /etc/fstab\nUUID=aaaa / ext4 defaults 0 1\n"), 0o644)
			vals, err := Resolve(pb, map[string][]string{"fstab_file": {fstab}})
			if err != nil {
				t.Fatal(err)
			}
			r := &run{e: &Engine{}, pb: pb, opts: Options{Values: vals}}
			argv, _, err := r.resolve(pb.Steps[i].Action)
			if err != nil {
				t.Fatal(err)
			}
			argv[0] = filepath.Join(bin, "sh")
			runStep := func() (int, string) {
				var out bytes.Buffer
				cmd := exec.CommandContext(context.Background(), argv[0], argv[1:]...)
				cmd.Env = []string{"PATH=" + bin}
				cmd.Stdout, cmd.Stderr = &out, &out
				cmd.Run()
				return cmd.ProcessState.ExitCode(), out.String()
			}
			want := "UUID=0b6e1c6e-1111-4a4a-9c9c-123456789abc /srv/syzygy ext4 noatime,nofail 0 2\n"
			if code, out := runStep(); code != 0 || !strings.Contains(out, "added to") {
				t.Fatalf("first run: exit %d %s", code, out)
			}
			b, _ := os.ReadFile(fstab)
			if !strings.HasSuffix(string(b), want) {
				t.Fatalf("fstab:\n%s\nwant it to end with %q", b, want)
			}
			if code, out := runStep(); code != 0 || !strings.Contains(out, "already in") {
				t.Fatalf("second run: exit %d %s", code, out)
			}
			if b2, _ := os.ReadFile(fstab); !bytes.Equal(b, b2) {
				t.Fatalf("a re-run changed fstab:\n%s", b2)
			}
			os.WriteFile(fstab, []byte("/dev/sdz1 /srv/syzygy xfs defaults 0 2\n"), 0o644)
			if code, out := runStep(); code != 1 || !strings.Contains(out, "already mounts something else on /srv/syzygy") {
				t.Fatalf("conflict: exit %d %s", code, out)
			}
		})
	}
}
