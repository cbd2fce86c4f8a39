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
#include <time.h>
#include <unistd.h>

static void set_text(char *out, size_t len, const struct lwk_cpuset *s)
{
	if (lwk_cpulist_format(s, out, len) >= len && len > 4)
		strcpy(out + len - 4, "...");
}

/*
 * A re-plan's work, on the stack of lwk_casas_replan_locked: the records
 * read (recs[0..n)), the jobs of them given to the arbiter (jobs[k] is
 * recs[idx[k]]; a job that is off is not one), its decision and the dies
 * placed for each job (out[k]).  Every step below runs with the node
 * lock held by lwk_casas_replan_locked's caller.
 */
struct plan {
	const struct lwk_node_roots *r;
	char *log;
	size_t loglen;
	struct lwk_topology *t;
	struct lwk_casas_record *recs;
	struct lwk_casas_job *jobs;
	struct lwk_cpuset *out;
	int idx[LWK_CASAS_MAX_JOBS], n;
	unsigned int nj;
	enum lwk_objective objective;
	struct lwk_casas_decision d;
	bool probing;		/* a job is held for its probe, or waits for it */
	unsigned long long now;	/* seconds since the epoch */
	double failed_at;	/* when the job being written first failed to narrow */
	char err[512], line[512]; /* line: the decision, for the log and each record */
};

/* Read job id's record into rec: false when it is not kept, for it is
 * unreadable or its job gone (then the file is removed).  The caller
 * holds the node lock. */
static bool read_record(struct plan *p, const struct gone_jobs *g, uint32_t id,
			struct lwk_casas_record *rec)
{
	char path[4200];

	if (lwk_casas_load(p->r, id, rec) != 1) {
		/* Root writes records whole (rename): only a damaged
		 * disk or a hand gets here.  Kept while its job runs. */
		bool gone = lwk_casas_is_gone(g, id);

		if (gone) {
			lwk_casas_record_path(p->r, id, path, sizeof(path));
			unlink(path);
		}
		say(p->log, p->loglen, "lwk: contention-aware: the record of job %u is unreadable%s", id,
		    gone ? "; its job is gone: removed" : "");
		return false;
	}
	if (lwk_casas_is_gone(g, id)) {
		lwk_casas_record_path(p->r, id, path, sizeof(path));
		unlink(path);
		say(p->log, p->loglen, "lwk: contention-aware: job %u is gone: its dies return to the others",
		    id);
		return false;
	}
	return true;
}

/* A probe or a launch whose process is gone holds rec no longer.  The
 * caller holds the node lock. */
static void forget_gone_processes(struct plan *p, struct lwk_casas_record *rec)
{
	if (lwk_casas_probe_is_gone(p->r, rec)) {
		say(p->log, p->loglen, "lwk: contention-aware: job %u: its probe (process %u) is gone: no longer held",
		    rec->job, rec->prober_pid);
		rec->probing = 0;
		rec->prober_pid = 0;
		rec->prober_start = 0;
		rec->ticket = 0;
	}
	if (lwk_casas_drop_gone_launchers(p->r, rec) && !rec->nlaunchers)
		/* Its steps died while starting their tasks: narrowed again
		 * below. */
		memset(&rec->cpus, 0, sizeof(rec->cpus));
}

/* Job id's record into the plan, and its job to the arbiter unless it
 * is off.  The caller holds the node lock. */
static void take_record(struct plan *p, const struct gone_jobs *g, uint32_t id)
{
	struct lwk_casas_record *rec = &p->recs[p->n];
	struct lwk_casas_job *job = &p->jobs[p->nj];

	if (!read_record(p, g, id, rec))
		return;
	p->n++;
	forget_gone_processes(p, rec);
	if (!strcmp(rec->status, "off"))
		return;
	/* A probe to come (a job let go while it waits for its turn): no
	 * memory moves yet, as while one runs. */
	if (rec->prober_pid)
		p->probing = true;
	p->idx[p->nj] = p->n - 1;
	memset(job, 0, sizeof(*job));
	job->id = rec->job;
	job->min_dies = (unsigned int)rec->opts.min_dies;
	job->max_dies = (unsigned int)rec->opts.max_dies;
	job->curve = rec->curve;
	job->forced = (int)rec->probing;
	lwk_casas_whole_dies(p->t, &rec->allowed_cpus, &job->allowed);
	job->current = rec->dies;
	/* STP only when every job asked for it: ANTT is the fair one. */
	if (rec->opts.objective != LWK_OBJECTIVE_STP)
		p->objective = LWK_OBJECTIVE_ANTT;
	p->nj++;
}

/* A probe never takes the others' last die: its count shrinks to
 * what leaves each of them its minimum (the probe then stops).  The
 * caller holds the node lock. */
