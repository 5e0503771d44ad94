package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// recFS is the real file system, recording each step in order and failing
// the one named in fail.
type recFS struct {
	osFS
	steps []string
	fail  string
}

var errInjected = errors.New("injected")

func (r *recFS) step(s string) error {
	r.steps = append(r.steps, s)
	if s == r.fail {
		return errInjected
	}
	return nil
}

func (r *recFS) CreateTemp(dir, pattern string) (file, error) {
	f, err := r.osFS.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return &recFile{file: f, fs: r}, r.step("create")
}

func (r *recFS) Rename(a, b string) error {
	if err := r.step("rename"); err != nil {
		return err
	}
	return r.osFS.Rename(a, b)
}

func (r *recFS) Link(a, b string) error {
	if err := r.step("link"); err != nil {
		return err
	}
	return r.osFS.Link(a, b)
}

func (r *recFS) Remove(name string) error {
	r.steps = append(r.steps, "remove")
	return r.osFS.Remove(name)
}

func (r *recFS) SyncDir(dir string) error {
	if err := r.step("syncdir"); err != nil {
		return err
	}
	return r.osFS.SyncDir(dir)
}

type recFile struct {
	file
	fs *recFS
}

func (f *recFile) Write(b []byte) (int, error) {
	if err := f.fs.step("write"); err != nil {
		return 0, err
	}
	return f.file.Write(b)
}

func (f *recFile) Sync() error {
	if err := f.fs.step("sync"); err != nil {
		return err
	}
	return f.file.Sync()
}

func (f *recFile) Close() error {
	if err := f.fs.step("close"); err != nil {
		f.file.Close()
		return err
	}
	return f.file.Close()
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// The data is fsynced before the rename and the directory after it: a
// crash then leaves the old file or the whole new one, and the rename.
func TestWriteSyncsTheFileBeforeTheRenameAndTheDirectoryAfter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &recFS{}
	if err := write(r, path, []byte("new"), Options{Perm: 0o644}); err != nil {
		t.Fatal(err)
	}
	want := []string{"create", "write", "sync", "close", "rename", "syncdir"}
	if !slices.Equal(r.steps, want) {
		t.Errorf("steps %v, want %v", r.steps, want)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("%s holds %q, want %q", path, b, "new")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v (%v), want 0644 whatever the umask", fi.Mode(), err)
	}
	if n := names(t, dir); !slices.Equal(n, []string{"state.json"}) {
		t.Errorf("directory holds %v, want only state.json", n)
	}
}

// A step that fails before the rename leaves the old file as it was and
// no temporary; its error is returned.
func TestAFailedWriteLeavesTheOldFileAndNoTemporary(t *testing.T) {
	for _, step := range []string{"write", "sync", "close", "rename"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "tbhost.prom")
			if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			r := &recFS{fail: step}
			if err := write(r, path, []byte("new"), Options{}); !errors.Is(err, errInjected) {
				t.Fatalf("error %v, want the injected one", err)
			}
			if b, _ := os.ReadFile(path); string(b) != "old" {
				t.Errorf("%s holds %q, want the old file", path, b)
			}
			if n := names(t, dir); !slices.Equal(n, []string{"tbhost.prom"}) {
				t.Errorf("directory holds %v, want only tbhost.prom", n)
			}
			if slices.Contains(r.steps, "rename") && step != "rename" {
				t.Errorf("renamed after the failed %s: %v", step, r.steps)
			}
		})
	}
}

// The directory's fsync failing is an error (the rename may not survive a
// crash), but the file is in place and no temporary is left.
func TestADirectorySyncErrorIsReported(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x")
	if err := write(&recFS{fail: "syncdir"}, path, []byte("new"), Options{}); !errors.Is(err, errInjected) {
		t.Fatalf("error %v, want the injected one", err)
	}
	if n := names(t, dir); !slices.Equal(n, []string{"x"}) {
		t.Errorf("directory holds %v, want only x", n)
	}
}

// A missing directory is the os package's error naming it; nothing is
// created.
func TestWriteIntoAMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	err := WriteFile(filepath.Join(dir, "x"), []byte("x"), Options{})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), dir) {
		t.Errorf("error %v, want not-exist naming %s", err, dir)
	}
}

