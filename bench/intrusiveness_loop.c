/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench/intrusiveness: how much a per-node monitor slows a program that
 * synchronises all its processes every iteration, with the monitor's
 * samples at a random phase on each node and aligned on all nodes
 * (Kamoshida & Taura, "System monitoring without harming performance of
 * parallel applications").
 *
 * What a "node" is here: this machine has no cluster, so each CPU stands
 * for one node of the paper's cluster.  One worker thread is pinned per
 * CPU (the node's process), and one monitor thread is pinned to the same
 * CPU (the node's monitoring daemon).  The workers meet at a pthread
 * barrier after every iteration, like the paper's allreduce loop, so an
 * iteration lasts as long as its slowest worker.  With two CPUs there are
 * only two "nodes", so the effect is small (a few percent); bench/noise-sim
 * extrapolates the same loop to hundreds of nodes, and its --small-check
 * predicts the ratios this program should measure.
 *
 * Cases, interleaved within each round in an order rotated every round so
 * that the machine's own noise falls on all of them alike:
 *   a  no monitor
 *   b  random phase: each monitor wakes every I at its own random phase
 *      and burns D of CPU
 *   c  aligned: same threads, same I and D, but all wake at the same
 *      wall-clock instants k*I, like lwk-syncmon's sampler
 * Monitor and workers both run SCHED_OTHER so the monitor really takes
 * CPU time from the worker on its CPU, as a daemon does on a node.
 *
 * The result is ratios of mean iteration times measured in this one run;
 * absolute times mean little on a shared machine.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_CPUS 256

enum { CASE_NONE, CASE_RANDOM, CASE_ALIGNED, CASES };
static const char *const case_names[CASES] = {
	"a  no monitor", "b  random-phase monitor", "c  aligned monitor",
};

/* Options, with their defaults (total runtime about 30 s on 2 CPUs). */
static long rounds = 10;	/* rounds of a, b, c */
static long iterations = 40;	/* per case per round: 40 x 25 ms = 2 ticks of I */
static double work_ms = 25;	/* CPU work per iteration per worker */
static double interval_ms = 500; /* monitor period I */
static double noise_ms = 20;	/* monitor CPU burst D (seed's pinfo cost) */
static unsigned long seed;	/* for the random phases; 0: from the clock */

static int ncpus;
static int cpus[MAX_CPUS];	/* the CPUs this process may run on */
static uint64_t work_units;	/* units of work_unit() per iteration */

static const char *prog = "intrusiveness";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [OPTION]...\n"
		"Barrier-synchronised loop, one worker per CPU, with no monitor,\n"
		"a random-phase monitor and an aligned monitor (one thread per CPU);\n"
		"prints mean iteration times and their ratios to the no-monitor case.\n"
		"\n"
		"  --rounds N        rounds of the three cases (default %ld); scales the runtime\n"
		"  --iterations N    iterations per case per round (default %ld)\n"
		"  --work-ms MS      CPU work per iteration, calibrated (default %g)\n"
		"  --interval-ms MS  monitor period I (default %g)\n"
		"  --noise-ms MS     monitor CPU burst per tick D (default %g; e.g. the\n"
		"                    per-sample cost measured by bench/monitor-cost)\n"
		"  --seed N          seed for the random phases (default: from the clock)\n"
		"  --help            this message\n"
		"\n"
		"Runtime is about 3 x rounds x iterations x work-ms (default ~30 s);\n"
		"iterations x work-ms should span at least two monitor periods.\n",
		prog, rounds, iterations, work_ms, interval_ms, noise_ms);
}

static _Noreturn void bad_arg(const char *opt, const char *val, const char *want)
{
	fprintf(stderr, "%s: bad value for %s: '%s' (expected %s)\n", prog, opt, val, want);
	fprintf(stderr, "Try '%s --help'.\n", prog);
	exit(2);
}

static long parse_long(const char *opt, const char *val, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(val, &end, 10);
	if (errno || end == val || *end || v < min || v > max) {
		char want[96];

		snprintf(want, sizeof(want), "an integer from %ld to %ld", min, max);
		bad_arg(opt, val, want);
	}
	return v;
}

static double parse_ms(const char *opt, const char *val, double min, double max)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(val, &end);
	if (errno || end == val || *end || !(v >= min && v <= max)) {
		char want[96];

		snprintf(want, sizeof(want), "milliseconds from %g to %g", min, max);
		bad_arg(opt, val, want);
	}
	return v;
}

