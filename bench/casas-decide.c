/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench/casas-decide [REPS]: how long one CaSAS arbiter decision takes,
 * i.e. lwk_casas_split (exact DP, ANTT objective) followed by
 * lwk_casas_place, on two synthetic nodes built in code (no sysfs):
 *
 *   small  8 dies in 4 packages, 6 CPUs per die (the seed paper's
 *          Opteron 6172 node, 48 cores), 4 jobs
 *   large  64 dies in 16 packages of 4, 8 CPUs per die (512 CPUs),
 *          16 jobs
 *
 * Why it matters: the arbiter runs inside the plugin whenever a
 * contention-aware job starts, ends or finishes probing, so its cost is
 * paid on the job launch path; it should be microseconds, not a visible
 * fraction of srun's latency.
 *
 * Inputs are what a real decision sees: every job has a curve over all
 * the node's dies (shapes: perfect, Amdahl, saturating, memory-bound
 * with a peak), all dies allowed, and `current` set to the placement of
 * an earlier decision taken on slightly different curves, so place()
 * has work to keep and to move.  Eight input variants (different
 * measurement noise) are cycled so that the timing is not of one input
 * the branch predictor has learnt.
 *
 * Each decision is timed on its own with CLOCK_MONOTONIC; the median
 * and p99 are printed.  On the small node the exhaustive enumeration is
 * timed too, on the same inputs, and must reach the same ANTT as the DP
 * on every variant (exit 1 otherwise): the DP is only worth having if
 * it is the optimum, and the ratio says what it saves where enumeration
 * is still possible at all.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "casas/arbiter.h"

#define VARIANTS 8

struct node {
	const char *name;
	unsigned int packages, dies_per_package, cpus_per_die, njobs, reps;
	struct lwk_topology topo;
	struct lwk_casas_job *jobs[VARIANTS]; /* njobs each */
};

static _Noreturn void oom(void)
{
	fprintf(stderr, "casas-decide: out of memory\n");
	exit(1);
}

static void *zalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		oom();
	return p;
}

/* One core per CPU, one NUMA node and one L3 per die: the CaSAS die. */
static void build_topology(struct node *n)
{
	struct lwk_topology *t = &n->topo;
	unsigned int cpu = 0;

	memset(t, 0, sizeof(*t));
	t->npackages = n->packages;
	t->ndies = t->nnuma = n->packages * n->dies_per_package;
	t->ncpus = t->ncores = t->ndies * n->cpus_per_die;
	t->threads_per_core = 1;
	t->cpus = zalloc(t->ncpus, sizeof(*t->cpus));
	t->cores = zalloc(t->ncores, sizeof(*t->cores));
	t->dies = zalloc(t->ndies, sizeof(*t->dies));
	t->numa = zalloc(t->nnuma, sizeof(*t->numa));
	snprintf(t->source, sizeof(t->source), "synthetic");
	for (unsigned int d = 0; d < t->ndies; d++) {
		int pkg = (int)(d / n->dies_per_package);

		t->dies[d].package = pkg;
		t->dies[d].numa = (int)d;
		t->dies[d].ncores = n->cpus_per_die;
		t->numa[d].node = (int)d;
		for (unsigned int c = 0; c < n->cpus_per_die; c++, cpu++) {
			t->cpus[cpu] = (struct lwk_topo_cpu){ .cpu = (int)cpu, .package = pkg,
							      .core = (int)cpu, .die = (int)d,
							      .numa = (int)d,
							      .l3 = (int)(d * n->cpus_per_die) };
			t->cores[cpu].package = pkg;
			t->cores[cpu].die = (int)d;
			lwk_cpuset_set(&t->cores[cpu].cpus, cpu);
			lwk_cpuset_set(&t->dies[d].cpus, cpu);
			lwk_cpuset_set(&t->numa[d].cpus, cpu);
			lwk_cpuset_set(&t->online, cpu);
		}
	}
}

/* splitmix64, for reproducible noise. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static double noise(uint64_t key) /* uniform in [-1, 1) */
{
	return (double)(mix(key) >> 11) / 4503599627370496.0 - 1.0;
}

/*
 * Speed of job j on k of ndies dies, before noise; j % 4 picks the shape.  The
 * shapes are the ones the arbiter has to tell apart: one that wants
 * every die, two that flatten, and one that gets slower past its peak
 * (so that an idle die is a real option).
 */
static double shape_speed(unsigned int j, unsigned int k, unsigned int ndies)
{
	double x = (double)k / ndies * 8; /* in Opteron dies, so shapes match at both sizes */
	double f = 0.01 + 0.03 * (double)(j % 5);

	switch (j % 4) {
	case 0: return x;					/* perfect */
	case 1: return 1 / (f + (1 - f) / x);			/* Amdahl */
	case 2: return 3 * x / (1 + x * (0.5 + 0.1 * (j % 3)));	/* saturating */
	default: return x / (1 + 0.08 * (double)(j % 4 + 1) * x * x); /* memory-bound, peaks */
	}
}

