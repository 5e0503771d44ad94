// Package jsonlines holds what the append-only JSON-lines files (the
// prefix store's manifest, a playbook's run log) share: finding a last line
// that a crash or a full disk cut short, so that the next append does not
// run on from it.
package jsonlines

import (
	"fmt"
	"os"
)

// TornTail reports the size of f, which must be open for reading, and
// whether its last line lacks its newline (a write cut short). An empty
// file is not torn. The caller ends a torn line (writes "\n") before it
// appends, or decides not to.
func TornTail(f *os.File) (size int64, torn bool, err error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, false, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	size = fi.Size()
	if size == 0 {
		return 0, false, nil
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, size-1); err != nil {
		return size, false, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	return size, last[0] != '\n', nil
}