static void parse_args(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			exit(0);
		}
		/* Every other option takes a value: as the next word or after '='. */
		const char *eq = strchr(a, '=');
		size_t len = eq ? (size_t)(eq - a) : strlen(a);
		char name[32];
		const char *val;

		if (strncmp(a, "--", 2) || len >= sizeof(name)) {
			fprintf(stderr, "%s: unknown argument '%s'\nTry '%s --help'.\n", prog, a, prog);
			exit(2);
		}
		memcpy(name, a, len);
		name[len] = 0;
		if (strcmp(name, "--rounds") && strcmp(name, "--iterations") &&
		    strcmp(name, "--work-ms") && strcmp(name, "--interval-ms") &&
		    strcmp(name, "--noise-ms") && strcmp(name, "--seed")) {
			fprintf(stderr, "%s: unknown option '%s'\nTry '%s --help'.\n", prog, name, prog);
			exit(2);
		}
		if (eq) {
			val = eq + 1;
		} else if (i + 1 < argc) {
			val = argv[++i];
		} else {
			fprintf(stderr, "%s: option '%s' needs a value\nTry '%s --help'.\n", prog, name, prog);
			exit(2);
		}
		if (!strcmp(name, "--rounds"))
			rounds = parse_long(name, val, 1, 100000);
		else if (!strcmp(name, "--iterations"))
			iterations = parse_long(name, val, 1, 10000000);
		else if (!strcmp(name, "--work-ms"))
			work_ms = parse_ms(name, val, 0.01, 10000);
		else if (!strcmp(name, "--interval-ms"))
			interval_ms = parse_ms(name, val, 1, 3600000);
		else if (!strcmp(name, "--noise-ms"))
			noise_ms = parse_ms(name, val, 0, 3600000);
		else
			seed = (unsigned long)parse_long(name, val, 0, LONG_MAX);
	}
	if ((double)iterations * work_ms < 2 * interval_ms)
		fprintf(stderr, "%s: warning: a case run (%ld x %g ms) spans less than two "
			"monitor periods (2 x %g ms); the ratios will vary a lot from run to run\n",
			prog, iterations, work_ms, interval_ms);
	if (noise_ms >= interval_ms) {
		fprintf(stderr, "%s: --noise-ms (%g) must be less than --interval-ms (%g)\n",
			prog, noise_ms, interval_ms);
		exit(2);
	}
}

static double now_ns(clockid_t clk)
{
	struct timespec t;

	clock_gettime(clk, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(err));
	exit(1);
}

static void pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity", errno);
}

/*
 * A fixed amount of integer work that the compiler cannot remove or
 * shorten: the iteration is defined by work done, not by time, so CPU
 * taken by the monitor makes the iteration longer, as on a real node.
 */
static _Atomic uint64_t sink;