static void spare_the_others(struct plan *p)
{
	struct lwk_casas_job *jobs = p->jobs;
	unsigned int nj = p->nj, ndies = p->t->ndies;

	for (unsigned int k = 0; k < nj; k++) {
		unsigned int others = 0;

		if (jobs[k].forced <= 0)
			continue;
		for (unsigned int o = 0; o < nj; o++)
			if (o != k)
				others += jobs[o].forced > 0 ? (unsigned int)jobs[o].forced
							      : jobs[o].min_dies > 1 ? jobs[o].min_dies : 1;
		if ((unsigned int)jobs[k].forced + others > ndies)
			jobs[k].forced = others < ndies ? (int)(ndies - others) : 1;
	}
}

/* The arbiter's split, placed on dies, and its line logged: 0, or -1
 * (logged) when it made none.  The caller holds the node lock. */
static int decide(struct plan *p)
{
	unsigned int nj = p->nj, ndies = p->t->ndies;

	if (lwk_casas_split(p->jobs, nj, ndies, p->objective, &p->d, p->err, sizeof(p->err))) {
		say(p->log, p->loglen, "%s", p->err);
		return -1;
	}
	lwk_casas_fill_idle(p->jobs, nj, ndies, &p->d);
	lwk_casas_place(p->t, p->jobs, nj, p->d.count, p->out);
	for (unsigned int k = 0; k < nj; k++)
		if (p->jobs[k].forced > 0)
			p->probing = true;
	if (p->d.method == LWK_CASAS_SPLIT)
		snprintf(p->line, sizeof(p->line), "%u job(s) on %u dies by %s: estimated ANTT %.3f, STP %.3f",
			 nj, ndies, p->objective == LWK_OBJECTIVE_STP ? "STP" : "ANTT", p->d.antt,
			 p->d.stp);
	else
		snprintf(p->line, sizeof(p->line), "%u job(s) on %u dies: %s", nj, ndies, p->d.why);
	say(p->log, p->loglen, "lwk: contention-aware split: %s", p->line);
	return 0;
}

/* The CPUs and memory nodes the decision gives job k (rec): its dies'
 * when it has dies of its own (true), else what Slurm gave it.  Its
 * memory held back from its dies is timed in rec->mems_held.  The
 * caller holds the node lock. */
static bool job_sets(const struct plan *p, unsigned int k, struct lwk_casas_record *rec,
		     struct lwk_cpuset *cpus, struct lwk_cpuset *mems)
{
	bool split = lwk_cpuset_count(&p->out[k]) > 0;
	unsigned long long since = rec->mems_held ? rec->mems_held : p->now;

	rec->mems_held = 0;
	if (split) {
		struct lwk_cpuset have = lwk_cpuset_count(&rec->mems) ? rec->mems : rec->allowed_mems;

		lwk_casas_dies_cpus(p->t, &p->out[k], cpus, mems);
		/* While a probe runs or waits only CPUs move: a new
		 * cpuset.mems migrates the job's memory, once per decision
		 * is enough.  Not for long, though: jobs arriving one after
		 * another to probe would keep it behind for ever. */
		if (p->probing && !lwk_cpuset_equal(&have, mems) &&
		    p->now < since + LWK_CASAS_MEMS_HELD_MAX_S) {
			*mems = have;
			rec->mems_held = since;
		}
	} else {
		/* Not split (shared, or no die of its own left): back to
		 * what Slurm gave it. */
		*cpus = rec->allowed_cpus;
		*mems = rec->allowed_mems;
	}
	return split;
}

/* The decision's words in rec: its status, why, and the node's line.
 * The caller holds the node lock. */
static void note_decision(const struct plan *p, struct lwk_casas_record *rec, bool split)
{
	const struct lwk_casas_decision *d = &p->d;

	if (rec->probing)
		snprintf(rec->status, sizeof(rec->status), "probing");
	else if (!split)
		snprintf(rec->status, sizeof(rec->status), "shared");
	else
		snprintf(rec->status, sizeof(rec->status), "%s",
			 d->method == LWK_CASAS_SPLIT ? "placed" : "equal");
	rec->why[0] = '\0';
	if (!split || d->method != LWK_CASAS_SPLIT)
		snprintf(rec->why, sizeof(rec->why), "%s",
			 split ? d->why : d->method == LWK_CASAS_SHARED ? d->why
								: "no whole die of its own left");
	snprintf(rec->split, sizeof(rec->split), "%s", p->line);
}

/* The job's CPUs on its cgroup tree, tried again a few times: Slurm
 * makes a step's cgroup with the job's whole allocation as a step
 * starts, which a write of the tree meanwhile can meet. */
