package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ThreadCPU is what the kernel's scheduler says about one thread
// (/proc/thread-self/schedstat): how long it ran on a CPU and how long it
// was runnable but waited for one.
type ThreadCPU struct {
	Run, Wait time.Duration
}

func (a ThreadCPU) sub(b ThreadCPU) ThreadCPU {
	return ThreadCPU{Run: a.Run - b.Run, Wait: a.Wait - b.Wait}
}

// threadSchedstatPath is the calling thread's scheduler statistics: only
// meaningful from a goroutine locked to its OS thread.
const threadSchedstatPath = "/proc/thread-self/schedstat"

// readThreadCPU reads the calling thread's scheduler statistics.
func readThreadCPU() (ThreadCPU, error) {
	b, err := os.ReadFile(threadSchedstatPath)
	if err != nil {
		return ThreadCPU{}, err
	}
	return parseSchedstat(string(b))
}

// parseSchedstat reads a schedstat line: "run_ns wait_ns timeslices".
func parseSchedstat(s string) (ThreadCPU, error) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return ThreadCPU{}, fmt.Errorf("%s: %q: want 3 numbers (run ns, wait ns, time slices)", threadSchedstatPath, s)
	}
	var v [2]int64
	for i := range v {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil || n < 0 {
			return ThreadCPU{}, fmt.Errorf("%s: %q: field %d is not a count of nanoseconds", threadSchedstatPath, s, i+1)
		}
		v[i] = n
	}
	return ThreadCPU{Run: time.Duration(v[0]), Wait: time.Duration(v[1])}, nil
}

// cpuWaitNotice says, when the clients of a run waited for a CPU for more
// than a tenth of the mean latency per request, that the machine's
// processors and not the disks set a sizeable part of the latency. The
// wait is counted from a client's first request to its last, between
// requests too, so it is no exact share of the latency (a warm run of 12
// clients on 2 CPUs waits about as long as its mean latency). It returns
// "" otherwise, or when the wait was not measured.
func cpuWaitNotice(name string, res *Result) string {
	n := res.OK.TotalCount() + res.Failed.TotalCount()
	if !res.CPUMeasured || n == 0 || res.Issued == 0 {
		return ""
	}
	mean := (res.OK.Mean()*float64(res.OK.TotalCount()) + res.Failed.Mean()*float64(res.Failed.TotalCount())) / float64(n)
	perRequest := float64(res.CPU.Wait) / float64(res.Issued)
	if mean <= 0 || perRequest < mean/10 {
		return ""
	}
	return fmt.Sprintf("%s: the clients waited for a CPU %s per request on average, against a mean latency of %s "+
		"(their threads' run-queue wait, in a request or between two): this machine's processors, not the disks, set a sizeable part of the latency; "+
		"fewer --clients or a quieter host with more CPUs measures the disks",
		name, formatMs(perRequest/1e6), formatMs(mean/1e6))
}