static void work(uint64_t units)
{
	uint64_t x = 0x9e3779b97f4a7c15ull ^ units;

	for (uint64_t i = 0; i < units; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	atomic_fetch_add_explicit(&sink, x, memory_order_relaxed);
}

/*
 * Units per millisecond, measured on the first CPU with thread CPU time
 * (not wall time, so preemption by other programs does not count), best
 * of several tries so a frequency ramp-up or cache miss does not either.
 */
static void calibrate(void)
{
	uint64_t units = 1 << 20;
	double best = 0;

	pin_self(cpus[0]);
	work(units); /* warm up: let the CPU leave its idle frequency */
	for (int t = 0; t < 7; t++) {
		double t0 = now_ns(CLOCK_THREAD_CPUTIME_ID), dt;

		work(units);
		dt = now_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
		if (dt < 2e6) { /* too short to time well: take more */
			units *= 4;
			t--;
			continue;
		}
		if (units / (dt / 1e6) > best)
			best = units / (dt / 1e6);
	}
	work_units = (uint64_t)(best * work_ms);
	if (work_units == 0)
		work_units = 1;
}

/* One run of one case: shared by its worker and monitor threads. */
struct run {
	int kind;
	pthread_barrier_t barrier;
	double elapsed_ns;	/* wall time of the iterations, set by worker 0 */
	atomic_int stop;	/* tells monitors to stop burning */
};

struct worker_arg {
	struct run *run;
	int idx;
};

static void *worker(void *p)
{
	struct worker_arg *w = p;
	struct run *run = w->run;
	double t0 = 0;

	pin_self(cpus[w->idx]);
	pthread_barrier_wait(&run->barrier); /* all pinned before timing */
	if (w->idx == 0)
		t0 = now_ns(CLOCK_MONOTONIC);
	for (long i = 0; i < iterations; i++) {
		work(work_units);
		pthread_barrier_wait(&run->barrier);
	}
	if (w->idx == 0)
		run->elapsed_ns = now_ns(CLOCK_MONOTONIC) - t0;
	return NULL;
}

struct monitor_arg {
	struct run *run;
	int cpu;
	double phase_ns; /* offset of this monitor's ticks from multiples of I */
};

/*
 * The node's monitoring daemon: sleeps to absolute wall-clock instants
 * phase + k*I (CLOCK_REALTIME, TIMER_ABSTIME, as the real sampler does so
 * that nodes with synchronised clocks wake together), then burns D of its
 * own CPU time.  CPU time, not wall time: sharing the CPU with the worker
 * stretches the burst in wall time, but what it takes from the worker is
 * D, the cost of one sample.  Stopped by pthread_cancel while sleeping
 * (clock_nanosleep is a cancellation point) or by run->stop while burning.
 */
static void *monitor(void *p)
{
	struct monitor_arg *m = p;
	double period = interval_ms * 1e6, burst = noise_ms * 1e6;
	double now = now_ns(CLOCK_REALTIME);
	double next = (double)(int64_t)((now - m->phase_ns) / period + 1) * period + m->phase_ns;

	pin_self(m->cpu);
	while (!atomic_load(&m->run->stop)) {
		struct timespec ts = {
			.tv_sec = (time_t)(next / 1e9),
			.tv_nsec = (long)(next - (double)(time_t)(next / 1e9) * 1e9),
		};
		int err;

		do
			err = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL);
		while (err == EINTR);
		double c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
		while (now_ns(CLOCK_THREAD_CPUTIME_ID) - c0 < burst && !atomic_load(&m->run->stop))
			work(1000);
		/* Next tick in the future; a late tick is skipped, not made up. */
		now = now_ns(CLOCK_REALTIME);
		next += period;
		while (next <= now)
			next += period;
	}
	return NULL;
}

/* xorshift64*: the random phases; rand() would do, but this is seedable alone. */
static uint64_t rng_state;

