package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tbhost/tbhost/prefix"
)

// Opening a table through a store that lacks its prefix says to build the
// store; a prefix that is there but wrong keeps its own fix and is not
// told to be built again.
func TestStoreErrorsGiveTheFixThatFits(t *testing.T) {
	c := ProbeConfig{IO: IOPread, Advise: AdviseNormal, Parallel: 1}
	for _, tc := range []struct {
		name    string
		damage  func(prefixPath string) error
		want    []string
		notWant string
	}{
		{"missing prefix", os.Remove, []string{"no prefix in the store", "build it with tbhost prefix extract", "leave out --store"}, ""},
		{"directory for a prefix", func(p string) error {
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.Mkdir(p, 0o755)
		}, []string{"is a directory", "move it away and rerun tbhost prefix extract", "leave out --store"}, "build it with"},
		{"truncated prefix", func(p string) error { return os.Truncate(p, 100) }, []string{"truncated or foreign prefix", "rerun tbhost prefix extract", "leave out --store"}, "build it with"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, store := smallTableSet(t, 4)
			victim := set.tables[2]
			if err := tc.damage(prefix.PrefixPath(store, victim.Name)); err != nil {
				t.Fatal(err)
			}
			c.Store = store
			_, closers, _, err := set.open(c, true)
			for _, cl := range closers {
				cl.Close()
			}
			if err == nil {
				t.Fatalf("opened the set through a store with a %s", tc.name)
			}
			msg := err.Error()
			for _, w := range append(tc.want, victim.Name) {
				if !strings.Contains(msg, w) {
					t.Errorf("%q lacks %q", msg, w)
				}
			}
			if tc.notWant != "" && strings.Contains(msg, tc.notWant) {
				t.Errorf("%q should not say %q", msg, tc.notWant)
			}
		})
	}
}

// Errors a test cannot make as root (a refused open, a failing disk) and
// the descriptor limit: each gets its own fix, and the wrapped error stays
// testable.
func TestStoreOpenErrorHints(t *testing.T) {
	pp := filepath.Join("/srv/prefix", "KQvK.rtbw.prefix")
	for _, tc := range []struct {
		err     error
		want    string
		notWant []string
	}{
		{fmt.Errorf("open prefix: %w", &fs.PathError{Op: "open", Path: pp, Err: syscall.EACCES}), "run as a user that can read the store, or leave out --store", []string{"build it with"}},
		{fmt.Errorf("read prefix header %s: %w", pp, &fs.PathError{Op: "read", Path: pp, Err: syscall.EIO}), "to probe the tables alone, leave out --store", []string{"build it with", "run as a user"}},
		{fmt.Errorf("open prefix: %w", &fs.PathError{Op: "open", Path: pp, Err: syscall.EMFILE}), "too many open files", []string{"leave out --store", "build it with"}},
		{fmt.Errorf("/t/KQvK.rtbw: %w (%s)", prefix.ErrNoPrefix, pp), "build it with tbhost prefix extract, or leave out --store", nil},
	} {
		got := storeOpenError(tc.err)
		if !strings.Contains(got.Error(), tc.want) || !strings.Contains(got.Error(), pp) {
			t.Errorf("%v: got %q, want it to name %s and say %q", tc.err, got, pp, tc.want)
		}
		for _, nw := range tc.notWant {
			if strings.Contains(got.Error(), nw) {
				t.Errorf("%v: %q should not say %q", tc.err, got, nw)
			}
		}
		if !errors.Is(got, tc.err) {
			t.Errorf("%q does not wrap %v", got, tc.err)
		}
	}
}
