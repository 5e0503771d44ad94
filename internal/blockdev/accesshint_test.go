package blockdev

import (
	"io/fs"
	"strings"
	"testing"
)

// Issue 18: `inventory` as root said "(run as root)".
func TestAccessHintSaysRunAsRootOnlyWhenNotRoot(t *testing.T) {
	denied := &fs.PathError{Op: "open", Path: "/dev/vda", Err: fs.ErrPermission}
	if h := accessHint(1000, denied); h != " (run as root)" {
		t.Errorf("as a user: %q", h)
	}
	if h := accessHint(0, denied); strings.Contains(h, "run as root") || h == "" {
		t.Errorf("as root: %q", h)
	}
	if h := accessHint(0, &fs.PathError{Op: "open", Path: "/dev/vda", Err: fs.ErrNotExist}); h != "" {
		t.Errorf("not a permission error: %q", h)
	}
}