static double uniform(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (double)((rng_state * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}

/* Runs one case once; returns its mean iteration time in ns. */
static double run_case(int kind)
{
	struct run run = { .kind = kind };
	pthread_t wt[MAX_CPUS], mt[MAX_CPUS];
	struct worker_arg wa[MAX_CPUS];
	struct monitor_arg ma[MAX_CPUS];
	int err;

	atomic_init(&run.stop, 0);
	if ((err = pthread_barrier_init(&run.barrier, NULL, (unsigned)ncpus)))
		die("pthread_barrier_init", err);
	/* Monitors first, so they are sleeping to their ticks when timing starts. */
	if (kind != CASE_NONE) {
		for (int i = 0; i < ncpus; i++) {
			ma[i] = (struct monitor_arg){
				.run = &run,
				.cpu = cpus[i],
				/* Aligned: ticks at multiples of I on the wall clock. */
				.phase_ns = kind == CASE_RANDOM ? uniform() * interval_ms * 1e6 : 0,
			};
			if ((err = pthread_create(&mt[i], NULL, monitor, &ma[i])))
				die("pthread_create", err);
		}
	}
	for (int i = 0; i < ncpus; i++) {
		wa[i] = (struct worker_arg){ .run = &run, .idx = i };
		if ((err = pthread_create(&wt[i], NULL, worker, &wa[i])))
			die("pthread_create", err);
	}
	for (int i = 0; i < ncpus; i++)
		pthread_join(wt[i], NULL);
	if (kind != CASE_NONE) {
		atomic_store(&run.stop, 1);
		for (int i = 0; i < ncpus; i++) {
			pthread_cancel(mt[i]);
			pthread_join(mt[i], NULL);
		}
	}
	pthread_barrier_destroy(&run.barrier);
	return run.elapsed_ns / (double)iterations;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, long n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	cpu_set_t allowed;
	double sum[CASES] = { 0 }, *per_round[CASES];

	parse_args(argc, argv);
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		die("sched_getaffinity", errno);
	for (int c = 0; c < CPU_SETSIZE && ncpus < MAX_CPUS; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[ncpus++] = c;
	if (ncpus < 2)
		fprintf(stderr, "%s: warning: only %d CPU allowed; with one \"node\" the "
			"random and aligned cases are the same\n", prog, ncpus);
	rng_state = seed ? seed : (uint64_t)now_ns(CLOCK_REALTIME) | 1;
	calibrate();

	printf("intrusiveness: %d CPUs, each standing for one node (one worker + one monitor "
	       "thread pinned per CPU, SCHED_OTHER)\n", ncpus);
	printf("work %.3g ms per iteration (%llu units, calibrated), barrier after each; "
	       "monitor burns D=%g ms CPU every I=%g ms\n", work_ms,
	       (unsigned long long)work_units, noise_ms, interval_ms);
	printf("%ld rounds x %ld iterations per case, order rotated each round "
	       "(%ld iterations per case)\n", rounds, iterations, rounds * iterations);
	fflush(stdout);

	for (int k = 0; k < CASES; k++)
		if (!(per_round[k] = calloc((size_t)rounds, sizeof(double))))
			die("calloc", ENOMEM);
	for (long r = 0; r < rounds; r++) {
		for (int k = 0; k < CASES; k++) {
			int kind = (int)((k + r) % CASES);
			double t = run_case(kind);

			per_round[kind][r] = t;
			sum[kind] += t;
		}
	}

	/*
	 * Two estimates of each ratio.  The ratio of means uses every
	 * iteration, but one round slowed by other load on this shared
	 * machine moves it.  The median of the per-round ratios (each round's
	 * case over the same round's other case, run within seconds of each
	 * other) is paired and robust to such rounds.  Rounds where they
	 * disagree much mean the machine was busy: run more rounds.
	 */
	static const int pairs[3][2] = {
		{ CASE_RANDOM, CASE_NONE }, { CASE_ALIGNED, CASE_NONE }, { CASE_RANDOM, CASE_ALIGNED },
	};
	double mean[CASES], med[3], *ratios = malloc((size_t)rounds * sizeof(double));

	if (!ratios)
		die("malloc", ENOMEM);
	for (int k = 0; k < CASES; k++)
		mean[k] = sum[k] / (double)rounds;
	for (int p = 0; p < 3; p++) {
		for (long r = 0; r < rounds; r++)
			ratios[r] = per_round[pairs[p][0]][r] / per_round[pairs[p][1]][r];
		med[p] = median(ratios, rounds);
	}
	free(ratios);

	printf("\n%-26s %16s %12s\n", "case", "mean iter (ms)", "ratio to a");
	for (int k = 0; k < CASES; k++)
		printf("%-26s %16.3f %12.3f\n", case_names[k], mean[k] / 1e6,
		       mean[k] / mean[CASE_NONE]);
	printf("\nb/a = %.3f   c/a = %.3f   b/c = %.3f   ratio of means, %ld iterations per case\n",
	       mean[CASE_RANDOM] / mean[CASE_NONE], mean[CASE_ALIGNED] / mean[CASE_NONE],
	       mean[CASE_RANDOM] / mean[CASE_ALIGNED], rounds * iterations);
	printf("b/a = %.3f   c/a = %.3f   b/c = %.3f   median of the %ld per-round ratios\n",
	       med[0], med[1], med[2], rounds);
	/*
	 * Back-of-envelope: every tick each monitor takes D from its worker,
	 * and the barrier passes the delay on to all.  Random phases (bursts
	 * rarely in the same iteration): n delays of D per I; aligned: one.
	 */
	printf("rough expectation: b/a ~ 1 + %d*D/I = %.3f, c/a ~ 1 + D/I = %.3f "
	       "(bench/noise-sim --small-check models it more closely)\n",
	       ncpus, 1 + ncpus * noise_ms / interval_ms, 1 + noise_ms / interval_ms);
	for (int k = 0; k < CASES; k++)
		free(per_round[k]);
	return 0;
}
