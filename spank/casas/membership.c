/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --contention-aware: a job on the node.  It joins (a record, a first
 * re-plan), a step of it launches its tasks (all of Slurm's CPUs
 * meanwhile) and reapplies its dies, it leaves (the others re-planned).
 */
#define _GNU_SOURCE
#include "casas/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

int lwk_casas_join(const struct lwk_node_roots *r, struct lwk_casas_record *rec,
		   bool (*alive)(uint32_t), char *log, size_t loglen, char *err, size_t errlen)
{
	struct lwk_casas_record have;
	struct gone_jobs gone;
	uint32_t lwk_owner = 0;
	int nfd, rc;

	if (lwk_casas_make_dirs(r, err, errlen))
		return -1;
	lwk_casas_find_gone(r, alive, 0, &gone);
	{
		/* Another live job's --lwk partition owns the node's CPUs
		 * and IRQs: no die split next to it.  Asked before the node
		 * lock, as liveness may ask slurmctld; one set up meanwhile
		 * sees this job's record under the lock and refuses. */
		uint32_t ids[256];
		int n = lwk_state_jobs(r->state_root, r->node, ids, 256);

		for (int i = 0; i < n && !lwk_owner; i++) {
			char st[4200];

			snprintf(st, sizeof(st), "%s/%s/%u/lwk.state", r->state_root, r->node, ids[i]);
			if (ids[i] != rec->job && access(st, F_OK) == 0 && alive(ids[i]))
				lwk_owner = ids[i];
		}
	}
	nfd = lwk_node_lock(r->state_root);
	if (nfd < 0)
		return ERR("lwk: cannot take the node lock in %s: %s", r->state_root, strerror(errno));
	rc = lwk_casas_load(r, rec->job, &have);
	if (rc == 1) {
		*rec = have;
		/* Its probe is gone (its first step ended or was killed
		 * without probing), or it was refused: re-plan now (a
		 * refusal may have been a passing one). */
		if (lwk_casas_probe_is_gone(r, &have) || !strcmp(have.status, "refused")) {
			lwk_casas_replan_locked(r, &gone, log, loglen);
			lwk_casas_load(r, rec->job, rec);
			close(nfd);
			lwk_casas_bind_memory(r, log, loglen);
			return 0;
		}
		close(nfd);
		return 0;
	}
	if (strcmp(rec->status, "off") && lwk_owner) {
		snprintf(rec->status, sizeof(rec->status), "off");
		snprintf(rec->why, sizeof(rec->why), "job %u has a --lwk partition on this node",
			 lwk_owner);
	}
	if (strcmp(rec->status, "off")) {
		/* Held on one die for its first probe window, by this
		 * process (the step's slurmstepd, whose thread probes). */
		snprintf(rec->status, sizeof(rec->status), "probing");
		rec->probing = 1;
		rec->prober_pid = (unsigned int)getpid();
		rec->prober_start = lwk_casas_proc_start(r->proc, rec->prober_pid);
	}
	if (lwk_casas_store(r, rec, err, errlen)) {
		close(nfd);
		return -1;
	}
	lwk_casas_replan_locked(r, &gone, log, loglen);
	lwk_casas_load(r, rec->job, rec);
	close(nfd);
	lwk_casas_bind_memory(r, log, loglen);
	return 1;
}

/* This process's launch in rec: its index, or -1. */
static int own_launch(const struct lwk_node_roots *r, const struct lwk_casas_record *rec)
{
	unsigned int me = (unsigned int)getpid();

	for (unsigned int i = 0; i < rec->nlaunchers; i++)
		if (rec->launchers[i].pid == me &&
		    rec->launchers[i].start == lwk_casas_proc_start(r->proc, me))
			return (int)i;
	return -1;
}

static void drop_launch(struct lwk_casas_record *rec, unsigned int i)
{
	rec->launchers[i] = rec->launchers[--rec->nlaunchers];
}

/* The CPUs of the decision where this step's launch is over: its own
 * step while other steps still launch (they keep theirs and the job
 * level wide), else the whole tree.  The caller holds the node lock. */