static void make_curves(struct node *n, struct lwk_casas_job *jobs, uint64_t seed)
{
	unsigned int ndies = n->topo.ndies;

	for (unsigned int j = 0; j < n->njobs; j++) {
		struct lwk_casas_job *job = &jobs[j];

		job->curve.n = ndies;
		for (unsigned int k = 1; k <= ndies; k++)
			job->curve.ips[k] = 1e9 * (1 + (double)j / 7) *
					    shape_speed(j, k, ndies) *
					    (1 + 0.03 * noise(seed ^ mix((uint64_t)j << 20 ^ k)));
	}
}

static void build_jobs(struct node *n)
{
	struct lwk_casas_job *prev = zalloc(n->njobs, sizeof(*prev));
	struct lwk_cpuset *out = zalloc(n->njobs, sizeof(*out));
	struct lwk_casas_decision *d = zalloc(1, sizeof(*d));
	char err[256];

	/* The earlier decision: its placement is everybody's `current`. */
	for (unsigned int j = 0; j < n->njobs; j++) {
		prev[j].id = 100 + j;
		for (unsigned int dd = 0; dd < n->topo.ndies; dd++)
			lwk_cpuset_set(&prev[j].allowed, dd);
	}
	make_curves(n, prev, 0xfeed);
	if (lwk_casas_split(prev, n->njobs, n->topo.ndies, LWK_OBJECTIVE_ANTT, d, err,
			    sizeof(err))) {
		fprintf(stderr, "casas-decide: %s\n", err);
		exit(1);
	}
	lwk_casas_place(&n->topo, prev, n->njobs, d->count, out);
	for (unsigned int v = 0; v < VARIANTS; v++) {
		n->jobs[v] = zalloc(n->njobs, sizeof(struct lwk_casas_job));
		for (unsigned int j = 0; j < n->njobs; j++) {
			n->jobs[v][j] = prev[j];
			/* Some jobs have dies, the newest has none yet. */
			if (j + 1 < n->njobs)
				n->jobs[v][j].current = out[j];
			else
				lwk_cpuset_zero(&n->jobs[v][j].current);
		}
		make_curves(n, n->jobs[v], mix(v + 1));
	}
	free(prev);
	free(out);
	free(d);
}

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void quantiles(double *v, unsigned int n, double *med, double *p99)
{
	qsort(v, n, sizeof(*v), cmp_double);
	*med = v[n / 2];
	*p99 = v[(unsigned int)((double)(n - 1) * 0.99)];
}

/* Every job got its count, disjoint dies, only allowed ones. */
static int placement_ok(const struct node *n, const struct lwk_casas_job *jobs,
			const unsigned int *count, const struct lwk_cpuset *out)
{
	struct lwk_cpuset seen;

	lwk_cpuset_zero(&seen);
	for (unsigned int j = 0; j < n->njobs; j++) {
		struct lwk_cpuset in = out[j];

		if (lwk_cpuset_count(&out[j]) != count[j])
			return 0;
		lwk_cpuset_and(&in, &jobs[j].allowed);
		if (!lwk_cpuset_equal(&in, &out[j]))
			return 0;
		in = seen;
		lwk_cpuset_and(&in, &out[j]);
		if (lwk_cpuset_first(&in) >= 0)
			return 0;
		lwk_cpuset_or(&seen, &out[j]);
	}
	return 1;
}

static void print_counts(const char *label, const struct lwk_casas_decision *d, unsigned int n)
{
	printf("  %s counts:", label);
	for (unsigned int j = 0; j < n; j++)
		printf(" %u", d->count[j]);
	printf("  (estimated ANTT %.6f)\n", d->antt);
}

static volatile unsigned int sink; /* keeps results live */

