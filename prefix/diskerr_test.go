package prefix

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A full store, a refused block and a failing disk get their next step in
// the error; any other error is left as it is, and the cause stays in the
// chain.
func TestWithDiskHint(t *testing.T) {
	for _, c := range []struct {
		err  error
		hint string
	}{
		{&fs.PathError{Op: "write", Path: "/srv/prefix/.KQvK.rtbw.prefix.tmp", Err: unix.ENOSPC}, "file system is full: free space on it, or extract with --capacity SIZE"},
		{fmt.Errorf("read prefix: %w", &fs.PathError{Op: "read", Path: "/srv/prefix/KQvK.rtbw.prefix", Err: unix.EIO}), "see the kernel log, dmesg, for which device"},
		{&fs.PathError{Op: "read", Path: "/srv/tables/KQvK.rtbw", Err: unix.EILSEQ}, "dm-integrity refused the block"},
		{errors.New("table changed while its prefix was copied"), ""},
	} {
		got := withDiskHint(c.err)
		if !errors.Is(got, c.err) || !strings.HasPrefix(got.Error(), c.err.Error()) {
			t.Errorf("withDiskHint(%v) = %v: the error itself is not kept first", c.err, got)
		}
		if c.hint == "" && got != c.err || c.hint != "" && !strings.Contains(got.Error(), c.hint) {
			t.Errorf("withDiskHint(%v) = %v; want hint %q", c.err, got, c.hint)
		}
	}
}
