/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurmstepd (remote) for --contention-aware: the job's share of a
 * co-scheduled node, by whole dies (spank/casas/).
 *
 *   init_post_opt   (root, every step)  join the node's split; the first
 *                                       step of the job here makes its
 *                                       record (what Slurm allocated)
 *   user_init       (before the fork)   SLURM_CASAS_* for the tasks
 *   task_post_fork  (root, last task)   the job's dies again on its
 *                                       cgroups (Slurm just set its own
 *                                       and bound the tasks: until then
 *                                       they have all of Slurm's CPUs);
 *                                       the first step starts the probe,
 *                                       a thread of this slurmstepd
 *   exit            (root)              stop and join the probe
 *   job epilog      (lwk_jobscript.c)   leave: the others re-planned
 *
 * The arbiter lives in the plugin: no daemon.  A step that ends while
 * its probe runs cuts the probe short; what it measured decides.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>

#include "casas/casasnode.h"
#include "node/joblive.h"
#include "node/procfs.h"
#include "lwk_plugin.h"
#include "common/topology.h"

static struct lwk_node_roots roots;
static char node[256];
static struct lwk_casas_record rec;
static bool joined, first_here, probe_started, launching;
static pthread_t probe_thread;
static volatile int stop_probe;

static void log_lines(char *log)
{
	for (char *save = NULL, *line = strtok_r(log, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		slurm_info("%s (on %s)", line, node);
}

/* The step's cgroup below the job's, as Slurm names it (task/cgroup,
 * v1 and v2): what a launch widens besides the job level. */
static const char *step_cgroup(uint32_t stepid, char *buf, size_t len)
{
	if (stepid == SLURM_BATCH_SCRIPT)
		snprintf(buf, len, "step_batch");
	else if (stepid == SLURM_INTERACTIVE_STEP)
		snprintf(buf, len, "step_interactive");
	else
		snprintf(buf, len, "step_%u", stepid);
	return buf;
}

/*
 * What Slurm allocated the job here: the only CPUs it may ever get.
 * From its abstract cores, mapped to Linux CPUs; else the cpuset Slurm
 * wrote on the job's cgroup.
 */
static int allocation(spank_t sp, struct lwk_casas_record *r, char *err, size_t errlen)
{
	char *cores = NULL;
	struct lwk_topology *t = lwk_topology_read(roots.sysfs, err, errlen);
	int rc = -1;

	if (!t)
		return -1;
	if (spank_get_item(sp, S_JOB_ALLOC_CORES, &cores) == ESPANK_SUCCESS && cores &&
	    lwk_topology_map_slurm_cores(t, LWK_SOCKET_PACKAGE, cores, &r->allowed_cpus, err,
					 errlen) == 0) {
		rc = 0;
	} else {
		struct lwk_cgroup cg;
		struct lwk_cpuset mems;

		if (lwk_cgroup_init(&cg, roots.cgroup_root, r->cgroup, err, errlen) == 0 &&
		    lwk_cgroup_get_cpuset(&cg, &r->allowed_cpus, &mems, err, errlen) == 0 &&
		    lwk_cpuset_count(&r->allowed_cpus))
			rc = 0;
	}
	/* Its memory nodes: those of its CPUs. */
	lwk_cpuset_zero(&r->allowed_mems);
	for (unsigned int i = 0; rc == 0 && i < t->ncpus; i++)
		if (lwk_cpuset_isset(&r->allowed_cpus, (unsigned int)t->cpus[i].cpu))
			lwk_cpuset_set(&r->allowed_mems, (unsigned int)t->numa[t->cpus[i].numa].node);
	lwk_topology_free(t);
	return rc;
}

void lwk_remote_casas_setup(spank_t sp, const char *step)
{
	char text[8192], err[512], log[8192] = "", stepcg[32];
	uint32_t job = 0, stepid = 0;
	int rc;

	/* The extern step (PrologFlags=contain) runs no task of the job:
	 * it would hold the job on one die for a probe that never starts. */
	if (spank_get_item(sp, S_JOB_STEPID, &stepid) == ESPANK_SUCCESS &&
	    stepid == SLURM_EXTERN_CONT)
		return;
	lwk_node_name(node, sizeof(node));
	lwk_node_roots_of(&roots, node);
	spank_get_item(sp, S_JOB_ID, &job);
	memset(&rec, 0, sizeof(rec));
	rec.job = job;
	rec.opts = lwk_req.casas;
	snprintf(rec.status, sizeof(rec.status), "probing");
	/* slurmstepd sits in the job's cgroup when Slurm made one. */
	lwk_cgroup_text_read("/proc/self/cgroup", text, sizeof(text));
	if (lwk_casas_job_cgroup(text, job, rec.cgroup, sizeof(rec.cgroup))) {
		snprintf(rec.status, sizeof(rec.status), "off");
		snprintf(rec.why, sizeof(rec.why),
			 "Slurm made no job cgroup with a cpuset on this node "
			 "(TaskPlugin=task/cgroup with ConstrainCores=yes is needed)");
	} else if (allocation(sp, &rec, err, sizeof(err))) {
		snprintf(rec.status, sizeof(rec.status), "off");
		snprintf(rec.why, sizeof(rec.why), "the job's CPUs here are unknown: %.200s", err);
	}
	rc = lwk_casas_join(&roots, &rec, lwk_job_alive, log, sizeof(log), err, sizeof(err));
	if (rc < 0) {
		slurm_error("lwk: step %s: --contention-aware: %s", step, err);
		return;
	}
	joined = true;
	first_here = rc == 1 && strcmp(rec.status, "off");
	if (!strcmp(rec.status, "refused")) {
		/* Its CPUs could not be narrowed to its share (cgroups below
		 * its own that the walk cannot take, or that are widened as
		 * fast as they are narrowed): the job's new steps fail here,
		 * the node and the other jobs' shares stay as they are. */
		snprintf(lwk_req.remote_error, sizeof(lwk_req.remote_error),
			 "lwk: --contention-aware: job %u's CPUs on %.60s could not be narrowed to its "
			 "share (%.200s): its steps are refused there", job, node, rec.why);
		slurm_error("lwk: step %s: %s", step, lwk_req.remote_error);
		log_lines(log);
		return;
	}
	/* Slurm binds each task to CPUs of the step after forking it: a
	 * cgroup narrowed to the job's dies (or to one, probing) would refuse
	 * them and the launch fail.  All of Slurm's CPUs on the job level and
	 * this step's cgroup until the last task is bound (post_fork of the
	 * last local task); the job's other steps keep their dies. */
	if (strcmp(rec.status, "off") &&
	    lwk_casas_launch(&roots, rec.job, step_cgroup(stepid, stepcg, sizeof(stepcg)), err,
			     sizeof(err)) == 0)
		launching = true;
	else if (strcmp(rec.status, "off")) {
		/* Its tasks could not be bound within narrower CPUs: the
		 * step fails with the reason, not the node. */
		snprintf(lwk_req.remote_error, sizeof(lwk_req.remote_error), "%.300s (step %.20s on %.60s)",
			 err, step, node);
		slurm_error("lwk: step %s: --contention-aware: %s", step, err);
	}
	if (rc == 1 && !strcmp(rec.status, "off"))
		slurm_info("lwk: step %s: --contention-aware is off on %s: %s", step, node, rec.why);
	log_lines(log);
}

int lwk_remote_casas_user_init(spank_t sp)
{
	char dies[512], cpus[2048], path[4200];
	struct lwk_casas_record now;

	if (!joined)
		return 0;
	if (lwk_casas_load(&roots, rec.job, &now) != 1)
		now = rec;
	lwk_cpulist_format(&now.dies, dies, sizeof(dies));
	lwk_cpulist_format(&now.cpus, cpus, sizeof(cpus));
	lwk_casas_record_path(&roots, rec.job, path, sizeof(path));
	if (spank_setenv(sp, "SLURM_CASAS_STATUS", now.status, 1) != ESPANK_SUCCESS ||
	    spank_setenv(sp, "SLURM_CASAS_DIES", dies, 1) != ESPANK_SUCCESS ||
	    spank_setenv(sp, "SLURM_CASAS_CPUS", cpus, 1) != ESPANK_SUCCESS ||
	    spank_setenv(sp, "SLURM_CASAS_RECORD", path, 1) != ESPANK_SUCCESS) {
		slurm_error("lwk: cannot set the SLURM_CASAS_* variables");
		return -1;
	}
	return 0;
}

static void *probe_main(void *arg)
{
	/* On this thread's own stack (the default size: megabytes), not
	 * static: no buffer another thread could share. */
	char log[16384];

	(void)arg;
	log[0] = '\0';
	lwk_casas_probe(&roots, rec.job, &stop_probe, lwk_job_alive, log, sizeof(log),
			log_lines);
	log_lines(log);
	return NULL;
}

int lwk_remote_casas_post_fork(spank_t sp)
{
	char err[512];
	uint32_t ntasks = 0;
	int task = -1;

	if (!joined || !strcmp(rec.status, "off"))
		return 0;
	/* slurmstepd binds task i just before this call for it, and task
	 * i+1 after it: narrow only once the last one is bound. */
	if (spank_get_item(sp, S_TASK_ID, &task) == ESPANK_SUCCESS &&
	    spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ntasks) == ESPANK_SUCCESS && task >= 0 &&
	    (uint32_t)task + 1 < ntasks)
		return 0;
	/* Slurm has just written the step's cpuset: the job's dies again. */
	launching = false;
	if (lwk_casas_reapply(&roots, rec.job, err, sizeof(err)))
		slurm_error("lwk: job %u: --contention-aware: %s (on %s)", rec.job, err, node);
	else if (err[0])
		log_lines(err);
	if (first_here && !probe_started) {
		probe_started = true;
		if (pthread_create(&probe_thread, NULL, probe_main, NULL)) {
			char log[4096] = "";

			probe_started = false;
			slurm_error("lwk: job %u: --contention-aware: cannot start the probe: the split is equal",
				    rec.job);
			/* Not held on one die for a probe that never comes. */
			lwk_casas_unhold(&roots, rec.job, lwk_job_alive, log, sizeof(log));
			log_lines(log);
		}
	}
	return 0;
}

void lwk_remote_casas_exit(void)
{
	if (launching) {
		char err[512];

		/* No task was bound (the launch failed): give the decision back. */
		launching = false;
		if (lwk_casas_reapply(&roots, rec.job, err, sizeof(err)))
			slurm_error("lwk: job %u: --contention-aware: %s (on %s)", rec.job, err, node);
		else if (err[0])
			log_lines(err);
	}
	if (!probe_started)
		return;
	stop_probe = 1;
	pthread_join(probe_thread, NULL);
	probe_started = false;
}
