package playbookcmd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tbhost/tbhost/internal/atomicfile"
	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/sysread"
	"github.com/tbhost/tbhost/playbooks"
	"github.com/urfave/cli/v2"
)

func scheduleCommand() *cli.Command {
	return &cli.Command{
		Name:      "schedule",
		Usage:     "a daily systemd service + timer (default) or cron.d line for a playbook; --install writes them",
		ArgsUsage: "NAME|FILE",
		Description: `Prints the units (or the cron.d file) that run "tbhost playbook run --yes NAME" daily
   at --at. Two runs never overlap: a systemd timer does not start a oneshot service that is
   still running, the cron line holds flock -n, and tbhost locks each playbook's state
   directory as well.

   tbhost playbook schedule health-check                        print the systemd units
   tbhost playbook schedule health-check --install              write them to /etc/systemd/system
   tbhost playbook schedule health-check --cron --at 04:15      print an /etc/cron.d file`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "systemd", Usage: "a systemd service + timer (the default)"},
			&cli.BoolFlag{Name: "cron", Usage: "an /etc/cron.d file with flock -n"},
			&cli.StringFlag{Name: "at", Value: "03:30", Usage: "daily start time `HH:MM` (systemd adds up to 10 min random delay)"},
			setFlag(),
			&cli.StringFlag{Name: "binary", Usage: "the tbhost binary the units run (default: this one, `PATH`)"},
			&cli.StringFlag{Name: "user", Value: "root", Usage: "cron: the user the job runs as"},
			&cli.BoolFlag{Name: "install", Usage: "write the files (to --dest) instead of printing them"},
			&cli.StringFlag{Name: "dest", Usage: "where --install writes: default /etc/systemd/system, or /etc/cron.d with --cron (`DIR`)"},
			&cli.BoolFlag{Name: "force", Usage: "--install: replace files that differ"},
		},
		Action: scheduleAction,
	}
}

func scheduleAction(c *cli.Context) error {
	arg, err := onePlaybook(c, "schedule")
	if err != nil {
		return err
	}
	g := cliutil.Get(c)
	if c.Bool("systemd") && c.Bool("cron") {
		return cliutil.Usagef("give --systemd or --cron, not both")
	}
	pb, err := load(arg)
	if err != nil {
		return err
	}
	set, err := playbooks.ParseSet(sets(c))
	if err != nil {
		return cliutil.Usage(err)
	}
	if _, err := playbooks.Resolve(pb, set); err != nil {
		return cliutil.Usage(err)
	}
	if _, err := playbooks.Validate(pb, liveCommands{c.App}); err != nil {
		return cliutil.Problem(fmt.Errorf("refusing to schedule a playbook that does not validate against this build:\n%w", err))
	}
	for _, s := range pb.Steps {
		if s.Confirm != nil {
			return cliutil.Problemf("playbook %s has a confirmation gate (step %s: %q); a scheduled run would pass it unattended with --yes, so tbhost does not schedule it: schedule check playbooks such as health-check", pb.Name, s.Name, s.Confirm.Prompt)
		}
	}
	hour, minute, err := playbooks.ParseAt(c.String("at"))
	if err != nil {
		return cliutil.Usage(err)
	}
	if !strings.HasPrefix(pb.File, "embedded:") {
		if arg, err = filepath.Abs(arg); err != nil {
			return cliutil.CannotRun(err)
		}
	}
	binary := c.String("binary")
	if binary == "" {
		if binary, err = os.Executable(); err != nil {
			return cliutil.CannotRun(fmt.Errorf("find this tbhost binary (pass --binary): %w", err))
		}
		if resolved, err := filepath.EvalSymlinks(binary); err == nil {
			binary = resolved
		}
		if strings.Contains(binary, "go-build") || strings.HasPrefix(binary, os.TempDir()) {
			msg := fmt.Sprintf("this tbhost runs from a temporary build (%s): install it (e.g. go build -o /usr/local/bin/tbhost ./cmd/tbhost) and pass --binary /usr/local/bin/tbhost", binary)
			if c.Bool("install") {
				return cliutil.Problemf("%s", msg)
			}
			fmt.Fprintf(g.Stderr, "warning: %s\n", msg)
		}
	}
	if !filepath.IsAbs(binary) {
		return cliutil.Usagef("--binary %s: give an absolute path (cron and systemd do not search your PATH)", binary)
	}
	var args []string
	for _, s := range sets(c) {
		args = append(args, "--set", s)
	}
	sch := playbooks.Schedule{Name: pb.Name, Playbook: arg, Binary: binary, Args: args, Hour: hour, Minute: minute, User: c.String("user")}
	if err := sch.Check(); err != nil {
		if c.Bool("install") {
			return cliutil.Usage(fmt.Errorf("nothing written: %w", err))
		}
		return cliutil.Usage(err)
	}
	type file struct{ name, content string }
	var files []file
	dest := c.String("dest")
	if c.Bool("cron") {
		files = []file{{sch.UnitName(), sch.Cron()}}
		if dest == "" {
			dest = "/etc/cron.d"
		}
	} else {
		files = []file{{sch.UnitName() + ".service", sch.Service()}, {sch.UnitName() + ".timer", sch.Timer()}}
		if dest == "" {
			dest = "/etc/systemd/system"
		}
	}
	// --json: {"files": [{"path", "content", "action"}], "next": "..."} (issue 18)
	type fileJSON struct {
		Path    string `json:"path"`
		Content string `json:"content"`
		Action  string `json:"action"` // print (no --install), wrote, unchanged
	}
	var doc struct {
		Files []fileJSON `json:"files"`
		Next  string     `json:"next,omitempty"`
	}
	if !c.Bool("install") && g.JSON {
		for _, f := range files {
			doc.Files = append(doc.Files, fileJSON{filepath.Join(dest, f.name), f.content, "print"})
		}
		return cliutil.PrintJSON(g.Stdout, doc)
	}
	if !c.Bool("install") {
		for i, f := range files {
			if i > 0 {
				fmt.Fprintln(g.Stdout)
			}
			fmt.Fprintf(g.Stdout, "# ---- %s\n%s", filepath.Join(dest, f.name), f.content)
		}
		return nil
	}
	// Every file is checked before any is written: a refusal leaves all as they were.
	unchanged := make([]bool, len(files))
	for i, f := range files {
		if unchanged[i], err = checkInstall(filepath.Join(dest, f.name), f.content, c.Bool("force")); err != nil {
			return err
		}
	}
	out := g.Stdout
	if g.JSON {
		out = io.Discard // the document below says it
	}
	for i, f := range files {
		path := filepath.Join(dest, f.name)
		if unchanged[i] {
			doc.Files = append(doc.Files, fileJSON{path, f.content, "unchanged"})
			fmt.Fprintf(out, "unchanged: %s\n", path)
			continue
		}
		if err := writeAtomic(path, f.content); err != nil {
			return err
		}
		doc.Files = append(doc.Files, fileJSON{path, f.content, "wrote"})
		fmt.Fprintf(out, "wrote %s\n", path)
	}
	if c.Bool("cron") {
		doc.Next = fmt.Sprintf("cron picks up %s by itself.", filepath.Join(dest, files[0].name))
		fmt.Fprintf(out, "%s\n", doc.Next)
	} else {
		doc.Next = fmt.Sprintf("systemctl daemon-reload && systemctl enable --now %s.timer", sch.UnitName())
		fmt.Fprintf(out, "next: %s\n", doc.Next)
	}
	if g.JSON {
		return cliutil.PrintJSON(g.Stdout, doc)
	}
	return nil
}