static int apply_cpus(struct plan *p, const struct lwk_casas_record *rec,
		      const struct lwk_cpuset *cpus)
{
	/* Not made yet (v1: Slurm makes the job's cpuset as its first step
	 * starts): nothing to write, the step's reapply writes the decision
	 * then.  Not a refusal. */
	if (!lwk_casas_cgroup_made(p->r, rec))
		return 0;
	for (int attempt = 0, last = 3;; attempt++) {
		struct timespec ms20 = { 0, 20 * 1000 * 1000 };

		if (!lwk_casas_apply(p->r, rec, false, cpus, p->err, sizeof(p->err)))
			return 0;
		if (attempt == 0)
			p->failed_at = lwk_cgroup_clock();
		/* A user who can write the tree (v1) loses that, once. */
		if (attempt == last && last == 3 &&
		    lwk_casas_take_back(p->r, rec, p->failed_at + LWK_CASAS_TAKE_BACK_S, p->log,
					p->loglen))
			last += 2;
		if (attempt == last)
			return -1;
		nanosleep(&ms20, NULL);
	}
}

/* Job k's share written: its cgroup's CPUs where they changed, then its
 * record.  0, or -1 when its CPUs could not be written.  The caller
 * holds the node lock. */
static int write_job(struct plan *p, unsigned int k)
{
	struct lwk_casas_record *rec = &p->recs[p->idx[k]];
	struct lwk_cpuset cpus, mems;
	char ds[256], cs[512], ms[128];
	bool split = job_sets(p, k, rec, &cpus, &mems);
	int rc = 0;

	/* A cgroup not there yet (v1: Slurm makes the step's cpuset
	 * after the step starts) gets its CPUs from the record when the
	 * step's tasks start (lwk_casas_reapply): the decision stands. */
	/* A step starting its tasks keeps all of Slurm's CPUs meanwhile
	 * (lwk_casas_launch), and so does the job level; the job's other
	 * steps get the decision now, the launching ones once their tasks
	 * are bound. */
	if (rec->nlaunchers) {
		if (lwk_casas_apply_launching(p->r, rec, &cpus, p->err, sizeof(p->err)))
			say(p->log, p->loglen, "lwk: contention-aware: job %u: %s", rec->job, p->err);
	} else if (!lwk_cpuset_equal(&cpus, &rec->cpus) && apply_cpus(p, rec, &cpus)) {
		/* Its CPUs could not be narrowed to its share: its record
		 * keeps what was last written and says why, its next steps
		 * are refused, its running ones stopped where its user is the
		 * cause; the node and the other jobs' shares stay as they
		 * are. */
		char why[512];

		snprintf(why, sizeof(why), "%s", p->err);
		lwk_casas_refuse(p->r, rec, why, p->failed_at + LWK_CASAS_STOP_S, p->log, p->loglen);
		if (lwk_casas_store(p->r, rec, p->err, sizeof(p->err)))
			say(p->log, p->loglen, "%s", p->err);
		return -1;
	}
	rec->dies = split ? p->out[k] : (struct lwk_cpuset){ { 0 } };
	rec->cpus = cpus;
	rec->mems = mems;
	note_decision(p, rec, split);
	set_text(ds, sizeof(ds), &rec->dies);
	set_text(cs, sizeof(cs), &cpus);
	set_text(ms, sizeof(ms), &mems);
	if (lwk_casas_store(p->r, rec, p->err, sizeof(p->err)))
		say(p->log, p->loglen, "%s", p->err);
	say(p->log, p->loglen, "lwk: contention-aware: job %u: %s, dies %s, CPUs %s, memory nodes %s",
	    rec->job, rec->status, ds[0] ? ds : "none", cs, ms);
	return rc;
}

/*
 * The split of every contention-aware job on the node, under the node
 * lock (the caller's).  Gone jobs (found before the lock) are dropped
 * first.  Each job's record gets its dies; its cgroup's CPUs are
 * rewritten where they changed.
 */
int lwk_casas_replan_locked(const struct lwk_node_roots *r, const struct gone_jobs *g, char *log,
			    size_t loglen)
{
	uint32_t ids[LWK_CASAS_MAX_JOBS];
	struct plan p = { .r = r, .log = log, .loglen = loglen, .objective = LWK_OBJECTIVE_STP,
			  .now = (unsigned long long)time(NULL) };
	int rc = -1;
	int nids = lwk_casas_record_jobs(r, ids, LWK_CASAS_MAX_JOBS);

	if (!nids)
		return 0;
	p.recs = calloc((size_t)nids, sizeof(*p.recs));
	p.jobs = calloc((size_t)nids, sizeof(*p.jobs));
	p.out = calloc((size_t)nids, sizeof(*p.out));
	if (!p.recs || !p.jobs || !p.out)
		goto done;
	p.t = lwk_topology_read(r->sysfs, p.err, sizeof(p.err));
	if (!p.t) {
		say(log, loglen, "lwk: contention-aware: %s", p.err);
		goto done;
	}
	for (int i = 0; i < nids; i++)
		take_record(&p, g, ids[i]);
	if (!p.nj) {
		rc = 0;
		goto done;
	}
	spare_the_others(&p);
	if (decide(&p))
		goto done;
	rc = 0;
	for (unsigned int k = 0; k < p.nj; k++)
		if (write_job(&p, k))
			rc = -1;
done:
	lwk_topology_free(p.t);
	free(p.recs);
	free(p.jobs);
	free(p.out);
	return rc;
}
