/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "casas/arbiter.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERR(...) (snprintf(err, errlen, __VA_ARGS__), -1)
#define TIE 1e-12

/* a is better than b by more than rounding (b may be infinite). */
static bool below(double a, double b)
{
	return isinf(b) ? a < b : a < b - TIE * (fabs(b) + 1);
}

static bool level(double a, double b)
{
	return !below(a, b) && !below(b, a);
}

double lwk_casas_ntt(const struct lwk_casas_curve *c, unsigned int k)
{
	double best = 0, at;

	if (!c->n || !k)
		return INFINITY;
	for (unsigned int i = 1; i <= c->n; i++)
		if (c->ips[i] > best)
			best = c->ips[i];
	at = c->ips[k < c->n ? k : c->n];
	/* A job that did nothing measurable anywhere is not slowed by
	 * anything: every count is as good as any other. */
	if (best <= 0)
		return 1.0;
	return at > 0 ? best / at : INFINITY;
}

/* What the objective adds for job j on k dies (to minimise). */
static double cost(const struct lwk_casas_job *j, unsigned int k, enum lwk_objective o)
{
	double ntt;

	if (!k || !j->curve.n)
		return 0; /* not split, or being probed: outside the objective */
	ntt = lwk_casas_ntt(&j->curve, k);
	if (o == LWK_OBJECTIVE_STP)
		return isinf(ntt) ? 0 : -1.0 / ntt;
	return isinf(ntt) ? 1e12 : ntt;
}

/* The counts each job may get: [lo, hi]; lo = hi = 0 when it has no
 * whole die to be given. */
static void bounds(const struct lwk_casas_job *j, unsigned int ndies, unsigned int *lo,
		   unsigned int *hi)
{
	unsigned int allowed = lwk_cpuset_count(&j->allowed);
	unsigned int h = j->max_dies && j->max_dies < ndies ? j->max_dies : ndies;

	if (allowed < h)
		h = allowed;
	if (j->forced > 0) {
		*lo = *hi = (unsigned int)j->forced < h ? (unsigned int)j->forced : h;
		return;
	}
	*lo = j->min_dies > 1 ? j->min_dies : 1;
	if (*lo > h)
		*lo = h; /* min_dies past what it may have: all it may have */
	*hi = h;
}

static int check_input(const struct lwk_casas_job *jobs, unsigned int n, unsigned int ndies,
		       struct lwk_casas_decision *d, char *err, size_t errlen)
{
	memset(d, 0, sizeof(*d));
	if (n > LWK_CASAS_MAX_JOBS)
		return ERR("lwk: --contention-aware: %u jobs on one node; the arbiter takes at most %d",
			   n, LWK_CASAS_MAX_JOBS);
	if (ndies > LWK_CASAS_MAX_POINTS)
		return ERR("lwk: --contention-aware: %u dies on one node; the arbiter takes at most %d",
			   ndies, LWK_CASAS_MAX_POINTS);
	for (unsigned int i = 0; i < n; i++)
		if (jobs[i].curve.n > LWK_CASAS_MAX_POINTS)
			return ERR("lwk: --contention-aware: job %u has a curve of %u points; at most %d",
				   jobs[i].id, jobs[i].curve.n, LWK_CASAS_MAX_POINTS);
	return 0;
}

/*
 * Before any optimisation: not one die each means nobody is split (the
 * jobs share their CPUs as Slurm placed them); a job without a curve
 * means the curves cannot be traded against each other: equal split.
 * 1 when decided here, 0 to optimise.
 */
static int decide_without_curves(const struct lwk_casas_job *jobs, unsigned int n,
				 unsigned int ndies, struct lwk_casas_decision *d)
{
	unsigned int lo[LWK_CASAS_MAX_JOBS], hi[LWK_CASAS_MAX_JOBS], need = 0, left;
	bool curves = true;

	for (unsigned int i = 0; i < n; i++) {
		bounds(&jobs[i], ndies, &lo[i], &hi[i]);
		need += lo[i];
		if (!jobs[i].curve.n && jobs[i].forced <= 0)
			curves = false;
	}
	if (need > ndies) {
		d->method = LWK_CASAS_SHARED;
		snprintf(d->why, sizeof(d->why),
			 "%u job(s) need %u dies at least and the node has %u: they share", n, need,
			 ndies);
		return 1;
	}
	if (curves)
		return 0;
	d->method = LWK_CASAS_EQUAL;
	snprintf(d->why, sizeof(d->why), "a job has no IPS curve: equal split");
	left = ndies - need;
	for (unsigned int i = 0; i < n; i++)
		d->count[i] = lo[i];
	/* Water-filling: one die at a time to the job with the fewest that
	 * can take one more. */
	while (left) {
		int pick = -1;

		for (unsigned int i = 0; i < n; i++)
			if (d->count[i] < hi[i] && jobs[i].forced <= 0 &&
			    (pick < 0 || d->count[i] < d->count[pick]))
				pick = (int)i;
		if (pick < 0)
			break;
		d->count[pick]++;
		left--;
	}
	return 1;
}

