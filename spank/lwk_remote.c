/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurmstepd (remote).  The option callbacks have run with the values
 * from the job; this file reports what each node received, exports it
 * to the tasks, and decides how a bad value fails: by the job's tasks
 * (on_error=fail_job, the default) or by slurmstepd's init, which Slurm
 * answers by draining the node (on_error=drain_node).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <slurm/slurm.h>

#include "lwk_plugin.h"
#include "node/procfs.h"
#include "syncmon/control.h"
#include "common/kv.h"
#include "common/topology.h"

struct exported {
	const char *env;
	const char *option;
	const struct lwk_option_grammar *g;
	const void *opts;
	const bool *given;
};

static const struct exported exports[] = {
	{ "SLURM_LWK_REQUEST", "lwk", &lwk_grammar_lwk, &lwk_req.lwk, &lwk_req.lwk_given },
	{ "SLURM_SYNC_MONITOR_REQUEST", "sync-monitor", &lwk_grammar_syncmon,
	  &lwk_req.syncmon, &lwk_req.syncmon_given },
	{ "SLURM_CASAS_REQUEST", "contention-aware", &lwk_grammar_casas,
	  &lwk_req.casas, &lwk_req.casas_given },
};

static void step_name(spank_t sp, char *buf, size_t len)
{
	uint32_t job = 0, step = 0;

	spank_get_item(sp, S_JOB_ID, &job);
	spank_get_item(sp, S_JOB_STEPID, &step);
	if (step == SLURM_BATCH_SCRIPT)
		snprintf(buf, len, "%u.batch", job);
	else if (step == SLURM_EXTERN_CONT)
		snprintf(buf, len, "%u.extern", job);
	else
		snprintf(buf, len, "%u.%u", job, step);
}

/* The job's environment is the user's: keep its text out of our logs
 * unless it is printable. */
static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/*
 * The Linux CPUs of the job on this node, from Slurm's abstract cores,
 * so the sampler's own cost stays inside the job's allocation.  Empty
 * when they do not map (a node whose declared topology differs from the
 * hardware, as on the dev cluster): the sampler then runs unpinned.
 */
static void job_cpus(spank_t sp, char *buf, size_t len)
{
	char *cores = NULL, err[256];
	struct lwk_topology *t;
	struct lwk_cpuset cpus;

	buf[0] = '\0';
	if (spank_get_item(sp, S_JOB_ALLOC_CORES, &cores) != ESPANK_SUCCESS || !cores)
		return;
	t = lwk_topology_read("/sys", err, sizeof(err));
	if (!t)
		return;
	if (lwk_topology_map_slurm_cores(t, LWK_SOCKET_PACKAGE, cores, &cpus, err, sizeof(err)) == 0 &&
	    lwk_cpulist_format(&cpus, buf, len) >= len)
		buf[0] = '\0';
	else if (buf[0] == '\0')
		slurm_verbose("lwk: sampler not pinned: %s", err);
	lwk_topology_free(t);
}

/*
 * A buffer= that does not fit the site's bound on the sampler's memory
 * (plugstack syncmon_memory=) fails the job's tasks with the numbers:
 * the user's value, not the node, is what is wrong.  true when refused.
 */
static bool syncmon_buffer_refused(const char *step)
{
	char want[32], cap[32], room[32], node[256];
	uint64_t left = lwk_cfg.syncmon_memory - LWK_SYNCMON_OWN_BYTES;

	if (lwk_req.syncmon.buffer <= left)
		return false;
	lwk_node_name(node, sizeof(node));
	lwk_format_size(lwk_req.syncmon.buffer, want, sizeof(want));
	lwk_format_size(lwk_cfg.syncmon_memory, cap, sizeof(cap));
	lwk_format_size(left, room, sizeof(room));
	snprintf(lwk_req.remote_error, sizeof(lwk_req.remote_error),
		 "lwk: --sync-monitor: buffer=%s does not fit this site's sampler memory "
		 "(plugstack.conf syncmon_memory=%s, of which its own tables take %llu MiB): "
		 "buffer must be at most %s (step %.20s on %.40s)",
		 want, cap, (unsigned long long)(LWK_SYNCMON_OWN_BYTES >> 20), room, step, node);
	slurm_error("%s", lwk_req.remote_error);
	return true;
}

/*
 * --sync-monitor: the job's first step on this node starts the sampler;
 * later steps find it running (its lock) and do nothing.  A sampler that
 * cannot start is the job's problem, not the node's: log it, go on; but
 * a source the user insisted on (source=bpf) that cannot work here fails
 * the job's tasks with the reason.
 */
