// cloop: the probe fidelity benchmark's floor (issue 16). The same 4 KiB
// random reads as the harness and fio make, from plain pthreads with no
// runtime and no bookkeeping between two reads: what is left of a read's
// latency is the kernel's and the disk's. BenchmarkRatioProbeVsFio builds
// it with cc and compares the harness and fio with it.
//
//   cloop FILE OFFSETS CLIENTS pread|mmap
//
// OFFSETS is a file of little-endian int64 byte offsets, the same the
// harness reads; client c reads its contiguous share of them, in order, on
// its own descriptor (posix_fadvise RANDOM) or its own mapping (madvise
// RANDOM), as fio's jobs and the harness's clients do. The threads start
// together (a barrier). Prints one line: the reads' latencies in ns at
// p50 p99 p99.8 p99.9 p99.95, then the sum of every byte read (a check that
// the reads happened), then the mean latency.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *file;
static int mmapped;
static long n, clients;
static int64_t *offs, *lat;
static uint64_t *sums;
static off_t size;
static pthread_barrier_t start;

static int64_t now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void fail(const char *what) {
	perror(what);
	exit(1);
}

static void *client(void *arg) {
	long c = (long)arg, per = n / clients;
	int fd = open(file, O_RDONLY);
	if (fd < 0)
		fail(file);
	char *map = NULL, *buf;
	if (posix_memalign((void **)&buf, 4096, 4096))
		fail("posix_memalign");
	if (mmapped) {
		map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED)
			fail("mmap");
		if (madvise(map, size, MADV_RANDOM))
			fail("madvise");
	} else if (posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM)) {
		fail("posix_fadvise");
	}
	uint64_t sum = 0;
	pthread_barrier_wait(&start);
	for (long i = c * per; i < (c + 1) * per; i++) {
		int64_t b = now();
		if (mmapped) {
			memcpy(buf, map + offs[i], 4096);
		} else if (pread(fd, buf, 4096, offs[i]) != 4096) {
			fail("pread");
		}
		lat[i] = now() - b;
		for (int k = 0; k < 4096; k++)
			sum += (unsigned char)buf[k];
	}
	sums[c] = sum;
	return NULL;
}

static int cmp(const void *a, const void *b) {
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
	if (argc != 5) {
		fprintf(stderr, "usage: cloop FILE OFFSETS CLIENTS pread|mmap\n");
		return 2;
	}
	file = argv[1];
	clients = atol(argv[3]);
	mmapped = strcmp(argv[4], "mmap") == 0;
	struct stat st;
	if (stat(file, &st))
		fail(file);
	size = st.st_size;
	FILE *o = fopen(argv[2], "rb");
	if (!o)
		fail(argv[2]);
	fseek(o, 0, SEEK_END);
	n = ftell(o) / 8;
	rewind(o);
	offs = malloc(n * 8);
	lat = calloc(n, 8);
	sums = calloc(clients, 8);
	if (clients < 1 || clients > 1024 || n < clients || fread(offs, 8, n, o) != (size_t)n) {
		fprintf(stderr, "cloop: want 1-1024 clients and at least one offset each\n");
		return 2;
	}
	for (long i = 0; i < n; i++)
		if (offs[i] < 0 || offs[i] + 4096 > size) {
			fprintf(stderr, "cloop: offset %lld outside %s\n", (long long)offs[i], file);
			return 2;
		}
	pthread_t th[1024];
	pthread_barrier_init(&start, NULL, clients);
	for (long c = 0; c < clients; c++)
		if (pthread_create(&th[c], NULL, client, (void *)c))
			fail("pthread_create");
	uint64_t sum = 0;
	for (long c = 0; c < clients; c++) {
		pthread_join(th[c], NULL);
		sum += sums[c];
	}
	long m = n / clients * clients;
	double mean = 0;
	for (long i = 0; i < m; i++)
		mean += lat[i];
	mean /= m;
	qsort(lat, m, 8, cmp);
	// the same rank as an HDR histogram's ValueAtQuantile: the first value
	// with at least q of the samples at or below it
#define Q(q) lat[(long)((q) * m + 0.5) > 0 ? (long)((q) * m + 0.5) - 1 : 0]
	printf("%lld %lld %lld %lld %lld %llu %.0f\n", (long long)Q(0.50), (long long)Q(0.99), (long long)Q(0.998),
	       (long long)Q(0.999), (long long)Q(0.9995), (unsigned long long)sum, mean);
	return 0;
}
