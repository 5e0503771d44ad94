// Package rsyncd starts an rsync daemon on 127.0.0.1 for tests: the "old
// host" a tables sync copies from. Tests only; the binary does not link it.
package rsyncd

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/realdata"
)

// Start serves dir read-only as module "tables" and returns its URL
// (rsync://127.0.0.1:PORT/tables). It skips the test without rsync.
func Start(t *testing.T, dir string) string {
	t.Helper()
	rsync, err := exec.LookPath("rsync")
	if err != nil {
		t.Skip("SKIP: rsync not installed (Debian package rsync; `make deps` installs it): cannot run the old-host daemon")
	}
	work := t.TempDir()
	conf := filepath.Join(work, "rsyncd.conf")
	body := fmt.Sprintf("use chroot = no\npid file = %s\nlog file = %s\n[tables]\npath = %s\nread only = yes\n",
		filepath.Join(work, "rsyncd.pid"), filepath.Join(work, "rsyncd.log"), dir)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for attempt := 0; attempt < 5; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		cmd := exec.Command(rsync, "--daemon", "--no-detach", "--config="+conf, "--address=127.0.0.1", "--port="+strconv.Itoa(port))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
		for i := 0; i < 100; i++ {
			if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
				c.Close()
				return fmt.Sprintf("rsync://127.0.0.1:%d/tables", port)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Fatal("the rsync daemon did not start listening")
	return ""
}

// OldHost is a loopback "old host": the 24 real tables that match the
// published lists (12 WDL at the top, 12 DTZ under dtz/), and a lists
// directory holding the published lines for exactly those 24 files, so
// "missing" means missing from what the old host had.
type OldHost struct {
	Dir, Lists, URL string
	Names           []string
}

func NewOldHost(t *testing.T) OldHost {
	t.Helper()
	data := realdata.Dir(t)
	bad := map[string]bool{}
	for _, n := range realdata.OldGenerator {
		bad[n] = true
	}
	h := OldHost{Dir: t.TempDir(), Lists: t.TempDir()}
	tables, _ := filepath.Glob(filepath.Join(data, "tables", "*.rtb[wz]"))
	for _, p := range tables {
		name := filepath.Base(p)
		if bad[name] {
			continue
		}
		rel := name
		if strings.HasSuffix(name, ".rtbz") {
			rel = filepath.Join("dtz", name)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(h.Dir, rel)), 0o755)
		if err := os.WriteFile(filepath.Join(h.Dir, rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
		h.Names = append(h.Names, name)
	}
	if len(h.Names) != 24 {
		t.Fatalf("%d good real tables, want 24", len(h.Names))
	}
	keep := map[string]bool{}
	for _, n := range h.Names {
		keep[n] = true
	}
	for _, l := range []string{"bytes.tsv", "tbcheck.txt", "sha256"} {
		f, err := os.Open(filepath.Join(data, "checksums", "syzygy-tables.info", l))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			for _, field := range strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == ':' }) {
				if keep[field] {
					out.WriteString(line + "\n")
					break
				}
			}
		}
		f.Close()
		if err := os.WriteFile(filepath.Join(h.Lists, l), out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h.URL = Start(t, h.Dir)
	return h
}

// Path is where a table is on the old host.
func (h OldHost) Path(name string) string {
	if strings.HasSuffix(name, ".rtbz") {
		return filepath.Join(h.Dir, "dtz", name)
	}
	return filepath.Join(h.Dir, name)
}
