package bench

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readProcessCPU sums the schedstat of every thread of the process
// through procfs, from a fixture tree here: good lines summed, and a
// malformed one refused with the file's name.
func TestReadProcessCPU(t *testing.T) {
	root := t.TempDir()
	task := filepath.Join(root, strconv.Itoa(os.Getpid()), "task")
	write := func(tid int, s string) string {
		dir := filepath.Join(task, strconv.Itoa(tid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, "schedstat")
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	write(101, "1234567 89000 42\n")
	file := write(102, "1000 11 3\n")
	got, err := readProcessCPU(root)
	if err != nil || got != (ThreadCPU{Run: 1235567, Wait: 89011}) {
		t.Fatalf("got %+v, %v", got, err)
	}
	for _, bad := range []string{"", "1 2", "x 2 3", "1 -2 3", "1 2.5 3"} {
		write(102, bad)
		if _, err := readProcessCPU(root); err == nil || !strings.Contains(err.Error(), filepath.Dir(file)) {
			t.Errorf("%q: accepted or error without the thread's name: %v", bad, err)
		}
	}
	// a thread that ended between the listing and its read
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if got, err := readProcessCPU(root); err != nil || got != (ThreadCPU{Run: 1234567, Wait: 89000}) {
		t.Errorf("without thread 102's schedstat: got %+v, %v", got, err)
	}
}

func needSchedstat(t *testing.T) {
	t.Helper()
	if _, err := readProcessCPU(procRoot); err != nil {
		t.Skipf("%v (a kernel without CONFIG_SCHED_INFO?); the clients' CPU wait cannot be measured here", err)
	}
}

// More clients than CPUs, each burning CPU: the run must show them waiting
// for a CPU, several times as long as a client ran (with N clients on P
// CPUs about N/P-1 times). Clients on goroutines are not measured.
func TestDriveMeasuresTheClientsWaitForACPU(t *testing.T) {
	needSchedstat(t)
	clients := 4 * runtime.NumCPU()
	if clients > MaxOwnProcessorClients {
		if runtime.NumCPU()*2 > MaxOwnProcessorClients {
			t.Skipf("%d CPUs: the most OS-thread clients (%d) cannot queue for them", runtime.NumCPU(), MaxOwnProcessorClients)
		}
		clients = MaxOwnProcessorClients
	}
	spin := func(context.Context, int, int64) Outcome {
		for end := time.Now().Add(2 * time.Millisecond); time.Now().Before(end); {
		}
		return Outcome{Reads: 1}
	}
	res, err := Drive(context.Background(), Load{Clients: clients, Requests: int64(10 * clients), OwnProcessors: true}, spin, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.CPUMeasured {
		t.Fatal("OS-thread clients: CPU wait not measured")
	}
	t.Logf("%d clients on %d CPUs: ran %v, waited %v", clients, runtime.NumCPU(), res.CPU.Run, res.CPU.Wait)
	if res.CPU.Run < time.Duration(10*clients)*2*time.Millisecond/2 {
		t.Errorf("ran %v for %d requests of 2 ms of CPU each", res.CPU.Run, 10*clients)
	}
	if res.CPU.Wait < res.CPU.Run/2 {
		t.Errorf("%d spinning clients on %d CPUs waited %v for a CPU against %v on one: want at least half as long", clients, runtime.NumCPU(), res.CPU.Wait, res.CPU.Run)
	}
	if notice := cpuWaitNotice("pread/random/seq/no-store", summarize(res.OK).Mean, res); !strings.Contains(notice, "pread/random/seq/no-store: the clients waited for a CPU") {
		t.Errorf("no notice for clients that waited %v against %v of latency: %q", res.CPU.Wait, time.Duration(res.OK.Mean()), notice)
	}

	res, err = Drive(context.Background(), Load{Clients: 2, Requests: 4}, spin, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.CPUMeasured || cpuWaitNotice("x", summarize(res.OK).Mean, res) != "" {
		t.Errorf("goroutine clients: CPU measured %v (%+v)", res.CPUMeasured, res.CPU)
	}
}

func TestCPUWaitNoticeThreshold(t *testing.T) {
	res := func(wait time.Duration) *Result {
		r := &Result{OK: newHistogram(), Failed: newHistogram(), Issued: 100, CPUMeasured: true, CPU: ThreadCPU{Wait: wait}}
		for i := 0; i < 100; i++ {
			recordLatency(r.OK, 100*time.Microsecond)
		}
		return r
	}
	if n := cpuWaitNotice("pread/normal/seq/no-store", 0.1, res(100*30*time.Microsecond)); !strings.Contains(n, "30µs per request on average, against a mean latency of 100µs") {
		t.Errorf("30 us of 100 us: %q", n)
	}
	if n := cpuWaitNotice("x", 0.1, res(100*5*time.Microsecond)); n != "" {
		t.Errorf("5 us of 100 us is no notice: %q", n)
	}
	r := res(100 * 30 * time.Microsecond)
	r.CPUMeasured = false
	if n := cpuWaitNotice("x", 0.1, r); n != "" {
		t.Errorf("not measured: %q", n)
	}
}