static void score(const struct lwk_casas_job *jobs, unsigned int n, enum lwk_objective o,
		  struct lwk_casas_decision *d)
{
	unsigned int split = 0;

	d->antt = d->stp = 0;
	for (unsigned int i = 0; i < n; i++) {
		if (!d->count[i] || !jobs[i].curve.n)
			continue;
		d->ntt[i] = lwk_casas_ntt(&jobs[i].curve, d->count[i]);
		d->antt += d->ntt[i];
		d->stp += isinf(d->ntt[i]) ? 0 : 1.0 / d->ntt[i];
		split++;
	}
	if (split)
		d->antt /= split;
	(void)o;
}

int lwk_casas_split(const struct lwk_casas_job *jobs, unsigned int n, unsigned int ndies,
		    enum lwk_objective objective, struct lwk_casas_decision *d, char *err,
		    size_t errlen)
{
	unsigned int lo[LWK_CASAS_MAX_JOBS], hi[LWK_CASAS_MAX_JOBS], w = ndies + 1, t_best = 0;
	double *best, *table;
	unsigned short *pick;

	if (check_input(jobs, n, ndies, d, err, errlen))
		return -1;
	if (decide_without_curves(jobs, n, ndies, d))
		return 0;
	d->method = LWK_CASAS_SPLIT;
	for (unsigned int i = 0; i < n; i++)
		bounds(&jobs[i], ndies, &lo[i], &hi[i]);
	/* best[i][t]: the least cost of jobs 0..i-1 using exactly t dies. */
	best = malloc(sizeof(*best) * (n + 1) * w);
	pick = malloc(sizeof(*pick) * (n + 1) * w);
	table = malloc(sizeof(*table) * (n ? n : 1) * w);
	if (!best || !pick || !table) {
		free(best);
		free(pick);
		free(table);
		return ERR("lwk: --contention-aware: out of memory");
	}
	/* Each job's cost per count once: the DP reads it dies times over. */
	for (unsigned int i = 0; i < n; i++)
		for (unsigned int k = lo[i]; k <= hi[i]; k++)
			table[i * w + k] = cost(&jobs[i], k, objective);
	for (unsigned int t = 0; t < w; t++)
		best[t] = t ? INFINITY : 0;
	for (unsigned int i = 1; i <= n; i++) {
		for (unsigned int t = 0; t < w; t++) {
			double b = INFINITY;
			unsigned int bk = 0;

			/* Larger counts first: a tie keeps the bigger share. */
			for (unsigned int k = hi[i - 1] + 1; k-- > lo[i - 1];) {
				double c;

				if (k > t || isinf(best[(i - 1) * w + t - k]))
					continue;
				c = best[(i - 1) * w + t - k] + table[(i - 1) * w + k];
				if (below(c, b)) {
					b = c;
					bk = k;
				}
			}
			best[i * w + t] = b;
			pick[i * w + t] = (unsigned short)bk;
		}
	}
	/* The least cost over how many dies end up used; a tie uses more
	 * (an idle die helps nobody). */
	{
		double b = INFINITY;

		for (unsigned int t = w; t-- > 0;)
			if (below(best[n * w + t], b)) {
				b = best[n * w + t];
				t_best = t;
			}
	}
	for (unsigned int i = n; i >= 1; i--) {
		d->count[i - 1] = pick[i * w + t_best];
		t_best -= d->count[i - 1];
	}
	free(best);
	free(pick);
	free(table);
	score(jobs, n, objective, d);
	return 0;
}

struct search {
	const struct lwk_casas_job *jobs;
	unsigned int n, ndies;
	enum lwk_objective o;
	unsigned int lo[LWK_CASAS_MAX_JOBS], hi[LWK_CASAS_MAX_JOBS];
	unsigned int cur[LWK_CASAS_MAX_JOBS], best[LWK_CASAS_MAX_JOBS];
	double best_cost;
	unsigned int best_used;
};

static void enumerate(struct search *s, unsigned int i, unsigned int used, double c)
{
	if (i == s->n) {
		if (below(c, s->best_cost) || (level(c, s->best_cost) && used > s->best_used)) {
			s->best_cost = c;
			s->best_used = used;
			memcpy(s->best, s->cur, sizeof(s->cur));
		}
		return;
	}
	for (unsigned int k = s->lo[i]; k <= s->hi[i] && used + k <= s->ndies; k++) {
		s->cur[i] = k;
		enumerate(s, i + 1, used + k, c + cost(&s->jobs[i], k, s->o));
	}
}