static void start_sampler(spank_t sp, const char *step)
{
	struct lwk_syncmon_start a = { 0 };
	char node[256], submit[4096], dir[5200], options[2048], err[512], cg[4096], cgtext[8192];
	char cpus[4096];
	struct timespec t0, t1;
	uint32_t job = 0;
	int rc;

	spank_get_item(sp, S_JOB_ID, &job);
	spank_get_item(sp, S_JOB_UID, &a.uid);
	spank_get_item(sp, S_JOB_GID, &a.gid);
	lwk_node_name(node, sizeof(node));
	if (lwk_req.syncmon.dir[0] == '/') {
		snprintf(dir, sizeof(dir), "%s", lwk_req.syncmon.dir);
	} else if (spank_getenv(sp, "SLURM_SUBMIT_DIR", submit, sizeof(submit)) == ESPANK_SUCCESS &&
		   submit[0] == '/' && !has_control(submit)) {
		if (lwk_req.syncmon.dir[0])
			snprintf(dir, sizeof(dir), "%s/%s", submit, lwk_req.syncmon.dir);
		else
			snprintf(dir, sizeof(dir), "%s", submit);
	} else {
		slurm_error("lwk: step %s: --sync-monitor: no submit directory to write to; "
			    "give dir=/absolute/path", step);
		return;
	}
	if (lwk_option_format(&lwk_grammar_syncmon, &lwk_req.syncmon, options, sizeof(options)) >=
	    sizeof(options)) {
		slurm_error("lwk: step %s: --sync-monitor: the options do not fit", step);
		return;
	}
	/* slurmstepd sits in the job's cgroup when Slurm made one. */
	lwk_cgroup_text_read("/proc/self/cgroup", cgtext, sizeof(cgtext));
	a.cgroup = lwk_job_cgroup(cgtext, job, lwk_cfg.cgroup_root, cg, sizeof(cg)) == 0 ? cg : NULL;
	a.program = lwk_cfg.syncmon;
	a.state_root = lwk_cfg.state_dir;
	a.node = node;
	a.job = job;
	a.dir = dir;
	a.options = options;
	a.must_open = lwk_req.syncmon.source == LWK_SOURCE_BPF;
	a.cgroup_root = lwk_cfg.cgroup_root;
	a.memory_max = lwk_cfg.syncmon_memory;
	a.cpu_max = lwk_cfg.syncmon_cpu;
	/* An --lwk job's sampler is one of its Linux-side helpers: on the
	 * OS cores, off the App cores. */
	if (lwk_remote_lwk_os_cpus() &&
	    lwk_cpulist_format(lwk_remote_lwk_os_cpus(), cpus, sizeof(cpus)) >= sizeof(cpus))
		cpus[0] = '\0';
	else if (!lwk_remote_lwk_os_cpus())
		job_cpus(sp, cpus, sizeof(cpus));
	a.cpus = cpus[0] ? cpus : NULL;
	/* A real-time sampler preempts whatever runs on its CPUs: only an
	 * --lwk job's, pinned to that job's OS cores on a node the policy
	 * gave it whole.  Another job's allocation may share cores
	 * (OverSubscribe), be split (--contention-aware) or not map to
	 * CPUs at all (unpinned). */
	a.fifo = lwk_remote_lwk_os_cpus() && a.cpus ? (unsigned)lwk_cfg.syncmon_fifo : 0;
	if (lwk_cfg.syncmon_fifo && !a.fifo)
		slurm_info("lwk: step %s: syncmon_fifo=%u is for an --lwk job's sampler, on its own OS "
			   "cores: this one stays in the normal class", step,
			   (unsigned)lwk_cfg.syncmon_fifo);
	/* What the sampler adds to the step's start, for bench/srun-latency:
	 * the step waits for it here, on each node. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = lwk_syncmon_start(&a, err, sizeof(err));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rc == -2)
		snprintf(lwk_req.remote_error, sizeof(lwk_req.remote_error),
			 "%.400s (step %.20s on %.40s)", err, step, node);
	if (rc < 0)
		slurm_error("lwk: step %s: --sync-monitor: %s", step, err);
	else if (rc > 0)
		slurm_info("lwk: step %s: started the sampler on %s in %.1f ms, writing to %s%s%s%s%s",
			   step, node,
			   (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
			   dir, a.cgroup ? ", job cgroup " : "", a.cgroup ? a.cgroup : "",
			   a.cpus ? ", on CPUs " : ", unpinned", a.cpus ? a.cpus : "");
}

int lwk_remote_post_opt(spank_t sp)
{
	char step[64], err[512];

	step_name(sp, step, sizeof(step));
	if (!lwk_req.remote_error[0] &&
	    lwk_options_combination_check(lwk_req.lwk_given, lwk_req.syncmon_given,
					  lwk_req.casas_given, err, sizeof(err)))
		snprintf(lwk_req.remote_error, sizeof(lwk_req.remote_error), "%s", err);
	if (lwk_req.remote_error[0]) {
		char v[8];
		/* slurmd merged the user's login environment into the job's
		 * (sbatch --get-user-env, --export=NONE), after job_submit
		 * judged the job: the value may come from the user's profile. */
		bool login_env = spank_getenv(sp, "SLURM_GET_USER_ENV", v, sizeof(v)) == ESPANK_SUCCESS;

		slurm_error("lwk: step %s: refusing the job's options: %s", step,
			    lwk_req.remote_error);
		return lwk_config_refusal_rc(&lwk_cfg, login_env);
	}
	for (size_t i = 0; i < sizeof(exports) / sizeof(exports[0]); i++) {
		char buf[16384];

		if (!*exports[i].given)
			continue;
		lwk_option_format(exports[i].g, exports[i].opts, buf, sizeof(buf));
		slurm_info("lwk: step %s: --%s %s", step, exports[i].option, buf);
	}
	/* A buffer= the site's sampler cannot hold fails the step before
	 * anything is set up for it (a partition, a hold in the split). */
	if (lwk_req.syncmon_given && syncmon_buffer_refused(step))
		return 0;
	if (lwk_req.lwk_given) {
		lwk_remote_lwk_setup(sp, step);
	} else if (!lwk_req.casas_given) {
		lwk_remote_lwk_attach(sp, step);
	} else if (lwk_remote_lwk_partitioned(sp)) {
		char node[256];
		uint32_t job = 0;

		/* srun --overlap --jobid goes around the submit policy. */
		spank_get_item(sp, S_JOB_ID, &job);
		lwk_node_name(node, sizeof(node));
		snprintf(lwk_req.remote_error, sizeof(lwk_req.remote_error),
			 "lwk: --contention-aware: job %u has an --lwk partition on %.100s: its steps "
			 "cannot join the contention-aware split (without the option a step runs on its "
			 "OS cores)", job, node);
	}
	if (lwk_req.remote_error[0]) {
		/* A setup refused (another job on the node, the node's own
		 * problem): the job fails, on_error is for refused option
		 * values only; a drained node would not tell the user why. */
		slurm_error("lwk: step %s: %s", step, lwk_req.remote_error);
		return 0;
	}
	if (lwk_req.casas_given)
		lwk_remote_casas_setup(sp, step);
	if (lwk_req.syncmon_given && !lwk_req.remote_error[0])
		start_sampler(sp, step);
	return 0;
}

