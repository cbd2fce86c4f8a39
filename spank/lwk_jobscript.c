/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The job epilog on each node (S_CTX_JOB_SCRIPT, as root): stop what the
 * job started here and return it.  Runs for every job, so it must cost
 * one stat() when the job used nothing.  slurmd calls it only if the
 * plugin was in plugstack.conf when slurmd started.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lwk_plugin.h"
#include "casas/casasnode.h"
#include "node/joblive.h"
#include "lwk/part.h"
#include "node/procfs.h"
#include "node/slurmcg.h"
#include "syncmon/control.h"

static void log_lines(uint32_t job, const char *node, char *log)
{
	for (char *save = NULL, *line = strtok_r(log, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		slurm_info("lwk: job %u on %s: %s", job, node,
			   strncmp(line, "lwk: ", 5) ? line : line + 5);
}


/*
 * slurmd starts (after its own crash, or a node's): tear down the --lwk
 * partitions whose job has no slurmstepd left here.  A job still running
 * (slurmstepd outlives a slurmd restart) keeps its partition.
 */
void lwk_sweep_partitions(const char *node)
{
	struct lwk_node_roots r;
	char log[8192];
	int n;

	lwk_node_roots_of(&r, node);
	n = lwk_part_sweep(&r, lwk_job_alive, log, sizeof(log));
	if (n > 0) {
		slurm_info("lwk: tore down the --lwk partitions of %d job(s) that are gone", n);
		for (char *save = NULL, *line = strtok_r(log, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save))
			slurm_info("%s", line);
	}
}

void lwk_sweep_casas(const char *node)
{
	struct lwk_node_roots r;
	char log[8192] = "";

	lwk_node_roots_of(&r, node);
	lwk_casas_leave(&r, 0, lwk_job_alive, log, sizeof(log));
	for (char *save = NULL, *line = strtok_r(log, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		slurm_info("%s (on %s)", line, node);
}

/*
 * The job's SLUID, which names its cgroup v2 directory from 26.05 on:
 * the epilog's environment has it (_build_env in
 * src/plugins/prep/script/prep_script_slurmd.c sets SLURM_JOB_SLUID for
 * the "slurmstepd spank epilog" it runs, slurm-26-05-3-1).  NULL before
 * 26.05, or when it is not a SLUID as Slurm prints it.
 */
static const char *job_sluid(void)
{
	const char *s = getenv("SLURM_JOB_SLUID");

	return s && lwk_sluid_shaped(s, strlen(s)) ? s : NULL;
}

static double seconds_since(struct timespec *t0)
{
	struct timespec now;
	double s;

	clock_gettime(CLOCK_MONOTONIC, &now);
	s = (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
	*t0 = now;
	return s;
}

enum epilog_step { EP_TEARDOWN, EP_REPLAN, EP_SAMPLER, EP_CGROUPS, EP_STEPS };

/* An epilog that took a second or more says where the time went: a job
 * left COMPLETING for long is diagnosed from the slurmd log, step by
 * step, not guessed at. */

static void log_epilog_time(uint32_t job, const char *node, const double step[EP_STEPS])
{
	double total = 0;

	for (int i = 0; i < EP_STEPS; i++)
		total += step[i];
	if (total >= 1.0)
		slurm_info("lwk: job %u on %s: epilog took %.1f s (--lwk teardown %.1f s, "
			   "contention-aware re-plan %.1f s, sampler stop %.1f s, Slurm's cgroups %.1f s)",
			   job, node, total, step[EP_TEARDOWN], step[EP_REPLAN],
			   step[EP_SAMPLER], step[EP_CGROUPS]);
}

/* The job's --lwk partition undone, what it says logged: -1 when some
 * of it is left recorded for another try. */
static int teardown_logged(uint32_t job, const char *node)
{
	struct lwk_node_roots r;
	char plog[8192];
	int rc;

	lwk_node_roots_of(&r, node);
	rc = lwk_part_teardown(&r, job, plog, sizeof(plog));
	if (rc != 0)
		log_lines(job, node, plog);
	return rc;
}

int lwk_jobscript_epilog(spank_t sp)
{
	uint32_t job = 0;
	char node[256], log[4096];
	double step[EP_STEPS] = { 0 };
	struct timespec t0;
	int rc, torn;

	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS || !job)
		return 0;
	lwk_node_name(node, sizeof(node));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/*
	 * The epilog itself needs no word from slurmctld: slurmd runs it
	 * once no slurmstepd of the job is left here
	 * (pause_for_job_completion in _rpc_terminate_job, slurmd's req.c).
	 * The re-plan below asks about the other jobs with state here and
	 * no slurmstepd (between two steps, or killed): from a child, as
	 * this process has not loaded the client plugins an RPC needs.
	 */
	lwk_job_alive_ask_apart(20000);
	/* --lwk first: the sampler may still be on the OS cores. */
	torn = teardown_logged(job, node);
	step[EP_TEARDOWN] = seconds_since(&t0);
	{
		/* Its dies go back to the other contention-aware jobs here.
		 * Any job's epilog re-plans those still here, which also
		 * returns the dies of jobs that are gone: logged when the
		 * job had dies or gone jobs' dies returned (the latter was
		 * silent after a plain job's epilog, seen on sid); a plain
		 * job's routine re-plan is not.  The other jobs' memory
		 * follows their CPUs in a process this epilog does not wait
		 * for. */
		struct lwk_node_roots r;
		char clog[8192] = "";

		lwk_node_roots_of(&r, node);
		char why[256];

		if (lwk_casas_leave_apart(&r, job, lwk_job_alive, clog, sizeof(clog)))
			log_lines(job, node, clog);
		if (lwk_job_alive_apart_failure(why, sizeof(why)))
			slurm_error("lwk: job %u on %s: slurmctld could not be asked about the other jobs "
				    "here (%s): those without a slurmstepd here are kept", job, node, why);
		step[EP_REPLAN] = seconds_since(&t0);
	}
	rc = lwk_syncmon_stop(lwk_cfg.state_dir, node, job, 5000, log, sizeof(log));
	step[EP_SAMPLER] = seconds_since(&t0);
	if (rc < 0) {
		slurm_error("lwk: job %u on %s: cannot stop the sampler", job, node);
		log_epilog_time(job, node, step);
		return 0; /* never fail an epilog for this: the node would drain */
	}
	/* What the sampler had to say goes to the slurmd log. */
	log_lines(job, node, log);
	/* Last, when nothing of the job runs here: Slurm's own cgroups of
	 * the job that a killed slurmstepd could not remove (a few
	 * readdirs when there are none). */
	log[0] = '\0';
	if (lwk_slurm_job_cgroups_remove(lwk_cfg.cgroup_root, job, job_sluid(), log, sizeof(log)) > 0)
		slurm_info("lwk: job %u on %s: removed the empty cgroups a killed slurmstepd left", job,
			   node);
	log_lines(job, node, log);
	step[EP_CGROUPS] = seconds_since(&t0);
	/* Once more, what the teardown could not undo: the processes a
	 * killed slurmstepd left, still exiting then, have had the steps
	 * above to be gone (the slurmd log says what held them).  At most
	 * its deadline again (LWK_CLEAR_WAIT_S). */
	if (torn < 0) {
		teardown_logged(job, node);
		step[EP_TEARDOWN] += seconds_since(&t0);
	}
	log_epilog_time(job, node, step);
	return 0;
}
