// Package diskstats is tbhost's one sampler of /proc/diskstats: it reads
// the file under a root directory (this host's "/" or a saved tree) with a
// bounded read, parses and validates it into prometheus/procfs's
// blockdevice.IOStats, and turns two samples into per-device rates with
// iostat's formulas (r/s, rkB/s, r_await, w/s, wkB/s, w_await, %util,
// aqu-sz). The monitor (skew, exporter, watch) and the scrub's backoff
// (r_await of the member disks) both use it.
//
// Counters that go backwards are handled once, here: a counter whose old
// value fits in 32 bits and whose modular difference is small wrapped (the
// kernel prints the tick fields as 32-bit on many kernels; iostat takes the
// difference in the counter's 32-bit type), and any other backwards counter
// means the device was reset or re-created, so that interval has no rates.
package diskstats