int lwk_casas_split_exhaustive(const struct lwk_casas_job *jobs, unsigned int n,
			       unsigned int ndies, enum lwk_objective objective,
			       struct lwk_casas_decision *d, char *err, size_t errlen)
{
	struct search s; /* not static: two threads of a slurmstepd may split */

	if (check_input(jobs, n, ndies, d, err, errlen))
		return -1;
	if (n > 12)
		return ERR("lwk: --contention-aware: exhaustive search refuses %u jobs (at most 12)", n);
	if (decide_without_curves(jobs, n, ndies, d))
		return 0;
	memset(&s, 0, sizeof(s));
	s.jobs = jobs;
	s.n = n;
	s.ndies = ndies;
	s.o = objective;
	s.best_cost = INFINITY;
	for (unsigned int i = 0; i < n; i++)
		bounds(&jobs[i], ndies, &s.lo[i], &s.hi[i]);
	enumerate(&s, 0, 0, 0);
	d->method = LWK_CASAS_SPLIT;
	memcpy(d->count, s.best, sizeof(unsigned int) * n);
	score(jobs, n, objective, d);
	return 0;
}

void lwk_casas_fill_idle(const struct lwk_casas_job *jobs, unsigned int n, unsigned int ndies,
			 struct lwk_casas_decision *d)
{
	unsigned int used = 0;

	if (d->method != LWK_CASAS_SPLIT)
		return;
	for (unsigned int i = 0; i < n; i++)
		used += d->count[i];
	while (used < ndies) {
		int pick = -1;
		double least = 1 + LWK_CASAS_NOISE;

		for (unsigned int i = 0; i < n; i++) {
			unsigned int lo, hi;
			double grow;

			bounds(&jobs[i], ndies, &lo, &hi);
			if (!d->count[i] || d->count[i] >= hi || !jobs[i].curve.n || jobs[i].forced > 0)
				continue;
			grow = lwk_casas_ntt(&jobs[i].curve, d->count[i] + 1) /
			       lwk_casas_ntt(&jobs[i].curve, d->count[i]);
			if (grow <= least) {
				least = grow;
				pick = (int)i;
			}
		}
		if (pick < 0)
			break;
		d->count[pick]++;
		used++;
	}
	score(jobs, n, LWK_OBJECTIVE_ANTT, d);
}

/* ---- which dies -------------------------------------------------------- */

/* How many dies of set lie in die d's package. */
static unsigned int in_package(const struct lwk_topology *t, const struct lwk_cpuset *set, int d)
{
	unsigned int c = 0;

	for (int e = lwk_cpuset_first(set); e >= 0; e = lwk_cpuset_next(set, e))
		if ((unsigned int)e < t->ndies && t->dies[e].package == t->dies[d].package)
			c++;
	return c;
}

/*
 * The best die of cand for a job that holds mine and needs `need` more:
 * first a package it already uses (the most of its dies), then the
 * smallest package that fits the whole need, else the package with the
 * most candidates; the lowest index breaks ties.  -1 when cand is empty.
 */
static int best_die(const struct lwk_topology *t, const struct lwk_cpuset *cand,
		    const struct lwk_cpuset *mine, unsigned int need)
{
	int pick = -1;
	long pick_score = 0;

	for (int d = lwk_cpuset_first(cand); d >= 0; d = lwk_cpuset_next(cand, d)) {
		unsigned int held = in_package(t, mine, d), avail = in_package(t, cand, d);
		long s;

		if (held)
			s = 3000000L + held;
		else if (avail >= need)
			s = 2000000L - avail; /* best fit */
		else
			s = 1000000L + avail;
		if (pick < 0 || s > pick_score) {
			pick = d;
			pick_score = s;
		}
	}
	return pick;
}

/* Move the best dies of cand (one at a time: each pick changes what
 * is best) into mine until it holds want; taken dies leave free too. */
static void take(const struct lwk_topology *t, struct lwk_cpuset *cand,
		 struct lwk_cpuset *free_dies, struct lwk_cpuset *mine, unsigned int *have,
		 unsigned int want)
{
	while (*have < want) {
		int d = best_die(t, cand, mine, want - *have);

		if (d < 0)
			return;
		lwk_cpuset_set(mine, (unsigned int)d);
		cand->bits[d / 64] &= ~(1ULL << (d % 64));
		free_dies->bits[d / 64] &= ~(1ULL << (d % 64));
		(*have)++;
	}
}

