package bench

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"time"

	"github.com/prometheus/procfs"
)

// ThreadCPU is what the kernel's scheduler says about threads
// (/proc/PID/task/TID/schedstat), one or summed over several: how long
// they ran on a CPU and how long they were runnable but waited for one.
type ThreadCPU struct {
	Run, Wait time.Duration
}

func (a ThreadCPU) sub(b ThreadCPU) ThreadCPU {
	return ThreadCPU{Run: a.Run - b.Run, Wait: a.Wait - b.Wait}
}

// procRoot is where Drive reads its threads' scheduler statistics.
const procRoot = "/proc"

// readProcessCPU sums the scheduler statistics of every thread of this
// process, /proc/PID/task/*/schedstat under root (procfs parses them). A
// thread that ends between the listing and its read is left out.
func readProcessCPU(root string) (ThreadCPU, error) {
	pid := os.Getpid()
	dir := fmt.Sprintf("%s/%d/task", root, pid)
	fs, err := procfs.NewFS(root)
	if err != nil {
		return ThreadCPU{}, fmt.Errorf("%s: %w", dir, err)
	}
	threads, err := fs.AllThreads(pid)
	if err != nil {
		return ThreadCPU{}, fmt.Errorf("%s: %w", dir, err)
	}
	var sum ThreadCPU
	for _, t := range threads {
		st, err := t.Schedstat()
		if errors.Is(err, iofs.ErrNotExist) {
			continue
		}
		if err != nil {
			return ThreadCPU{}, fmt.Errorf("%s/%d/schedstat: %w", dir, t.PID, err)
		}
		sum.Run += time.Duration(st.RunningNanoseconds)
		sum.Wait += time.Duration(st.WaitingNanoseconds)
	}
	return sum, nil
}

// cpuWaitNotice says, when the clients of a run (res; meanMs is its mean
// latency, Run.Latency.Mean) waited for a CPU for more than a tenth of
// that per request, that the machine's processors and not the disks set
// a sizeable part of the latency. The
// wait is counted from the clients' start to the last one's end, between
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