int lwk_remote_user_init(spank_t sp)
{
	if (lwk_req.remote_error[0])
		return 0;
	for (size_t i = 0; i < sizeof(exports) / sizeof(exports[0]); i++) {
		char buf[16384];
		spank_err_t rc;

		if (!*exports[i].given)
			continue;
		if (lwk_option_format(exports[i].g, exports[i].opts, buf, sizeof(buf)) >= sizeof(buf)) {
			slurm_error("lwk: %s does not fit in %zu bytes", exports[i].env, sizeof(buf));
			return -1; /* a cut value would mean something else */
		}
		rc = spank_setenv(sp, exports[i].env, buf, 1);
		if (rc != ESPANK_SUCCESS) {
			slurm_error("lwk: cannot set %s: %s", exports[i].env, spank_strerror(rc));
			return -1;
		}
	}
	if (lwk_req.casas_given && lwk_remote_casas_user_init(sp))
		return -1;
	/* Also for a step attached without --lwk. */
	return lwk_remote_lwk_user_init(sp);
}

int lwk_remote_task_init_privileged(spank_t sp)
{
	(void)sp;
	if (!lwk_req.remote_error[0])
		return 0;
	/* The task's stderr is the job's: this is where the user looks. */
	fprintf(stderr, "%s\n", lwk_req.remote_error);
	return -1;
}

int lwk_remote_task_init(spank_t sp)
{
	if (lwk_req.remote_error[0])
		return 0;
	return lwk_remote_lwk_task_init(sp);
}
