/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --contention-aware: the node's re-plan, under the node lock.  The
 * records of the jobs on the node go to the arbiter (casas/arbiter.c);
 * its split is written to each record and each job's cgroup.
 */
#define _GNU_SOURCE
#include "casas/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void set_text(char *out, size_t len, const struct lwk_cpuset *s)
{
	if (lwk_cpulist_format(s, out, len) >= len && len > 4)
		strcpy(out + len - 4, "...");
}

/*
 * The split of every contention-aware job on the node, under the node
 * lock.  Gone jobs (found before the lock) are dropped first.  Each job's record gets its dies;
 * its cgroup's CPUs are rewritten where they changed.
 */
int lwk_casas_replan_locked(const struct lwk_node_roots *r, const struct gone_jobs *g, char *log,
			    size_t loglen)
{
	uint32_t ids[LWK_CASAS_MAX_JOBS];
	struct lwk_casas_record *recs = NULL;
	struct lwk_casas_job *jobs = NULL;
	struct lwk_cpuset *out = NULL;
	struct lwk_casas_decision d;
	struct lwk_topology *t = NULL;
	int idx[LWK_CASAS_MAX_JOBS], n = 0, rc = -1;
	unsigned int nj = 0;
	char err[512], line[512];
	enum lwk_objective objective = LWK_OBJECTIVE_STP;
	bool probing = false;
	int nids = lwk_casas_record_jobs(r, ids, LWK_CASAS_MAX_JOBS);

	if (!nids)
		return 0;
	recs = calloc((size_t)nids, sizeof(*recs));
	jobs = calloc((size_t)nids, sizeof(*jobs));
	out = calloc((size_t)nids, sizeof(*out));
	if (!recs || !jobs || !out)
		goto done;
	t = lwk_topology_read(r->sysfs, err, sizeof(err));
	if (!t) {
		say(log, loglen, "lwk: contention-aware: %s", err);
		goto done;
	}
	for (int i = 0; i < nids; i++) {
		struct lwk_casas_record *rec = &recs[n];
		char path[4200];

		if (lwk_casas_load(r, ids[i], rec) != 1) {
			/* Root writes records whole (rename): only a damaged
			 * disk or a hand gets here.  Kept while its job runs. */
			bool gone = lwk_casas_is_gone(g, ids[i]);

			if (gone) {
				lwk_casas_record_path(r, ids[i], path, sizeof(path));
				unlink(path);
			}
			say(log, loglen, "lwk: contention-aware: the record of job %u is unreadable%s", ids[i],
			    gone ? "; its job is gone: removed" : "");
			continue;
		}
		if (lwk_casas_is_gone(g, ids[i])) {
			lwk_casas_record_path(r, ids[i], path, sizeof(path));
			unlink(path);
			say(log, loglen, "lwk: contention-aware: job %u is gone: its dies return to the others",
			    ids[i]);
			continue;
		}
		n++;
		if (lwk_casas_probe_is_gone(r, rec)) {
			say(log, loglen, "lwk: contention-aware: job %u: its probe (process %u) is gone: no longer held",
			    rec->job, rec->prober_pid);
			rec->probing = 0;
			rec->prober_pid = 0;
			rec->prober_start = 0;
		}
		if (rec->launcher_pid && lwk_casas_proc_start(r->proc, rec->launcher_pid) != rec->launcher_start) {
			/* Its step died while starting its tasks: narrowed again below. */
			rec->launcher_pid = 0;
			rec->launcher_start = 0;
			memset(&rec->cpus, 0, sizeof(rec->cpus));
		}
		if (!strcmp(rec->status, "off"))
			continue;
		idx[nj] = n - 1;
		memset(&jobs[nj], 0, sizeof(jobs[nj]));
		jobs[nj].id = rec->job;
		jobs[nj].min_dies = (unsigned int)rec->opts.min_dies;
		jobs[nj].max_dies = (unsigned int)rec->opts.max_dies;
		jobs[nj].curve = rec->curve;
		jobs[nj].forced = (int)rec->probing;
		lwk_casas_whole_dies(t, &rec->allowed_cpus, &jobs[nj].allowed);
		jobs[nj].current = rec->dies;
		/* STP only when every job asked for it: ANTT is the fair one. */
		if (rec->opts.objective != LWK_OBJECTIVE_STP)
			objective = LWK_OBJECTIVE_ANTT;
		nj++;
	}
	if (!nj) {
		rc = 0;
		goto done;
	}
	/* A probe never takes the others' last die: its count shrinks to
	 * what leaves each of them its minimum (the probe then stops). */
	for (unsigned int k = 0; k < nj; k++) {
		unsigned int others = 0;

		if (jobs[k].forced <= 0)
			continue;
		for (unsigned int o = 0; o < nj; o++)
			if (o != k)
				others += jobs[o].forced > 0 ? (unsigned int)jobs[o].forced
							      : jobs[o].min_dies > 1 ? jobs[o].min_dies : 1;
		if ((unsigned int)jobs[k].forced + others > t->ndies)
			jobs[k].forced = others < t->ndies ? (int)(t->ndies - others) : 1;
	}
	if (lwk_casas_split(jobs, nj, t->ndies, objective, &d, err, sizeof(err))) {
		say(log, loglen, "%s", err);
		goto done;
	}
	lwk_casas_fill_idle(jobs, nj, t->ndies, &d);
	lwk_casas_place(t, jobs, nj, d.count, out);
	for (unsigned int k = 0; k < nj; k++)
		if (jobs[k].forced > 0)
			probing = true;
	if (d.method == LWK_CASAS_SPLIT)
		snprintf(line, sizeof(line), "%u job(s) on %u dies by %s: estimated ANTT %.3f, STP %.3f",
			 nj, t->ndies, objective == LWK_OBJECTIVE_STP ? "STP" : "ANTT", d.antt, d.stp);
	else
		snprintf(line, sizeof(line), "%u job(s) on %u dies: %s", nj, t->ndies, d.why);
	say(log, loglen, "lwk: contention-aware split: %s", line);
	rc = 0;
	for (unsigned int k = 0; k < nj; k++) {
		struct lwk_casas_record *rec = &recs[idx[k]];
		struct lwk_cpuset cpus, mems;
		char ds[256], cs[512], ms[128];
		bool split = lwk_cpuset_count(&out[k]) > 0;

		if (split) {
			lwk_casas_dies_cpus(t, &out[k], &cpus, &mems);
			/* While a probe runs only CPUs move: a new cpuset.mems
			 * migrates the job's memory, once per decision is enough. */
			if (probing)
				mems = lwk_cpuset_count(&rec->mems) ? rec->mems : rec->allowed_mems;
		} else {
			/* Not split (shared, or no die of its own left): back to
			 * what Slurm gave it. */
			cpus = rec->allowed_cpus;
			mems = rec->allowed_mems;
		}
		/* A cgroup not there yet (v1: Slurm makes the step's cpuset
		 * after the step starts) gets its CPUs from the record when the
		 * step's tasks start (lwk_casas_reapply): the decision stands. */
		/* A step starting its tasks keeps all of Slurm's CPUs meanwhile
		 * (lwk_casas_launch); the decision is written when it is done. */
		if (rec->launcher_pid) {
			if (lwk_casas_apply(r, rec, false, &rec->allowed_cpus, err, sizeof(err)))
				say(log, loglen, "lwk: contention-aware: job %u: %s", rec->job, err);
		} else if (!lwk_cpuset_equal(&cpus, &rec->cpus) &&
			   lwk_casas_apply(r, rec, false, &cpus, err, sizeof(err))) {
			say(log, loglen, "lwk: contention-aware: job %u: %s", rec->job, err);
			rc = -1;
		}
		rec->dies = split ? out[k] : (struct lwk_cpuset){ { 0 } };
		rec->cpus = cpus;
		rec->mems = mems;
		if (rec->probing)
			snprintf(rec->status, sizeof(rec->status), "probing");
		else if (!split)
			snprintf(rec->status, sizeof(rec->status), "shared");
		else
			snprintf(rec->status, sizeof(rec->status), "%s",
				 d.method == LWK_CASAS_SPLIT ? "placed" : "equal");
		rec->why[0] = '\0';
		if (!split || d.method != LWK_CASAS_SPLIT)
			snprintf(rec->why, sizeof(rec->why), "%s",
				 split ? d.why : d.method == LWK_CASAS_SHARED ? d.why
								      : "no whole die of its own left");
		snprintf(rec->split, sizeof(rec->split), "%s", line);
		set_text(ds, sizeof(ds), &rec->dies);
		set_text(cs, sizeof(cs), &cpus);
		set_text(ms, sizeof(ms), &mems);
		if (lwk_casas_store(r, rec, err, sizeof(err)))
			say(log, loglen, "%s", err);
		say(log, loglen, "lwk: contention-aware: job %u: %s, dies %s, CPUs %s, memory nodes %s",
		    rec->job, rec->status, ds[0] ? ds : "none", cs, ms);
	}
done:
	lwk_topology_free(t);
	free(recs);
	free(jobs);
	free(out);
	return rc;
}
