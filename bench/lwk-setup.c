/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench/lwk-setup [ROUNDS]: what the --lwk partition costs a node, in the
 * plugin itself, on this machine's real kernel paths (root): setup (plan,
 * IRQs off the App CPUs, hugepages) and teardown, with and without mem=,
 * for all of this node's CPUs as the job's.  Prints medians in
 * microseconds; bench/lwk-cost puts them next to a job without --lwk.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lwk/part.h"
#include "sweep/gone.h"
#include "common/options.h"
#include "common/topology.h"

/* Any other job's state found is kept: the bench sweeps nothing. */
static bool any_alive(uint32_t job)
{
	(void)job;
	return true;
}

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 20;
	static const char *const cases[] = { "os=1", "os=1,mem=64M" };
	char err[1024], log[8192], dir[] = "/tmp/lwk-bench-state.XXXXXX";
	struct lwk_topology *t = lwk_topology_read("/sys", err, sizeof(err));
	struct lwk_node_roots r = { "/sys", "/proc", "/sys/fs/cgroup", NULL, "bench", "/nonexistent",
				    0, 0 };
	struct lwk_cpuset all;
	double *set = calloc((size_t)rounds, sizeof(double)), *down = calloc((size_t)rounds, sizeof(double));

	if (!t || !set || !down || rounds < 1 || !mkdtemp(dir)) {
		fprintf(stderr, "lwk-setup: %s\n", t ? "bad arguments" : err);
		return 1;
	}
	r.state_root = dir;
	lwk_cpuset_zero(&all);
	for (unsigned i = 0; i < t->ncpus; i++)
		lwk_cpuset_set(&all, (unsigned)t->cpus[i].cpu);
	for (size_t c = 0; c < sizeof(cases) / sizeof(*cases); c++) {
		struct lwk_opts o;
		struct lwk_part p;

		if (lwk_option_parse(&lwk_grammar_lwk, cases[c], &o, err, sizeof(err))) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		for (int i = 0; i < rounds; i++) {
			double t0 = now_us(), t1, t2;

			if (lwk_part_setup(&r, 4000000000u + (uint32_t)i, t, &all, &o, false,
					   any_alive, lwk_sweep_gone, &p, err, sizeof(err)) != 1) {
				fprintf(stderr, "lwk-setup: %s\n", err);
				return 1;
			}
			t1 = now_us();
			if (lwk_part_teardown(&r, 4000000000u + (uint32_t)i, log, sizeof(log)) != 1) {
				fprintf(stderr, "lwk-setup: teardown: %s\n", log);
				return 1;
			}
			t2 = now_us();
			set[i] = t1 - t0;
			down[i] = t2 - t1;
		}
		printf("%s setup_us %.0f teardown_us %.0f\n", cases[c], median(set, rounds),
		       median(down, rounds));
	}
	rmdir(dir);
	lwk_topology_free(t);
	return 0;
}
