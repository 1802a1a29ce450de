// SPDX-License-Identifier: GPL-2.0-only
// benchlat: two latency distributions the bench driver needs and no packaged tool prints as
// percentiles (perf bench sched pipe only reports the mean):
//   benchlat pipe COUNT          pipe round trip between two processes, one byte each way
//   benchlat launch COUNT PROG   fork+exec of PROG until its exit has been reaped
// Prints one JSON object: count, p50_ns, p99_ns, max_ns, mean_ns. Samples are kept in a buffer
// allocated before measuring; nothing is printed until the end.
// And the admin phase's hogs, a busy loop under what an administrator sets with nice / chrt
// (the same syscalls; busybox has neither applet):
//   benchlat spin nice N         setpriority(N), then spin until killed
//   benchlat spin idle           SCHED_IDLE (chrt -i 0), then spin until killed
#define _GNU_SOURCE
#include <errno.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

// Nearest-rank percentile of sorted samples.
static uint64_t pct(const uint64_t *s, size_t n, double p)
{
	size_t rank = (size_t)(p / 100.0 * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	return s[(rank > n ? n : rank) - 1];
}

static void report(const char *mode, uint64_t *s, size_t n)
{
	long double sum = 0;
	qsort(s, n, sizeof(*s), cmp_u64);
	for (size_t i = 0; i < n; i++)
		sum += s[i];
	printf("{\"tool\":\"benchlat\",\"mode\":\"%s\",\"count\":%zu,\"p50_ns\":%llu,"
	       "\"p99_ns\":%llu,\"max_ns\":%llu,\"mean_ns\":%llu}\n",
	       mode, n, (unsigned long long)pct(s, n, 50), (unsigned long long)pct(s, n, 99),
	       (unsigned long long)s[n - 1], (unsigned long long)(sum / n));
}

static int pipe_rtt(uint64_t *s, size_t n)
{
	int ping[2], pong[2];
	char b = 0;
	if (pipe(ping) || pipe(pong))
		return perror("pipe"), 1;
	pid_t child = fork();
	if (child < 0)
		return perror("fork"), 1;
	if (child == 0) {
		// Echo every byte back until the parent closes its end (so drop our copy of it).
		close(ping[1]);
		close(pong[0]);
		while (read(ping[0], &b, 1) == 1)
			if (write(pong[1], &b, 1) != 1)
				_exit(1);
		_exit(0);
	}
	close(ping[0]);
	close(pong[1]);
	for (size_t i = 0; i < n; i++) {
		uint64_t t0 = now_ns();
		if (write(ping[1], &b, 1) != 1 || read(pong[0], &b, 1) != 1)
			return perror("pipe round trip"), 1;
		s[i] = now_ns() - t0;
	}
	close(ping[1]);
	waitpid(child, NULL, 0);
	return 0;
}

static int launch(uint64_t *s, size_t n, char *prog)
{
	char *argv[] = { prog, NULL };
	for (size_t i = 0; i < n; i++) {
		pid_t pid;
		int status;
		uint64_t t0 = now_ns();
		int err = posix_spawnp(&pid, prog, NULL, NULL, argv, environ);
		if (err)
			return fprintf(stderr, "benchlat: spawn %s: %s\n", prog, strerror(err)), 1;
		if (waitpid(pid, &status, 0) < 0)
			return perror("waitpid"), 1;
		s[i] = now_ns() - t0;
	}
	return 0;
}

// A setting the kernel refuses is an error before spinning: a hog that silently ran at nice 0
// would make the phase measure nothing.
static int spin(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[2], "nice")) {
		char *end;
		long nice = strtol(argv[3], &end, 10);
		if (*end || nice < -20 || nice > 19)
			return fprintf(stderr, "benchlat: nice must be -20..19, got %s\n", argv[3]), 2;
		if (setpriority(PRIO_PROCESS, 0, (int)nice))
			return perror("setpriority"), 1;
	} else if (argc == 3 && !strcmp(argv[2], "idle")) {
		struct sched_param sp = { .sched_priority = 0 };
		if (sched_setscheduler(0, SCHED_IDLE, &sp))
			return perror("sched_setscheduler(SCHED_IDLE)"), 1;
	} else {
		return fputs("usage: benchlat spin nice N | benchlat spin idle\n", stderr), 2;
	}
	for (volatile unsigned long i = 0;; i++)
		;
}

int main(int argc, char **argv)
{
	const char *usage = "usage: benchlat pipe COUNT | benchlat launch COUNT PROG | "
			    "benchlat spin nice N | benchlat spin idle\n";
	if (argc >= 2 && !strcmp(argv[1], "spin"))
		return spin(argc, argv);
	if (argc < 3)
		return fputs(usage, stderr), 2;
	char *end;
	long n = strtol(argv[2], &end, 10);
	if (*end || n < 1 || n > 10000000)
		return fprintf(stderr, "benchlat: COUNT must be 1..10000000, got %s\n", argv[2]), 2;
	uint64_t *s = calloc((size_t)n, sizeof(*s));
	if (!s)
		return perror("calloc"), 1;
	int rc;
	if (!strcmp(argv[1], "pipe"))
		rc = pipe_rtt(s, (size_t)n);
	else if (!strcmp(argv[1], "launch") && argc == 4)
		rc = launch(s, (size_t)n, argv[3]);
	else
		return fputs(usage, stderr), 2;
	if (!rc)
		report(argv[1], s, (size_t)n);
	return rc;
}