void lwk_casas_place(const struct lwk_topology *t, const struct lwk_casas_job *jobs,
		     unsigned int n, const unsigned int *count, struct lwk_cpuset *out)
{
	struct lwk_cpuset free_dies;
	unsigned int order[LWK_CASAS_MAX_JOBS], have[LWK_CASAS_MAX_JOBS];

	if (n > LWK_CASAS_MAX_JOBS)
		n = LWK_CASAS_MAX_JOBS;
	lwk_cpuset_zero(&free_dies);
	for (unsigned int d = 0; d < t->ndies; d++)
		lwk_cpuset_set(&free_dies, d);
	/* Keep what each job has, up to its new count. */
	for (unsigned int i = 0; i < n; i++) {
		struct lwk_cpuset keep = jobs[i].current;

		lwk_cpuset_zero(&out[i]);
		have[i] = 0;
		lwk_cpuset_and(&keep, &jobs[i].allowed);
		lwk_cpuset_and(&keep, &free_dies);
		take(t, &keep, &free_dies, &out[i], &have[i], count[i]);
	}
	/* Then fill: the largest need first, the most constrained first
	 * among equals, so that the small ones fit in the gaps. */
	for (unsigned int i = 0; i < n; i++)
		order[i] = i;
	for (unsigned int a = 1; a < n; a++)
		for (unsigned int b = a; b > 0; b--) {
			unsigned int x = order[b - 1], y = order[b];
			unsigned int nx = count[x] - have[x], ny = count[y] - have[y];
			unsigned int ax = lwk_cpuset_count(&jobs[x].allowed);
			unsigned int ay = lwk_cpuset_count(&jobs[y].allowed);

			if (ny > nx || (ny == nx && ay < ax)) {
				order[b - 1] = y;
				order[b] = x;
			}
		}
	for (unsigned int o = 0; o < n; o++) {
		unsigned int i = order[o];
		struct lwk_cpuset cand = free_dies;

		lwk_cpuset_and(&cand, &jobs[i].allowed);
		take(t, &cand, &free_dies, &out[i], &have[i], count[i]);
	}
}

void lwk_casas_whole_dies(const struct lwk_topology *t, const struct lwk_cpuset *cpus,
			  struct lwk_cpuset *dies)
{
	lwk_cpuset_zero(dies);
	for (unsigned int d = 0; d < t->ndies; d++) {
		struct lwk_cpuset in = t->dies[d].cpus;

		lwk_cpuset_and(&in, cpus);
		if (lwk_cpuset_count(&t->dies[d].cpus) &&
		    lwk_cpuset_equal(&in, &t->dies[d].cpus))
			lwk_cpuset_set(dies, d);
	}
}

void lwk_casas_dies_cpus(const struct lwk_topology *t, const struct lwk_cpuset *dies,
			 struct lwk_cpuset *cpus, struct lwk_cpuset *mems)
{
	lwk_cpuset_zero(cpus);
	lwk_cpuset_zero(mems);
	for (int d = lwk_cpuset_first(dies); d >= 0; d = lwk_cpuset_next(dies, d)) {
		if ((unsigned int)d >= t->ndies)
			continue;
		lwk_cpuset_or(cpus, &t->dies[d].cpus);
		if (t->dies[d].numa >= 0 && (unsigned int)t->dies[d].numa < t->nnuma)
			lwk_cpuset_set(mems, (unsigned int)t->numa[t->dies[d].numa].node);
	}
}

/* ---- curve text ---------------------------------------------------------- */

size_t lwk_casas_curve_format(const struct lwk_casas_curve *c, char *buf, size_t len)
{
	size_t used = 0;

	if (len)
		buf[0] = '\0';
	for (unsigned int k = 1; k <= c->n && k <= LWK_CASAS_MAX_POINTS; k++) {
		int w = snprintf(buf + (used < len ? used : len), used < len ? len - used : 0,
				 "%s%u:%.6g", k > 1 ? "," : "", k, c->ips[k]);

		used += w > 0 ? (size_t)w : 0;
	}
	return used;
}

int lwk_casas_curve_parse(const char *text, struct lwk_casas_curve *c)
{
	const char *p = text;

	memset(c, 0, sizeof(*c));
	while (*p) {
		char *end;
		unsigned long k;
		double v;

		if (*p < '0' || *p > '9')
			goto bad;
		errno = 0;
		k = strtoul(p, &end, 10);
		if (errno || *end != ':' || k != c->n + 1 || k > LWK_CASAS_MAX_POINTS)
			goto bad;
		p = end + 1;
		if (!*p || *p == ',' || isspace((unsigned char)*p))
			goto bad; /* strtod would skip blanks */
		errno = 0;
		v = strtod(p, &end);
		if (errno || end == p || !isfinite(v) || v < 0 || (*end && *end != ','))
			goto bad;
		c->ips[k] = v;
		c->n = (unsigned int)k;
		p = *end ? end + 1 : end;
		if (*end && !*p)
			goto bad; /* trailing comma */
	}
	return 0;
bad:
	memset(c, 0, sizeof(*c));
	errno = EINVAL;
	return -1;
}
