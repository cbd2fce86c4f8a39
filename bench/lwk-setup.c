/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench/lwk-setup [ROUNDS]: what the --lwk partition costs a node, in the
 * plugin itself, on this machine's real kernel paths (root): setup (plan,
 * IRQs off the App CPUs, hugepages) and teardown, with and without mem=,
 * for all of this node's CPUs as the job's; and, where the kernel makes
 * remote partitions (cgroup v2, 6.7+), with the App cores made an
 * isolated partition of a cgroup two levels down (lwk-bench.slice/app:
 * the exclusive CPUs of each level, the partition, and their undoing in
 * the teardown).  Prints medians in microseconds; bench/lwk-cost puts
 * them next to a job without --lwk.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lwk/part.h"
#include "node/cgroup.h"
#include "node/xpart.h"
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

#define BENCH_CG "lwk-bench.slice"

/* The cgroup the partition is made of, where the kernel can make one:
 * lwk-bench.slice/app with the cpuset controller.  false with why. */
static bool isolation_ready(const struct lwk_node_roots *r, char *why, size_t len)
{
	char dir[512];

	if (lwk_cgroup_detect(r->cgroup_root) != LWK_CGROUP_V2) {
		snprintf(why, len, "cgroup v1: no isolated partitions");
		return false;
	}
	snprintf(dir, sizeof(dir), "%s/%s", r->cgroup_root, BENCH_CG);
	mkdir(dir, 0755);
	if (lwk_cgroup_write_knob(dir, "cgroup.subtree_control", "+cpuset", why, len))
		return false;
	snprintf(dir, sizeof(dir), "%s/%s/app", r->cgroup_root, BENCH_CG);
	mkdir(dir, 0755);
	return lwk_xpart_capable(r->cgroup_root, "/" BENCH_CG "/app", why, len) == 1;
}

static int isolate(const struct lwk_node_roots *r, const struct lwk_part *p, char *err,
		   size_t errlen)
{
	char kind[16], why[600];

	if (lwk_part_isolate(r, p, "/" BENCH_CG "/app", LWK_ISOLATE_PARTITION, kind, sizeof(kind),
			     why, sizeof(why), err, errlen))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 20;
	static const char *const cases[] = { "os=1", "os=1,mem=64M", "os=1 isolated" };
	char err[1024], log[8192], dir[] = "/tmp/lwk-bench-state.XXXXXX";
	struct lwk_topology *t = lwk_topology_read("/sys", err, sizeof(err));
	struct lwk_node_roots r = { "/sys", "/proc", "/sys/fs/cgroup", NULL, "bench", "/nonexistent",
				    0, 0, NULL, false /* irqbalance not told */ };
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

		bool iso = strstr(cases[c], " isolated") != NULL;

		if (iso && !isolation_ready(&r, err, sizeof(err))) {
			printf("%s skipped: %s\n", cases[c], err);
			continue;
		}
		if (lwk_option_parse(&lwk_grammar_lwk, iso ? "os=1" : cases[c], &o, err, sizeof(err))) {
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
			if (iso && isolate(&r, &p, err, sizeof(err))) {
				fprintf(stderr, "lwk-setup: %s\n", err);
				lwk_part_teardown(&r, 4000000000u + (uint32_t)i, log, sizeof(log));
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
	rmdir("/sys/fs/cgroup/" BENCH_CG "/app");
	rmdir("/sys/fs/cgroup/" BENCH_CG);
	lwk_topology_free(t);
	return 0;
}