/* Returns 0, or 1 when a check failed. */
static int run(struct node *n, int with_exhaustive)
{
	double *dp = zalloc(n->reps, sizeof(double)), *ex = zalloc(n->reps, sizeof(double));
	double *sp = zalloc(n->reps, sizeof(double)), *es = zalloc(n->reps, sizeof(double));
	struct lwk_cpuset *out = zalloc(n->njobs, sizeof(*out));
	struct lwk_casas_decision *d = zalloc(1, sizeof(*d)), *e = zalloc(1, sizeof(*e));
	double med, p99, emed = 0, ep99 = 0, smed, sp99, esmed, esp99;
	char err[256];
	int bad = 0;

	/* Correctness first, on every variant. */
	for (unsigned int v = 0; v < VARIANTS; v++) {
		if (lwk_casas_split(n->jobs[v], n->njobs, n->topo.ndies, LWK_OBJECTIVE_ANTT, d,
				    err, sizeof(err))) {
			fprintf(stderr, "casas-decide: %s\n", err);
			exit(1);
		}
		if (d->method != LWK_CASAS_SPLIT) {
			fprintf(stderr, "casas-decide: %s: not a split: %s\n", n->name, d->why);
			bad = 1;
		}
		lwk_casas_place(&n->topo, n->jobs[v], n->njobs, d->count, out);
		if (!placement_ok(n, n->jobs[v], d->count, out)) {
			fprintf(stderr, "casas-decide: %s variant %u: bad placement\n", n->name, v);
			bad = 1;
		}
		if (v == 0)
			print_counts("DP        ", d, n->njobs);
		if (!with_exhaustive)
			continue;
		if (lwk_casas_split_exhaustive(n->jobs[v], n->njobs, n->topo.ndies,
					       LWK_OBJECTIVE_ANTT, e, err, sizeof(err))) {
			fprintf(stderr, "casas-decide: %s\n", err);
			exit(1);
		}
		if (v == 0)
			print_counts("exhaustive", e, n->njobs);
		if (fabs(d->antt - e->antt) > 1e-9 * (1 + fabs(e->antt))) {
			fprintf(stderr,
				"casas-decide: %s variant %u: DP ANTT %.9f != exhaustive %.9f\n",
				n->name, v, d->antt, e->antt);
			bad = 1;
		}
	}
	if (with_exhaustive && !bad)
		printf("  DP and exhaustive reach the same ANTT on all %d variants\n", VARIANTS);

	/* DP and exhaustive alternate, so drift in the machine falls on both. */
	for (unsigned int r = 0; r < n->reps; r++) {
		const struct lwk_casas_job *jobs = n->jobs[r % VARIANTS];
		double t0 = now_us(), t1;

		/* The split's share is read off the same decision, so that
		 * split-only and total are not two different samples. */
		lwk_casas_split(jobs, n->njobs, n->topo.ndies, LWK_OBJECTIVE_ANTT, d, err,
				sizeof(err));
		t1 = now_us();
		lwk_casas_place(&n->topo, jobs, n->njobs, d->count, out);
		dp[r] = now_us() - t0;
		sp[r] = t1 - t0;
		sink += (unsigned int)lwk_cpuset_first(&out[0]);
		if (with_exhaustive) {
			t0 = now_us();
			lwk_casas_split_exhaustive(jobs, n->njobs, n->topo.ndies,
						   LWK_OBJECTIVE_ANTT, e, err, sizeof(err));
			t1 = now_us();
			lwk_casas_place(&n->topo, jobs, n->njobs, e->count, out);
			ex[r] = now_us() - t0;
			es[r] = t1 - t0;
			sink += (unsigned int)lwk_cpuset_first(&out[0]);
		}
	}
	quantiles(dp, n->reps, &med, &p99);
	quantiles(sp, n->reps, &smed, &sp99);
	printf("  decision, DP split + place:         median %8.2f us  p99 %8.2f us  "
	       "(%u decisions)\n", med, p99, n->reps);
	printf("    of which the split alone:         median %8.2f us  p99 %8.2f us\n", smed,
	       sp99);
	if (with_exhaustive) {
		quantiles(ex, n->reps, &emed, &ep99);
		quantiles(es, n->reps, &esmed, &esp99);
		printf("  decision, exhaustive split + place: median %8.2f us  p99 %8.2f us\n",
		       emed, ep99);
		printf("    of which the split alone:         median %8.2f us  p99 %8.2f us\n",
		       esmed, esp99);
		printf("  ratio exhaustive/DP: decision median %.2f (p99 %.2f), split alone "
		       "median %.2f (p99 %.2f)\n", emed / med, ep99 / p99, esmed / smed,
		       esp99 / sp99);
	}
	free(dp);
	free(ex);
	free(sp);
	free(es);
	free(out);
	free(d);
	free(e);
	return bad;
}

int main(int argc, char **argv)
{
	static struct node nodes[] = {
		{ .name = "small", .packages = 4, .dies_per_package = 2, .cpus_per_die = 6,
		  .njobs = 4, .reps = 20000 },
		{ .name = "large", .packages = 16, .dies_per_package = 4, .cpus_per_die = 8,
		  .njobs = 16, .reps = 2000 },
	};
	int bad = 0;

	if (argc > 1) {
		long r = atol(argv[1]);

		if (r < 1 || r > 10000000) {
			fprintf(stderr, "usage: casas-decide [REPS for the small node; the large "
					"one gets a tenth]\n");
			return 2;
		}
		nodes[0].reps = (unsigned int)r;
		nodes[1].reps = (unsigned int)(r / 10 ? r / 10 : 1);
	}
	printf("casas-decide: one arbiter decision = lwk_casas_split (ANTT, exact DP) + "
	       "lwk_casas_place, CLOCK_MONOTONIC per decision, %d input variants cycled\n",
	       VARIANTS);
	for (size_t i = 0; i < sizeof(nodes) / sizeof(*nodes); i++) {
		struct node *n = &nodes[i];

		build_topology(n);
		build_jobs(n);
		printf("\n%s: %u dies in %u packages, %u CPUs per die (%u CPUs), %u jobs\n",
		       n->name, n->topo.ndies, n->packages, n->cpus_per_die, n->topo.ncpus,
		       n->njobs);
		bad |= run(n, i == 0);
	}
	return bad;
}