static int narrow_after_launch(const struct lwk_node_roots *r, const struct lwk_casas_record *rec,
			       const char *step, double *failed_at, char *log, size_t loglen,
			       char *err, size_t errlen)
{
	if (!strcmp(rec->status, "off") || !lwk_cpuset_count(&rec->cpus) ||
	    !lwk_casas_cgroup_made(r, rec))
		return 0;
	/* A few tries, as a re-plan makes them: Slurm removes a finished
	 * step's cgroup whenever it likes. */
	for (int attempt = 0, last = 3;; attempt++) {
		struct timespec ms20 = { 0, 20 * 1000 * 1000 };
		int rc = rec->nlaunchers ? step[0] ? lwk_casas_narrow_step(r, rec, step, err, errlen) : 0
					 : lwk_casas_apply(r, rec, false, &rec->cpus, err, errlen);

		if (rc && attempt == 0)
			*failed_at = lwk_cgroup_clock();
		/* A user who can write the tree (v1) loses that, once. */
		if (rc && attempt == last && last == 3 &&
		    lwk_casas_take_back(r, rec, *failed_at + LWK_CASAS_TAKE_BACK_S, log, loglen))
			last += 2;
		if (!rc || attempt == last)
			return rc;
		nanosleep(&ms20, NULL);
	}
}

int lwk_casas_reapply(const struct lwk_node_roots *r, uint32_t job, char *err, size_t errlen)
{
	struct lwk_casas_record rec = { 0 };
	char step[32] = "", log[2048] = "";
	int nfd = lwk_node_lock(r->state_root), rc = 0, mine;
	double failed_at = 0;

	err[0] = '\0';
	if (nfd < 0)
		return ERR("lwk: cannot take the node lock in %s: %s", r->state_root, strerror(errno));
	if (lwk_casas_load(r, job, &rec) == 1 && (mine = own_launch(r, &rec)) >= 0) {
		char e2[512];

		/* This step's tasks are bound: the decision may narrow them. */
		snprintf(step, sizeof(step), "%s", rec.launchers[mine].step);
		drop_launch(&rec, (unsigned int)mine);
		lwk_casas_drop_gone_launchers(r, &rec);
		if (lwk_casas_store(r, &rec, e2, sizeof(e2)))
			rc = ERR("%s", e2);
	}
	if (rc == 0 &&
	    (rc = narrow_after_launch(r, &rec, step, &failed_at, log, sizeof(log), err, errlen))) {
		/* The step's tasks run on all of Slurm's CPUs: refused as a
		 * re-plan refuses it, and its CPUs forgotten, so that the next
		 * re-plan writes them again. */
		char e2[512];

		lwk_casas_refuse(r, &rec, err, failed_at + LWK_CASAS_STOP_S, log, sizeof(log));
		memset(&rec.cpus, 0, sizeof(rec.cpus));
		if (lwk_casas_store(r, &rec, e2, sizeof(e2)))
			say(log, sizeof(log), "%s", e2);
		snprintf(err, errlen, "%s", log);
	} else if (rc == 0 && log[0]) {
		snprintf(err, errlen, "%s", log); /* its tree taken back: said */
	}
	close(nfd);
	if (rc == 0 && lwk_cpuset_count(&rec.mems) && strcmp(rec.status, "off") &&
	    lwk_casas_cgroup_made(r, &rec)) {
		/* Under the memory lock, with the record as it is now: a
		 * lwk_casas_bind_memory meanwhile may have written a newer
		 * decision. */
		int mfd = lwk_casas_mems_lock(r);

		if (mfd < 0)
			return ERR("lwk: cannot take the memory lock of job %u: %s", job,
				   strerror(errno));
		if (lwk_casas_load(r, job, &rec) == 1 && strcmp(rec.status, "off") &&
		    lwk_cpuset_count(&rec.mems))
			rc = lwk_casas_apply(r, &rec, true, &rec.mems, err, errlen);
		close(mfd);
	}
	return rc;
}

int lwk_casas_launch(const struct lwk_node_roots *r, uint32_t job, const char *step, char *err,
		     size_t errlen)
{
	struct lwk_casas_record rec;
	int nfd = lwk_node_lock(r->state_root), rc = 0, mine;

	if (nfd < 0)
		return ERR("lwk: cannot take the node lock in %s: %s", r->state_root, strerror(errno));
	if (lwk_casas_load(r, job, &rec) == 1 && strcmp(rec.status, "off")) {
		struct lwk_casas_launcher me = { (unsigned int)getpid(), 0, "" };

		me.start = lwk_casas_proc_start(r->proc, me.pid);
		snprintf(me.step, sizeof(me.step), "%s", step && lwk_casas_step_name_ok(step) ? step : "");
		lwk_casas_drop_gone_launchers(r, &rec);
		if ((mine = own_launch(r, &rec)) >= 0)
			rec.launchers[mine] = me;
		else if (rec.nlaunchers < LWK_CASAS_MAX_LAUNCHERS)
			rec.launchers[rec.nlaunchers++] = me;
		else
			rc = ERR("lwk: --contention-aware: job %u has %u steps starting their tasks on "
				 "this node at once, the most it can follow", job, rec.nlaunchers);
		if (rc == 0)
			rc = lwk_casas_store(r, &rec, err, errlen);
		if (rc == 0 && lwk_casas_apply_launching(r, &rec, &rec.cpus, err, errlen))
			rc = -1;
	}
	close(nfd);
	return rc;
}