// A reader never sees a partial file while it is rewritten.
func TestReadersSeeTheOldFileOrTheNewOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	a, b := strings.Repeat("a", 1<<16), strings.Repeat("b", 1<<17)
	if err := WriteFile(path, []byte(a), Options{}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			got, err := os.ReadFile(path)
			if err != nil || (string(got) != a && string(got) != b) {
				t.Errorf("read %d bytes (%v): neither version", len(got), err)
				return
			}
		}
	}()
	for i := range 50 {
		data := a
		if i%2 == 0 {
			data = b
		}
		if err := WriteFile(path, []byte(data), Options{}); err != nil {
			t.Error(err)
			break
		}
	}
	close(stop)
	wg.Wait()
}

// Temps finds the temporaries of one pattern by name (glob characters in
// it are plain characters), not other files; RemoveTemps removes them.
func TestTempsAndRemoveTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a[1]*.json")
	o := Options{}
	keep := []string{"a[1]*.json", ".a[1]*.json.tmp", ".a1.json.tmp123", ".state-1.json", "log.jsonl"}
	gone := []string{".a[1]*.json.tmp123", ".a[1]*.json.tmpx"}
	for _, n := range append(slices.Clone(keep), gone...) {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	temps, err := Temps(path, o)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range temps {
		got = append(got, filepath.Base(p))
	}
	slices.Sort(got)
	if !slices.Equal(got, gone) {
		t.Errorf("Temps %v, want %v", got, gone)
	}
	RemoveTemps(path, o)
	want := slices.Clone(keep)
	slices.Sort(want)
	if n := names(t, dir); !slices.Equal(n, want) {
		t.Errorf("after RemoveTemps: %v, want %v", n, want)
	}
	// a pattern with a suffix, as playbooks use
	RemoveTemps(filepath.Join(dir, "state.json"), Options{Temp: ".state-*.json"})
	if n := names(t, dir); slices.Contains(n, ".state-1.json") {
		t.Errorf("pattern .state-*.json kept .state-1.json: %v", n)
	}
}

// NoReplace links the synced temporary into place (and removes it); it
// refuses anything already at the path, a dangling symlink too, leaving
// it as it was and no temporary. Where link fails otherwise (a file
// system without hard links) and the path is still free, it renames.
func TestNoReplace(t *testing.T) {
	dir := t.TempDir()
	o := Options{NoReplace: true, Perm: 0o644}
	path := filepath.Join(dir, "plan.yaml")
	r := &recFS{}
	if err := write(r, path, []byte("new"), o); err != nil {
		t.Fatal(err)
	}
	if want := []string{"create", "write", "sync", "close", "link", "remove", "syncdir"}; !slices.Equal(r.steps, want) {
		t.Errorf("steps %v, want %v", r.steps, want)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("%s holds %q", path, b)
	}
	if err := os.Symlink(filepath.Join(dir, "target"), filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"plan.yaml", "dangling"} {
		err := WriteFile(filepath.Join(dir, name), []byte("other"), o)
		if !errors.Is(err, fs.ErrExist) {
			t.Errorf("over %s: %v, want fs.ErrExist", name, err)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("the refused write changed %s: %q", path, b)
	}
	if n := names(t, dir); !slices.Equal(n, []string{"dangling", "plan.yaml"}) {
		t.Errorf("directory holds %v (the dangling link's target created, or a temporary left?)", n)
	}
	nolinks := filepath.Join(dir, "nolinks.yaml")
	r = &recFS{fail: "link"}
	if err := write(r, nolinks, []byte("new"), o); err != nil {
		t.Fatal(err)
	}
	if want := []string{"create", "write", "sync", "close", "link", "rename", "syncdir"}; !slices.Equal(r.steps, want) {
		t.Errorf("without hard links: steps %v, want %v", r.steps, want)
	}
	if b, _ := os.ReadFile(nolinks); string(b) != "new" {
		t.Errorf("%s holds %q", nolinks, b)
	}
}
