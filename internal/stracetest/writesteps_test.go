package stracetest

import (
	"slices"
	"testing"
)

// WriteSteps follows descriptors as they are reused: the temporary's 8 is
// the directory's 8 after the rename, a directory opened to be read
// before the write is not the one synced after it.
func TestWriteSteps(t *testing.T) {
	durable := `1 openat(AT_FDCWD, "/d/x.lock", O_RDONLY|O_CREAT|O_CLOEXEC, 0644) = 5
1 openat(AT_FDCWD, "/d", O_RDONLY|O_CLOEXEC|O_DIRECTORY) = 8
1 fsync(8)                          = 0
1 openat(AT_FDCWD, "/d/.x.tmp798595589", O_RDWR|O_CREAT|O_EXCL|O_CLOEXEC, 0600) = 8
1 fsync(8)                          = 0
1 renameat(AT_FDCWD, "/d/.x.tmp798595589", AT_FDCWD, "/d/x") = 0
1 openat(AT_FDCWD, "/d", O_RDONLY|O_CLOEXEC) = 8
1 fsync(8)                          = 0
`
	if got, want := WriteSteps([]byte(durable), "/d/x", `\.x\.tmp\d+`), []string{"create", "fsync file", "rename", "fsync directory"}; !slices.Equal(got, want) {
		t.Errorf("durable write: %v, want %v", got, want)
	}
	careless := `1 openat(AT_FDCWD, "/d/.x.tmp1", O_RDWR|O_CREAT|O_EXCL|O_CLOEXEC, 0600) = 8
1 rename("/d/.x.tmp1", "/d/x") = 0
1 openat(AT_FDCWD, "/d/.x.tmp2", O_RDWR|O_CREAT|O_EXCL|O_CLOEXEC, 0600) = 8
1 renameat(AT_FDCWD, "/d/.x.tmp2", AT_FDCWD, "/d/y") = 0
`
	if got, want := WriteSteps([]byte(careless), "/d/x", `\.x\.tmp\d+`), []string{"create", "rename", "create"}; !slices.Equal(got, want) {
		t.Errorf("careless writes: %v, want %v", got, want)
	}
}