/*
 * Memory follows the CPUs in a process of its own, which nothing waits
 * for: a cpuset.mems write migrates a job's memory and waits for every
 * CPU (25 to 98 s measured on the TCG guests beside busy jobs), and a
 * job's epilog must not wait for other jobs' memory (past
 * PrologEpilogTimeout Slurm drains the node).  The .mems.lock keeps the
 * writers in order; what it would have logged goes to syslog.  Here,
 * when it cannot fork.
 */
static void bind_apart(const struct lwk_node_roots *r)
{
	char path[4200], mine[4096] = "";
	int pending, mems;

	/* One binder waits at a time: it reads every record once it has
	 * the memory lock, so a second waiting one would add nothing. */
	lwk_casas_dir(r, path, sizeof(path));
	strncat(path, "/.mems.pending", sizeof(path) - strlen(path) - 1);
	pending = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (pending < 0 || flock(pending, LOCK_EX | LOCK_NB))
		return;
	mems = lwk_casas_mems_lock(r);
	close(pending); /* a later decision gets a binder of its own */
	if (mems < 0)
		return;
	close(mems); /* bind_memory takes it itself: a second flock of this
		      * process's would wait for this one */
	lwk_casas_bind_memory(r, mine, sizeof(mine));
	if (mine[0]) {
		openlog("slurm-lwk", LOG_PID, LOG_DAEMON);
		syslog(LOG_WARNING, "%s", mine);
	}
}

static void bind_memory_apart(const struct lwk_node_roots *r, char *log, size_t loglen)
{
	pid_t child = fork();

	if (child < 0) {
		lwk_casas_bind_memory(r, log, loglen);
		return;
	}
	if (child == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		pid_t grandchild;

		if (null < 0) {
			/* Nothing to put on 0 to 2: bound here, the caller
			 * waits (its fds stay its own). */
			bind_apart(r);
			_exit(0);
		}
		setsid();
		grandchild = fork();
		if (grandchild > 0)
			_exit(0);
		/* None of the caller's fds (slurmd's sockets at its start,
		 * the epilog's pipes); without a second fork the binding
		 * happens here, and the caller waits for it. */
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		closefrom(3);
		bind_apart(r);
		_exit(0);
	}
	while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
		;
}

static int leave(const struct lwk_node_roots *r, uint32_t job, bool (*alive)(uint32_t), char *log,
		 size_t loglen, bool memory_apart)
{
	char path[4200], dir[4096];
	struct gone_jobs gone;
	struct stat st;
	int nfd, had = 0;

	lwk_casas_dir(r, dir, sizeof(dir));
	if (lstat(dir, &st))
		return 0; /* no contention-aware job ever ran here: one stat */
	lwk_casas_find_gone(r, alive, job, &gone);
	nfd = lwk_node_lock(r->state_root);
	if (nfd < 0)
		return 0;
	if (job) {
		lwk_casas_record_path(r, job, path, sizeof(path));
		had = unlink(path) == 0;
		if (had)
			say(log, loglen, "lwk: contention-aware: job %u left: re-planning the others", job);
	}
	lwk_casas_replan_locked(r, &gone, log, loglen);
	close(nfd);
	if (memory_apart)
		bind_memory_apart(r, log, loglen);
	else
		lwk_casas_bind_memory(r, log, loglen);
	/* Worth a log line: this job left, or gone jobs' dies returned. */
	return had || gone.n > 0;
}

int lwk_casas_leave(const struct lwk_node_roots *r, uint32_t job, bool (*alive)(uint32_t),
		    char *log, size_t loglen)
{
	return leave(r, job, alive, log, loglen, false);
}

int lwk_casas_leave_apart(const struct lwk_node_roots *r, uint32_t job, bool (*alive)(uint32_t),
			  char *log, size_t loglen)
{
	return leave(r, job, alive, log, loglen, true);
}
