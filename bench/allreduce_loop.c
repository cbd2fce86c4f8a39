/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench/allreduce-noise's MPI program: the loop of Kamoshida and Taura,
 * "System monitoring without harming performance of parallel
 * applications": each iteration computes for W ms, then all ranks meet
 * in an MPI_Allreduce, so an iteration lasts as long as its slowest rank
 * and any rank's delay is everyone's.
 *
 *   allreduce-loop --iterations K --work-ms W [--pin|--pin-global] [--monitor MODE
 *                  --interval-ms I --cost-ms D]
 *
 * --pin binds the node's r-th rank (its rank among those sharing memory
 * with it) to the r-th CPU it may use, mod their count: on a node
 * filled with ranks each has a CPU of its own.  --pin-global uses the
 * rank in the job instead: on a dev cluster whose "nodes" share one
 * machine (MPI sees them as different nodes) no two ranks share a CPU.
 * --monitor aligned|random: the positive control, a thread pinned to the
 * rank's CPU that burns D ms of CPU every I ms, at the same wall-clock
 * instants k*I on every node (aligned) or at a random phase of its own
 * (random): the monitor of the paper's cost, without slurm-lwk.
 *
 * Rank 0 prints one line: "iterations K median_ms M mean_ms A p90_ms P",
 * the loop's iteration times after a warm-up of K/10 iterations.  Exit
 * status 0, 2 for bad arguments.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* Spin on the thread's CPU clock: work that only CPU time finishes, so a
 * monitor on the same CPU delays it by what it takes. */
static void burn_cpu_ns(uint64_t ns)
{
	uint64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
	volatile uint64_t x = 0;

	while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 1000; i++)
			x += (uint64_t)i;
}

struct monitor {
	uint64_t interval_ns, cost_ns, phase_ns;
	int cpu;
	atomic_int stop;
};

static void *monitor_run(void *arg)
{
	struct monitor *m = arg;
	cpu_set_t set;

	if (m->cpu >= 0) {
		CPU_ZERO(&set);
		CPU_SET(m->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	while (!atomic_load(&m->stop)) {
		uint64_t t = now_ns(CLOCK_REALTIME);
		uint64_t next = (t - m->phase_ns) / m->interval_ns * m->interval_ns + m->interval_ns +
				m->phase_ns;
		struct timespec due = { .tv_sec = (time_t)(next / 1000000000ULL),
					.tv_nsec = (long)(next % 1000000000ULL) };

		while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &due, NULL) == EINTR)
			;
		burn_cpu_ns(m->cost_ns);
	}
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int usage(void)
{
	fprintf(stderr, "usage: allreduce-loop --iterations K --work-ms W [--pin|--pin-global] "
			"[--monitor aligned|random --interval-ms I --cost-ms D]\n");
	return 2;
}

int main(int argc, char **argv)
{
	long iters = 0;
	double work_ms = 0, interval_ms = 500, cost_ms = 20;
	const char *mode = NULL;
	int pin = 0, rank, size, local, cpu = -1;
	MPI_Comm node;
	struct monitor m = { 0 };
	pthread_t mon;
	double *t;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--pin") || !strcmp(a, "--pin-global")) {
			pin = a[5] ? 2 : 1;
			continue;
		}
		if (!v)
			return usage();
		if (!strcmp(a, "--iterations"))
			iters = strtol(v, NULL, 10);
		else if (!strcmp(a, "--work-ms"))
			work_ms = strtod(v, NULL);
		else if (!strcmp(a, "--monitor"))
			mode = v;
		else if (!strcmp(a, "--interval-ms"))
			interval_ms = strtod(v, NULL);
		else if (!strcmp(a, "--cost-ms"))
			cost_ms = strtod(v, NULL);
		else
			return usage();
		i++;
	}
	if (iters < 10 || iters > 10000000 || !(work_ms > 0) || !(interval_ms > 0) ||
	    !(cost_ms >= 0) || cost_ms >= interval_ms ||
	    (mode && strcmp(mode, "aligned") && strcmp(mode, "random")))
		return usage();
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	/* The ranks of this node (sharing its memory). */
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
	MPI_Comm_rank(node, &local);
	if (pin) {
		cpu_set_t allowed, one;
		int n = 0;

		sched_getaffinity(0, sizeof(allowed), &allowed);
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &allowed) &&
			    n++ == (pin == 2 ? rank : local) % CPU_COUNT(&allowed))
				cpu = c;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		sched_setaffinity(0, sizeof(one), &one);
	}
	if (mode) {
		m.interval_ns = (uint64_t)(interval_ms * 1e6);
		m.cost_ns = (uint64_t)(cost_ms * 1e6);
		/* Random: a phase of each node's own (the monitor is the
		 * node's: every rank there is hit at once), uniform over the
		 * interval, drawn by the node's first rank. */
		srand((unsigned)(now_ns(CLOCK_REALTIME) ^ ((uint64_t)rank * 2654435761U)));
		m.phase_ns = !strcmp(mode, "random")
				     ? (((uint64_t)rand() << 31) ^ (uint64_t)rand()) % m.interval_ns
				     : 0;
		MPI_Bcast(&m.phase_ns, 1, MPI_UINT64_T, 0, node);
		m.cpu = cpu >= 0 ? cpu : sched_getcpu();
		pthread_create(&mon, NULL, monitor_run, &m);
	}
	t = calloc((size_t)iters, sizeof(*t));
	if (!t)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (long i = -iters / 10; i < iters; i++) {
		double x = 1, s0 = MPI_Wtime();

		burn_cpu_ns((uint64_t)(work_ms * 1e6));
		MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		if (i >= 0)
			t[i] = (MPI_Wtime() - s0) * 1e3;
	}
	if (mode) {
		atomic_store(&m.stop, 1);
		pthread_join(mon, NULL);
	}
	if (rank == 0) {
		double sum = 0;

		for (long i = 0; i < iters; i++)
			sum += t[i];
		qsort(t, (size_t)iters, sizeof(*t), cmp_double);
		printf("iterations %ld ranks %d median_ms %.4f mean_ms %.4f p90_ms %.4f\n", iters, size,
		       t[iters / 2], sum / (double)iters, t[iters * 9 / 10]);
	}
	free(t);
	MPI_Comm_free(&node);
	MPI_Finalize();
	return 0;
}
