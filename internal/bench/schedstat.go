package bench

import (
	"fmt"
	"os"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// ThreadCPU is what the kernel's scheduler says about one thread
// (/proc/PID/task/TID/schedstat): how long it ran on a CPU and how long it
// was runnable but waited for one.
type ThreadCPU struct {
	Run, Wait time.Duration
}

func (a ThreadCPU) sub(b ThreadCPU) ThreadCPU {
	return ThreadCPU{Run: a.Run - b.Run, Wait: a.Wait - b.Wait}
}

// procRoot is where Drive reads its client threads' scheduler statistics.
const procRoot = "/proc"

// readThreadCPU reads the calling thread's scheduler statistics,
// /proc/PID/task/TID/schedstat under root (procfs parses it): only
// meaningful from a goroutine locked to its OS thread.
func readThreadCPU(root string) (ThreadCPU, error) {
	pid, tid := os.Getpid(), unix.Gettid()
	path := fmt.Sprintf("%s/%d/task/%d/schedstat", root, pid, tid)
	fs, err := procfs.NewFS(root)
	if err != nil {
		return ThreadCPU{}, fmt.Errorf("%s: %w", path, err)
	}
	thread, err := fs.Thread(pid, tid)
	if err != nil {
		return ThreadCPU{}, fmt.Errorf("%s: %w", path, err)
	}
	st, err := thread.Schedstat()
	if err != nil {
		return ThreadCPU{}, fmt.Errorf("%s: %w", path, err)
	}
	return ThreadCPU{Run: time.Duration(st.RunningNanoseconds), Wait: time.Duration(st.WaitingNanoseconds)}, nil
}

// cpuWaitNotice says, when the clients of a run (res; meanMs is its mean
// latency, Run.Latency.Mean) waited for a CPU for more than a tenth of
// that per request, that the machine's processors and not the disks set
// a sizeable part of the latency. The
// wait is counted from a client's first request to its last, between
// requests too, so it is no exact share of the latency (a warm run of 12
// clients on 2 CPUs waits about as long as its mean latency). It returns
// "" otherwise, or when the wait was not measured.
func cpuWaitNotice(name string, meanMs float64, res *Result) string {
	if !res.CPUMeasured || res.Issued == 0 {
		return ""
	}
	mean := meanMs * 1e6
	perRequest := float64(res.CPU.Wait) / float64(res.Issued)
	if mean <= 0 || perRequest < mean/10 {
		return ""
	}
	return fmt.Sprintf("%s: the clients waited for a CPU %s per request on average, against a mean latency of %s "+
		"(their threads' run-queue wait, in a request or between two): this machine's processors, not the disks, set a sizeable part of the latency; "+
		"fewer --clients or a quieter host with more CPUs measures the disks",
		name, formatMs(perRequest/1e6), formatMs(mean/1e6))
}
