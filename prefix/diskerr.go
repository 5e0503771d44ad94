package prefix

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// withDiskHint adds to an error from a disk what a sysadmin does next: a
// full store (ENOSPC), a block dm-integrity refused (EILSEQ: the tables'
// array) or a disk that failed a read or write (EIO). Any other error is
// returned as it is.
func withDiskHint(err error) error {
	switch {
	case errors.Is(err, unix.ENOSPC):
		return fmt.Errorf("%w (the store's file system is full: free space on it, or extract with --capacity SIZE to fit the levels to it)", err)
	case errors.Is(err, unix.EILSEQ):
		return fmt.Errorf("%w (dm-integrity refused the block: the data on disk does not match its checksum and the RAID could not rebuild it from the other disks: tbhost integrity status and scrub name the disk; the table needs a good copy again)", err)
	case errors.Is(err, unix.EIO):
		return fmt.Errorf("%w (a disk failed this read or write: see the kernel log, dmesg, for which device, and its health, smartctl -a; once it is healthy or replaced, run extract again)", err)
	}
	return err
}
