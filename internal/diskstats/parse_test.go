package diskstats

import (
	"context"
	"errors"
	"github.com/tbhost/tbhost/internal/fixturetree"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs/blockdevice"
	"github.com/tbhost/tbhost/internal/sysread"
)

func labCapture(tb testing.TB) string {
	return fixturetree.Dir(tb, "../lab/testdata/captures/raid5-integrity-stripes5.tar.gz") + "/proc/"
}

// Our parser and procfs's agree field by field on the real captures (the
// lab's kernel 6.1 writes 20 fields; the integrity fixture too).
func TestParseAgreesWithProcfs(t *testing.T) {
	for _, f := range []string{labCapture(t) + "diskstats.0", labCapture(t) + "diskstats.1", "../../integrity/testdata/diskstats/t0/proc/diskstats"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("committed capture missing: %v", err)
		}
		ours, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		root := t.TempDir()
		os.MkdirAll(filepath.Join(root, "proc"), 0o755)
		os.MkdirAll(filepath.Join(root, "sys"), 0o755)
		os.WriteFile(filepath.Join(root, "proc", "diskstats"), b, 0o644)
		fs, err := blockdevice.NewFS(filepath.Join(root, "proc"), filepath.Join(root, "sys"))
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := fs.ProcDiskstats()
		if err != nil {
			t.Fatal(err)
		}
		if len(theirs) != len(ours.Devices) || len(theirs) < 8 {
			t.Fatalf("%s: procfs %d devices, ours %d", f, len(theirs), len(ours.Devices))
		}
		for _, d := range theirs {
			if !reflect.DeepEqual(ours.Devices[d.DeviceName], d.IOStats) {
				t.Errorf("%s %s: ours %+v, procfs %+v", f, d.DeviceName, ours.Devices[d.DeviceName], d.IOStats)
			}
		}
	}
}

func TestParseRefusesWhatTheKernelNeverWrites(t *testing.T) {
	for name, text := range map[string]string{
		"empty":          "",
		"blank lines":    "\n\n  \n",
		"13 fields":      "8 0 sda 1 2 3 4 5 6 7 8 9 10\n",
		"negative":       "8 0 sda -1 2 3 4 5 6 7 8 9 10 11\n",
		"float":          "8 0 sda 2e9 2 3 4 5 6 7 8 9 10 11\n",
		"overflow":       "8 0 sda 18446744073709551616 2 3 4 5 6 7 8 9 10 11\n",
		"major not num":  "x 0 sda 1 2 3 4 5 6 7 8 9 10 11\n",
		"minor > 32 bit": "8 4294967296 sda 1 2 3 4 5 6 7 8 9 10 11\n",
		"slash in name":  "8 0 ../sda 1 2 3 4 5 6 7 8 9 10 11\n",
		"control char":   "8 0 sd\x01a 1 2 3 4 5 6 7 8 9 10 11\n",
		"twice":          "8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n",
		"zeros":          strings.Repeat("\x00", 4096),
	} {
		if s, err := Parse([]byte(text)); !errors.Is(err, ErrSyntax) {
			t.Errorf("%s: %v (%d devices), want ErrSyntax", name, err, len(s.Devices))
		}
	}
	// 14, 18 and 20 fields are all kernels' formats; more are ignored
	s, err := Parse([]byte("8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n8 16 sdb 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15\n" +
		"8 32 sdc 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n8 48 sdd 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19"))
	if err != nil || len(s.Devices) != 4 || s.Devices["sdc"].TimeSpentFlushing != 17 || s.Devices["sdd"].TimeSpentFlushing != 17 ||
		s.Devices["sdb"].DiscardTicks != 15 || s.Devices["sda"].WeightedIOTicks != 11 {
		t.Errorf("%+v %v", s, err)
	}
}

// A --root tree whose diskstats is /dev/zero, a FIFO or a directory gives
// an error naming the file, at once (no hang, no unbounded read).
func TestSourcesRefuseBadDiskstats(t *testing.T) {
	for _, kind := range []string{"devzero", "fifo", "dir", "huge", "garbage"} {
		t.Run(kind, func(t *testing.T) {
			root := t.TempDir()
			os.MkdirAll(filepath.Join(root, "proc"), 0o755)
			p := filepath.Join(root, "proc", "diskstats")
			switch kind {
			case "devzero":
				os.Symlink("/dev/zero", p)
			case "fifo":
				syscall.Mkfifo(p, 0o644)
			case "dir":
				os.Mkdir(p, 0o755)
			case "huge": // sparse: no disk space used
				f, _ := os.Create(p)
				f.Truncate(sysread.DiskstatsLimit + 1)
				f.Close()
			case "garbage":
				os.WriteFile(p, []byte("hello\n"), 0o644)
			}
			done := make(chan error, 2)
			go func() {
				src, err := NewProcSource(root, fixedClock{})
				if err != nil {
					done <- err
					return
				}
				_, err = src.Sample(context.Background())
				done <- err
				rs, ok := NewReplaySource(root, time.Unix(0, 0), time.Second)
				if !ok {
					done <- errors.New("replay source did not find the file")
					return
				}
				_, err = rs.Sample(context.Background())
				done <- err
			}()
			for i := 0; i < 2; i++ {
				select {
				case err := <-done:
					if err == nil || !strings.Contains(err.Error(), p) {
						t.Errorf("%v, want an error naming %s", err, p)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("sampling blocked for 5 s")
				}
			}
		})
	}
}

type fixedClock struct{}

func (fixedClock) Now() time.Time                                   { return time.Unix(100, 0) }
func (fixedClock) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

func TestReplayInOrderThenEOF(t *testing.T) {
	rs, ok := NewReplaySource(fixturetree.Dir(t, "../lab/testdata/captures/raid5-integrity-stripes5.tar.gz"), time.Unix(0, 0), 5*time.Second)
	if !ok || len(rs.Files) != 2 {
		t.Fatalf("%v %+v", ok, rs)
	}
	got, err := Collect(context.Background(), rs, fixedClock{}, 5*time.Second, 10)
	if err != nil || len(got) != 2 || got[1].Time.Sub(got[0].Time) != 5*time.Second {
		t.Fatalf("%d samples, %v", len(got), err)
	}
	if got[1].Devices["sdc"].ReadIOs != 49044 {
		t.Errorf("second sample is not diskstats.1: %+v", got[1].Devices["sdc"])
	}
}
