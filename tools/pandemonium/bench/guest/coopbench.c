// SPDX-License-Identifier: GPL-2.0-only
// coopbench: a parallel runtime's fork-join loop, for oversubscription runs (issue #34): REGIONS
// parallel regions, each a blocked N x N multiply C = A * B split by rows, with a barrier at its
// start and end. Two ways to wait at those barriers:
//   coopbench omp REGIONS N      libgomp, `parallel for schedule(static)`: OMP_NUM_THREADS threads,
//                                waiting as OMP_WAIT_POLICY says (active spins, passive sleeps on a
//                                futex, unset spins a while, then sleeps)
//   coopbench yield REGIONS N T  T pthreads, waiting as OpenBLAS's thread server does on x86-64:
//                                the caller posts the region and spins on sched_yield() until the
//                                workers are done, the workers spin on sched_yield() for the next
// Prints one JSON object: mode, threads, regions, n, wall_s (the makespan of this process),
// user_s, sys_s, nvcsw, nivcsw (its context switches, voluntary and not) and a checksum.
// Static libgomp (gcc -fopenmp -static) runs in a guest that has none.
#define _GNU_SOURCE
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define BS 32 /* columns of B and rows of A per block */
#define RB 8  /* rows of C per `parallel for` iteration */

static int n;
static double *A, *B, *C;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Rows [i0, i1) of C = A * B, blocked over k and j so a block of B stays in cache.
static void mul_rows(int i0, int i1)
{
	for (int i = i0; i < i1; i++)
		memset(&C[(size_t)i * n], 0, n * sizeof(double));
	for (int kk = 0; kk < n; kk += BS)
		for (int jj = 0; jj < n; jj += BS)
			for (int i = i0; i < i1; i++)
				for (int k = kk; k < kk + BS && k < n; k++) {
					double a = A[(size_t)i * n + k];
					for (int j = jj; j < jj + BS && j < n; j++)
						C[(size_t)i * n + j] += a * B[(size_t)k * n + j];
				}
}

static void run_omp(int regions)
{
	for (int r = 0; r < regions; r++) {
#pragma omp parallel for schedule(static)
		for (int ib = 0; ib < (n + RB - 1) / RB; ib++)
			mul_rows(ib * RB, ib * RB + RB < n ? ib * RB + RB : n);
	}
}

// OpenBLAS's blas_server on x86-64: YIELDING is sched_yield().
static int nthreads;
static atomic_int posted, finished;

static void share(int t)
{
	mul_rows(t * n / nthreads, (t + 1) * n / nthreads);
}

static void *worker(void *arg)
{
	int t = (int)(long)arg;

	for (int r = 1;; r++) {
		int p;

		while ((p = atomic_load_explicit(&posted, memory_order_acquire)) >= 0 && p < r)
			sched_yield();
		if (p < 0)
			return NULL;
		share(t);
		atomic_fetch_add_explicit(&finished, 1, memory_order_release);
	}
}

static void run_yield(int regions, int threads)
{
	pthread_t tid[256];

	nthreads = threads;
	for (int t = 1; t < threads; t++)
		pthread_create(&tid[t], NULL, worker, (void *)(long)t);
	for (int r = 1; r <= regions; r++) {
		atomic_store_explicit(&posted, r, memory_order_release);
		share(0);
		while (atomic_load_explicit(&finished, memory_order_acquire) < r * (threads - 1))
			sched_yield();
	}
	atomic_store_explicit(&posted, -1, memory_order_release);
	for (int t = 1; t < threads; t++)
		pthread_join(tid[t], NULL);
}

int main(int argc, char **argv)
{
	int regions, threads = 1, omp;
	struct rusage ru;
	double t0, wall, sum = 0;

	omp = argc >= 4 && !strcmp(argv[1], "omp");
	if (!omp && !(argc >= 5 && !strcmp(argv[1], "yield"))) {
		fprintf(stderr, "usage: coopbench omp REGIONS N | coopbench yield REGIONS N THREADS\n");
		return 2;
	}
	regions = atoi(argv[2]);
	n = atoi(argv[3]);
	if (!omp)
		threads = atoi(argv[4]);
	if (regions < 1 || n < 1 || threads < 1 || threads > 256) {
		fprintf(stderr, "coopbench: REGIONS, N and THREADS (1..256) must be positive\n");
		return 2;
	}
	A = malloc((size_t)n * n * sizeof(double));
	B = malloc((size_t)n * n * sizeof(double));
	C = malloc((size_t)n * n * sizeof(double));
	if (!A || !B || !C)
		return 1;
	for (size_t i = 0; i < (size_t)n * n; i++) {
		A[i] = (double)(i % 7) / 7.0;
		B[i] = (double)(i % 5) / 5.0;
	}
	t0 = now_s();
	if (omp) {
		threads = omp_get_max_threads();
		run_omp(regions);
	} else {
		run_yield(regions, threads);
	}
	wall = now_s() - t0;
	for (size_t i = 0; i < (size_t)n * n; i++)
		sum += C[i];
	getrusage(RUSAGE_SELF, &ru);
	printf("{\"coopbench\": {\"mode\": \"%s\", \"threads\": %d, \"regions\": %d, \"n\": %d, "
	       "\"wall_s\": %.4f, \"user_s\": %.3f, \"sys_s\": %.3f, \"nvcsw\": %ld, \"nivcsw\": %ld, "
	       "\"checksum\": %.1f}}\n",
	       argv[1], threads, regions, n, wall, ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6,
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6, ru.ru_nvcsw, ru.ru_nivcsw, sum);
	return 0;
}