// checkInstall decides whether content may be installed at path: unchanged
// is true when an identical regular file is there; a different one is
// refused without force, and a symlink or anything but a regular file is
// always refused (readRegular).
func checkInstall(path, content string, force bool) (unchanged bool, err error) {
	old, err := readRegular(path)
	switch {
	case err == nil && bytes.Equal(old, []byte(content)):
		return true, nil
	case err == nil && !force:
		return false, cliutil.Problemf("%s exists and differs from what tbhost would write: compare with the printed version (without --install), then re-run with --force to replace it", path)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return false, err
	}
	return false, nil
}

// writeAtomic writes content to path (0644) without ever writing through a
// symlink: a fresh temporary (O_EXCL, random name) in the same directory,
// synced and renamed over path, then the directory synced
// (internal/atomicfile).
func writeAtomic(path, content string) error {
	err := atomicfile.WriteFile(path, []byte(content), atomicfile.Options{Temp: "." + filepath.Base(path) + ".tbhost-*", Perm: 0o644})
	switch {
	case errors.Is(err, fs.ErrPermission):
		return cliutil.CannotRun(fmt.Errorf("write %s: %w (run as root, or choose --dest)", path, err))
	case err != nil:
		return cliutil.CannotRun(fmt.Errorf("install %s: %w", path, err))
	}
	return nil
}

// readRegular reads path if it is a regular file. A symlink or any other
// kind of file there is a refusal (exit 1): tbhost does not write through or
// replace it. A missing file is fs.ErrNotExist.
func readRegular(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, cliutil.CannotRun(fmt.Errorf("look at %s: %w", path, err))
	}
	if !fi.Mode().IsRegular() {
		return nil, cliutil.Problemf("%s is a %s, not a regular file: tbhost does not install through or over it; remove it (after checking who put it there) or choose --dest", path, sysread.FileKind(fi.Mode()))
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, cliutil.CannotRun(fmt.Errorf("read %s: %w", path, err))
	}
	defer f.Close()
	if fi2, err := f.Stat(); err != nil || !os.SameFile(fi, fi2) {
		return nil, cliutil.Problemf("%s changed while tbhost looked at it; nothing written", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, cliutil.CannotRun(fmt.Errorf("read %s: %w", path, err))
	}
	return b, nil
}
