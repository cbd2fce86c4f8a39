/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench/tick-lateness [--interval MS] [--seconds S] [--load N] [--slack NS] [--fifo]:
 * how late the sampler wakes for its ticks, on this node idle and then
 * loaded.  It wakes exactly as lwk-syncmon does (syncmon/sampler.c): the
 * same ticker on the wall-clock grid (syncmon/tick.h), clock_nanosleep
 * (CLOCK_REALTIME, TIMER_ABSTIME), timer slack 1 ns (PR_SET_TIMERSLACK),
 * and the normal scheduling class (SCHED_OTHER, nice 0): the sampler
 * asks for nothing more.  Each wake-up's late_ns is what the sampler
 * writes on its sample lines; printed as p50, p99 and max.
 *
 * Loaded: N processes (default twice the CPUs) spin at the same class
 * and nice as the sampler, the worst a job does to it.  --slack and
 * --fifo show what another setting would give (the kernel's default
 * slack is 50 us; SCHED_FIFO needs root).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "syncmon/tick.h"

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Wake at every tick for `seconds`; prints one row. */
static void measure(const char *what, uint64_t interval_ns, double seconds)
{
	size_t n = (size_t)(seconds * 1e9 / (double)interval_ns), got = 0;
	uint64_t *late = calloc(n ? n : 1, sizeof(*late)), k;
	struct lwk_ticker t;

	lwk_ticker_init(&t, interval_ns, 0, now_ns());
	while (got < n) {
		struct timespec due = { .tv_sec = (time_t)(t.next / 1000000000ULL),
					.tv_nsec = (long)(t.next % 1000000000ULL) };

		if (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &due, NULL) == EINTR)
			continue;
		late[got++] = lwk_ticker_fire(&t, now_ns(), &k);
	}
	qsort(late, n, sizeof(*late), cmp_u64);
	printf("%-8s %7zu %10.1f %10.1f %10.1f %8llu\n", what, n, (double)late[n / 2] / 1e3,
	       (double)late[n * 99 / 100] / 1e3, (double)late[n - 1] / 1e3,
	       (unsigned long long)t.skipped);
	fflush(stdout);
	free(late);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bench/tick-lateness [--interval MS] [--seconds S] [--load N] [--slack NS] [--fifo]\n"
		   "  late_ns of the sampler's wake-ups (its timer slack and scheduling class),\n"
		   "  p50/p99/max in us, on this node idle and then with N spinning processes\n"
		   "  (default: interval 10 ms, 10 s each, N = twice the CPUs, slack 1 ns).\n");
}

int main(int argc, char **argv)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int load = (int)(cpus > 0 ? 2 * cpus : 2), fifo = 0;
	double interval_ms = 10, seconds = 10;
	unsigned long slack = 1;
	pid_t *kids;

	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--interval") && v)
			interval_ms = atof(argv[++i]);
		else if (!strcmp(argv[i], "--seconds") && v)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--load") && v)
			load = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--slack") && v)
			slack = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--fifo"))
			fifo = 1;
		else {
			usage(strcmp(argv[i], "--help") ? stderr : stdout);
			return strcmp(argv[i], "--help") ? 2 : 0;
		}
	}
	if (interval_ms < 1 || seconds <= 0 || load < 0) {
		usage(stderr);
		return 2;
	}
	prctl(PR_SET_TIMERSLACK, slack);
	if (fifo) {
		struct sched_param sp = { .sched_priority = 1 };

		if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
			fprintf(stderr, "tick-lateness: SCHED_FIFO: %s\n", strerror(errno));
			return 1;
		}
	}
	printf("tick lateness (late_ns) in us: interval %.0f ms, timer slack %lu ns, %s, %ld CPUs\n",
	       interval_ms, slack, fifo ? "SCHED_FIFO 1" : "SCHED_OTHER nice 0 (as lwk-syncmon)", cpus);
	{
		/* "Idle" is this node without our load: say what else ran. */
		FILE *f = fopen("/proc/loadavg", "r");
		char la[128] = "?";

		if (f && fgets(la, sizeof(la), f))
			la[strcspn(la, "\n")] = '\0';
		if (f)
			fclose(f);
		printf("loadavg before: %s\n", la);
	}
	printf("%-8s %7s %10s %10s %10s %8s\n", "node", "ticks", "p50", "p99", "max", "skipped");
	measure("idle", (uint64_t)(interval_ms * 1e6), seconds);
	kids = calloc((size_t)load + 1, sizeof(*kids));
	for (int i = 0; i < load; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			struct sched_param sp = { 0 };

			sched_setscheduler(0, SCHED_OTHER, &sp);
			for (volatile unsigned long x = 0;; x++)
				;
		}
	}
	{
		char what[32];

		snprintf(what, sizeof(what), "loaded%d", load);
		measure(what, (uint64_t)(interval_ms * 1e6), seconds);
	}
	for (int i = 0; i < load; i++)
		kill(kids[i], SIGKILL);
	while (wait(NULL) > 0)
		;
	free(kids);
	return 0;
}
