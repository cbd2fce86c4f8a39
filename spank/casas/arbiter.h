/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The CaSAS arbiter (seed 001, section 3): how many dies each
 * contention-aware job on a node gets, and which.  Pure: no system
 * calls, so it is tested over topology fixtures and synthetic curves.
 *
 * A job's scalability is its IPS curve: instructions per second over all
 * its threads when it ran on 1, 2, ... n dies (ips[k] for k dies).  Its
 * estimated slowdown on k dies is NTT(k) = max(ips) / ips[min(k, n)]:
 * the paper's C_MP / C_SP, with "alone" meaning its best probed point
 * (not necessarily all dies) and no gain assumed past the last point
 * probed.  The split minimises ANTT = mean NTT (or, objective=stp,
 * maximises STP = sum 1/NTT).
 *
 * Counts: the objective is a sum of one term per job, each depending
 * only on that job's count, under one budget (the dies).  That is a
 * separable resource-allocation problem, solved exactly at every size by
 * dynamic programming over (jobs, dies used): O(jobs x dies^2), 16 jobs
 * x 64 dies in ~65k steps.  lwk_casas_split_exhaustive() enumerates
 * every split instead (small cases only); the tests check they agree.
 *
 * Dies: lwk_casas_place() turns counts into dies: a job keeps the dies
 * it has where it can (no needless moves), then fills up preferring
 * packages it already uses and packages that fit its need whole, so a
 * job's dies share a package where possible (fig. 4(b)).  A job only
 * ever gets dies from its own allowed set (whole dies of what Slurm
 * allocated to it on the node).
 */
#ifndef LWK_CASAS_H
#define LWK_CASAS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cpulist.h"
#include "common/options.h"
#include "common/topology.h"

#define LWK_CASAS_MAX_JOBS 64
#define LWK_CASAS_MAX_POINTS 256 /* dies a curve can cover */

struct lwk_casas_curve {
	unsigned int n;				  /* points: ips[1..n]; 0 = not probed */
	double ips[LWK_CASAS_MAX_POINTS + 1];	  /* events per second on k dies */
};

/* One job as the arbiter sees it. */
struct lwk_casas_job {
	uint32_t id;
	unsigned int min_dies, max_dies;  /* max 0: no limit                */
	struct lwk_casas_curve curve;
	struct lwk_cpuset allowed;	  /* die indices it may get         */
	struct lwk_cpuset current;	  /* die indices it has now         */
	int forced;			  /* > 0: exactly this many (probe) */
};

enum lwk_casas_method {
	LWK_CASAS_SPLIT,	/* curves of every job: the ANTT/STP optimum   */
	LWK_CASAS_EQUAL,	/* a job has no curve: equal split             */
	LWK_CASAS_SHARED,	/* not one die each: nobody is split            */
};

struct lwk_casas_decision {
	enum lwk_casas_method method;
	unsigned int count[LWK_CASAS_MAX_JOBS];	 /* dies per job       */
	double ntt[LWK_CASAS_MAX_JOBS];		 /* estimated, SPLIT   */
	double antt, stp;			 /* estimated, SPLIT   */
	char why[256];				 /* EQUAL / SHARED     */
};

/* Estimated slowdown of a job with a curve on k >= 1 dies. */
double lwk_casas_ntt(const struct lwk_casas_curve *c, unsigned int k);

/*
 * Counts for jobs[0..n) over ndies dies.  Every job gets at least
 * max(1, min_dies), at most max_dies and what its allowed set holds; a
 * forced job exactly its forced count.  0, or -1 with err for input the
 * arbiter cannot take (too many jobs, a curve past its bound).
 */
int lwk_casas_split(const struct lwk_casas_job *jobs, unsigned int n, unsigned int ndies,
		    enum lwk_objective objective, struct lwk_casas_decision *d, char *err,
		    size_t errlen);
/* The same optimum by enumerating every split: for tests and the
 * benchmark, on small cases (it refuses more than 12 jobs). */
int lwk_casas_split_exhaustive(const struct lwk_casas_job *jobs, unsigned int n,
			       unsigned int ndies, enum lwk_objective objective,
			       struct lwk_casas_decision *d, char *err, size_t errlen);

/*
 * Dies the split left idle (a curve that falls past its best point says
 * more dies make the job slower; by probe noise as often as not): one at
 * a time to the job whose estimated slowdown grows least with it, while
 * that growth is within LWK_CASAS_NOISE.  Keeps d->antt and d->stp up to
 * date.  For LWK_CASAS_SPLIT decisions; others are left as they are.
 */
#define LWK_CASAS_NOISE 0.05
void lwk_casas_fill_idle(const struct lwk_casas_job *jobs, unsigned int n, unsigned int ndies,
			 struct lwk_casas_decision *d);

/*
 * Dies for the counts: out[i] gets jobs[i]'s die indices (empty when
 * its allowed dies were all taken: it then stays where Slurm put it).
 * Dies are the topology's; a job's are always a subset of its allowed.
 */
void lwk_casas_place(const struct lwk_topology *t, const struct lwk_casas_job *jobs,
		     unsigned int n, const unsigned int *count, struct lwk_cpuset *out);

/* The die indices of t whose CPUs all lie in cpus. */
void lwk_casas_whole_dies(const struct lwk_topology *t, const struct lwk_cpuset *cpus,
			  struct lwk_cpuset *dies);
/* The CPUs and the NUMA nodes of a set of die indices. */
void lwk_casas_dies_cpus(const struct lwk_topology *t, const struct lwk_cpuset *dies,
			 struct lwk_cpuset *cpus, struct lwk_cpuset *mems);

/* Curve text "1:2.5e9,2:4.8e9" <-> struct; points must run 1..n. */
size_t lwk_casas_curve_format(const struct lwk_casas_curve *c, char *buf, size_t len);
int lwk_casas_curve_parse(const char *text, struct lwk_casas_curve *c);

#endif
