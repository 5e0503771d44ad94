package monitor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/tbhost/tbhost/internal/atomicfile"
	"github.com/tbhost/tbhost/internal/filelock"
)

// textfileLockWait bounds how long WriteTextfile waits for another monitor
// check writing the same textfile: a write holds the lock for milliseconds,
// so a lock held longer is a check stuck on its file system.
const textfileLockWait = 10 * time.Second

// WriteTextfile writes the report for node_exporter's textfile collector,
// atomically and durably: a temporary file in the same directory, fsync,
// rename, fsync of the directory (a power loss leaves the old file or the
// new one, never an empty one).
//
// Checks writing the same textfile take turns on path+".lock" (node_exporter
// reads only *.prom files). The lock's holder is the textfile's only
// writer, so it first removes the temporaries a killed check left
// (.NAME.tmp<digits>, and the NAME<digits> of earlier tbhost versions,
// which wrote it through client_golang); a temporary a running check is writing is never
// removed. The wait for the lock ends with ctx or after textfileLockWait.
func (r Report) WriteTextfile(ctx context.Context, path string, now float64) error {
	// say what is wrong with the path the user gave, rather than name a
	// temporary file or fail a rename over a directory with "file exists"
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("write textfile %s: it is a directory: give a file in it, e.g. %s", path, filepath.Join(path, "tbhost.prom"))
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("write textfile %s: the directory %s does not exist: create it, or give the directory node_exporter's --collector.textfile.directory reads", path, dir)
		}
		return fmt.Errorf("write textfile %s: %w", path, err)
	} else if !fi.IsDir() {
		return fmt.Errorf("write textfile %s: %s is not a directory", path, dir)
	}
	mfs, err := r.Registry(now).Gather()
	if err != nil {
		return fmt.Errorf("write textfile %s: %w", path, err)
	}
	var buf bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			return fmt.Errorf("write textfile %s: %w", path, err)
		}
	}
	lockPath := path + ".lock"
	wctx, cancel := context.WithTimeout(ctx, textfileLockWait)
	defer cancel()
	lock, err := filelock.Wait(wctx, lockPath, 0o644, 20*time.Millisecond)
	switch {
	case errors.Is(err, filelock.ErrHeld):
		return fmt.Errorf("write textfile %s: another tbhost monitor check is writing it and holds %s (%w)", path, lockPath, context.Cause(wctx))
	case err != nil:
		return fmt.Errorf("write textfile %s: %w", path, err)
	}
	defer lock.Unlock()
	removeTextfileTemps(path)
	if err := atomicfile.WriteFile(path, buf.Bytes(), atomicfile.Options{Perm: 0o644}); err != nil {
		return fmt.Errorf("write textfile %s: %w", path, err)
	}
	return nil
}

// removeTextfileTemps removes the temporary files of path that checks
// killed between their create and their rename left: atomicfile's, and the
// NAME<digits> client_golang's WriteToTextfile named them before. Only
// under path's lock.
func removeTextfileTemps(path string) {
	atomicfile.RemoveTemps(path, atomicfile.Options{})
	dir, base := filepath.Dir(path), filepath.Base(path)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if digits, ok := strings.CutPrefix(e.Name(), base); ok && digits != "" && strings.Trim(digits, "0123456789") == "" && e.Type().IsRegular() {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
