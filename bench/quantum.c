/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench/quantum [QUANTA] [QUANTUM_US]: a fixed-work-quantum loop.  The
 * same amount of arithmetic, calibrated once to take about QUANTUM_US
 * when nothing interferes, is timed QUANTA times; what the OS steals
 * shows as quanta that take longer.  Prints the percentiles of one
 * quantum's time in microseconds and the spread (p99 / p50).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static volatile uint64_t sink;

static void work(uint64_t n)
{
	uint64_t x = 88172645463325252ULL;

	for (uint64_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	sink = x;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int quanta = argc > 1 ? atoi(argv[1]) : 3000;
	double want = argc > 2 ? atof(argv[2]) : 1000, best = 1e18;
	uint64_t n = 1000;
	double *t = malloc(sizeof(double) * (size_t)(quanta > 0 ? quanta : 1));

	if (!t || quanta < 10)
		return 1;
	/* Calibrate on the fastest of a few runs: the undisturbed time. */
	for (;;) {
		double t0 = now_us();

		work(n);
		if (now_us() - t0 > want / 4)
			break;
		n *= 2;
	}
	for (int i = 0; i < 20; i++) {
		double t0 = now_us(), d;

		work(n);
		d = now_us() - t0;
		if (d < best)
			best = d;
	}
	n = (uint64_t)((double)n * want / best);
	for (int i = 0; i < quanta; i++) {
		double t0 = now_us();

		work(n);
		t[i] = now_us() - t0;
	}
	qsort(t, (size_t)quanta, sizeof(double), cmp);
	printf("quanta %d p50_us %.0f p99_us %.0f p999_us %.0f max_us %.0f spread %.3f\n", quanta,
	       t[quanta / 2], t[quanta * 99 / 100], t[quanta * 999 / 1000], t[quanta - 1],
	       t[quanta * 99 / 100] / t[quanta / 2]);
	return 0;
}
