/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurmstepd (remote) for --lwk: the partition of the job on this node.
 *
 *   init_post_opt   (root, every step)  set it up once per job per node
 *                                       (lwk/setup.c, under the job's lock)
 *   user_init       (before the fork)   SLURM_LWK_* for the tasks
 *   task_post_fork  (root, per task)    the task's cgroup by its role
 *   job epilog      (lwk_jobscript.c)   teardown
 *
 * A setup the job made impossible (os= too big, mem= too large, another
 * job on the node) fails the job through its tasks, with the message in
 * the job's output, not the node (lwk_remote.c, on_error).  So does a
 * placement the node cannot make (no cgroup hierarchy; Slurm's cgroups
 * without a cpuset), found before the tasks exist: a task_post_fork
 * failure of the batch step would be a failed batch launch, which Slurm
 * answers by draining the node.
 */
#define _GNU_SOURCE /* sched_setaffinity, CPU_ALLOC */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "node/joblive.h"
#include "node/procfs.h"
#include "lwk_plugin.h"
#include "lwk/bind.h"
#include "lwk/part.h"
#include "sweep/gone.h"
#include "common/topology.h"

static struct lwk_part part;
/* attached: a step without --lwk of a job that has its partition here. */
static bool part_ready, attached;
static char node[256];

static void roots(spank_t sp, struct lwk_node_roots *r)
{
	lwk_node_name(node, sizeof(node));
	lwk_node_roots_of(r, node);
	spank_get_item(sp, S_JOB_UID, &r->uid);
	spank_get_item(sp, S_JOB_GID, &r->gid);
}

const struct lwk_cpuset *lwk_remote_lwk_os_cpus(void)
{
	return part_ready ? &part.plan.os_cpus : NULL;
}

/* The batch script is a Linux-side helper; with McKernel, every task is
 * (an mcexec or what the script runs). */
static enum lwk_part_role role_of(spank_t sp)
{
	uint32_t step = 0;

	spank_get_item(sp, S_JOB_STEPID, &step);
	/* salloc's shell (the interactive step) is a helper too, and so is
	 * a step attached without --lwk. */
	return attached || step == SLURM_BATCH_SCRIPT || step == SLURM_INTERACTIVE_STEP ||
			       !strcmp(part.backend, "mckernel")
		       ? LWK_ROLE_DELEGATION
		       : LWK_ROLE_APP;
}

/*
 * The partition moves the node's IRQs and takes its hugepages (or boots
 * McKernel on it): only a job that has the whole node may (the site's
 * job_submit.lua gives --lwk jobs whole nodes; a job submitted around it
 * is refused here).  Its memory stays within what Slurm gave the job on
 * the node, when Slurm counts memory.
 */
static int whole_node_and_memory(const struct lwk_topology *t, const struct lwk_cpuset *cpus,
				 uint64_t mem_mb, struct lwk_opts *o, char *err, size_t errlen)
{
	struct lwk_cpuset all;
	char have[1024], node_cpus[1024];

	lwk_cpuset_zero(&all);
	for (unsigned i = 0; i < t->ncpus; i++)
		lwk_cpuset_set(&all, (unsigned)t->cpus[i].cpu);
	if (!lwk_cpuset_equal(&all, cpus)) {
		lwk_cpulist_format(cpus, have, sizeof(have));
		lwk_cpulist_format(&all, node_cpus, sizeof(node_cpus));
		snprintf(err, errlen, "lwk: --lwk needs whole nodes: the job has CPUs %.100s of %.100s here; "
			 "submit with --exclusive", have, node_cpus);
		return -1;
	}
	if (mem_mb && o->mem > (mem_mb << 20)) {
		snprintf(err, errlen, "lwk: --lwk: mem=%lluM is more than the job's memory here "
			 "(%lluM); ask for less (mem=) or more (--mem)",
			 (unsigned long long)(o->mem >> 20), (unsigned long long)mem_mb);
		return -1;
	}
	if (mem_mb && o->deleg_mem > (mem_mb << 20))
		o->deleg_mem = mem_mb << 20; /* never a limit above the job's own */
	return 0;
}

void lwk_remote_lwk_setup(spank_t sp, const char *step)
{
	struct lwk_node_roots r;
	struct lwk_topology *t;
	struct lwk_cpuset cpus;
	char err[512], *cores = NULL, app[1024], os[1024], mems[256], hp[512], boot[2560];
	uint32_t job = 0;
	uint64_t mem_mb = 0;
	struct lwk_opts o = lwk_req.lwk;
	int rc;

	roots(sp, &r);
	spank_get_item(sp, S_JOB_ID, &job);
	/* A later step: the partition is there (and with McKernel its CPUs
	 * are no longer Linux's, so the map below would fail). */
	rc = lwk_part_load(&r, job, &part);
	if (rc == 1) {
		part_ready = true;
		return;
	}
	/* No cgroup hierarchy to place the tasks in: said before anything
	 * is set up. */
	if (lwk_part_placeable(&r, job, NULL, err, sizeof(err))) {
		snprintf(lwk_req.remote_error, sizeof(lwk_req.remote_error), "%s", err);
		return;
	}
	if (spank_get_item(sp, S_JOB_ALLOC_CORES, &cores) != ESPANK_SUCCESS || !cores) {
		snprintf(lwk_req.remote_error, sizeof(lwk_req.remote_error),
			 "lwk: --lwk: Slurm gave no cores of job %u on %s", job, node);
		return;
	}
	t = lwk_topology_read(r.sysfs, err, sizeof(err));
	if (!t) {
		snprintf(lwk_req.remote_error, sizeof(lwk_req.remote_error), "%s", err);
		return;
	}
	spank_get_item(sp, S_JOB_ALLOC_MEM, &mem_mb);
	if (lwk_topology_map_slurm_cores(t, LWK_SOCKET_PACKAGE, cores, &cpus, err, sizeof(err)))
		rc = -1;
	else if (whole_node_and_memory(t, &cpus, mem_mb, &o, err, sizeof(err)))
		rc = -1;
	else
		rc = lwk_part_setup(&r, job, t, &cpus, &o, lwk_cfg.lwk_whole_dies, lwk_job_alive,
				    lwk_sweep_gone, &part, err, sizeof(err));
	lwk_topology_free(t);
	if (rc < 0) {
		snprintf(lwk_req.remote_error, sizeof(lwk_req.remote_error), "%.400s (on %.100s)", err, node);
		return;
	}
	part_ready = true;
	if (rc == 0)
		return; /* an earlier step of the job set it up */
	lwk_cpulist_format(&part.plan.app_cpus, app, sizeof(app));
	lwk_cpulist_format(&part.plan.os_cpus, os, sizeof(os));
	lwk_cpulist_format(&part.plan.app_nodes, mems, sizeof(mems));
	hp[0] = '\0';
	for (int n = 0; n < LWK_MAX_NUMA; n++)
		if (part.huge_wanted[n])
			snprintf(hp + strlen(hp), sizeof(hp) - strlen(hp), ", node %d: %ld of %ld hugepages",
				 n, part.huge_added[n], part.huge_wanted[n]);
	lwk_plan_boot_note(&part.plan, boot, sizeof(boot));
	if (!strcmp(part.backend, "mckernel"))
		slurm_info("lwk: step %s: partition on %s: McKernel booted on App CPUs %s, OS CPUs %s, "
			   "memory nodes %s%s", step, node, app, os, mems, boot);
	else
		slurm_info("lwk: step %s: partition on %s: App CPUs %s, OS CPUs %s, memory nodes %s, "
			   "%u IRQs moved off (%u refused)%s%s%s",
			   step, node, app, os, mems, part.irq_moved, part.irq_refused, part.irqbalance, hp,
			   boot);
}

/*
 * A step of the job launched without --lwk (srun --overlap --jobid from
 * a login node, a step whose environment lost the option) on a node
 * where the job has its partition: its tasks are helpers, in the
 * delegation cgroup on the OS cores, never on the App cores, and the
 * partition stays as it is.  Elsewhere, and for jobs without a
 * partition, nothing (one failed open).
 */
void lwk_remote_lwk_attach(spank_t sp, const char *step)
{
	struct lwk_node_roots r;
	uint32_t job = 0, stepid = 0;

	spank_get_item(sp, S_JOB_STEPID, &stepid);
	if (stepid == SLURM_EXTERN_CONT || spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS)
		return;
	roots(sp, &r);
	if (lwk_part_load(&r, job, &part) != 1)
		return;
	part_ready = attached = true;
	slurm_info("lwk: step %s: no --lwk: its tasks run with job %u's helpers on the OS CPUs of %s",
		   step, job, node);
}

/* Does the job have its --lwk partition on this node?  A step of it
 * with --contention-aware is refused there: the split would rewrite the
 * cpusets of the job's whole cgroup tree, the partition's too. */
bool lwk_remote_lwk_partitioned(spank_t sp)
{
	struct lwk_node_roots r;
	char dir[4200];
	const char *holds;
	uint32_t job = 0;

	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS)
		return false;
	roots(sp, &r);
	/* Ready, or being set up by another step (its state file is
	 * there before it is ready). */
	snprintf(dir, sizeof(dir), "%s/%s/%u", r.state_root, r.node, job);
	holds = lwk_part_state_holds(dir);
	return lwk_part_load(&r, job, &part) != 0 ||
	       (holds && !strcmp(holds, "has a --lwk partition there"));
}

int lwk_remote_lwk_user_init(spank_t sp)
{
	struct lwk_node_roots r;
	char env[8192], text[8192], err[512];

	if (!part_ready)
		return 0;
	/* slurmstepd is in the step's cgroups by now (task/cgroup made them
	 * just before), as its tasks will be: judge the placement here, so
	 * that a refusal reaches each task's stderr (task_init_privileged)
	 * rather than failing the launch. */
	roots(sp, &r);
	lwk_cgroup_text_read("/proc/self/cgroup", text, sizeof(text));
	if (lwk_part_placeable(&r, part.job, text, err, sizeof(err)) ||
	    (role_of(sp) == LWK_ROLE_APP &&
	     lwk_part_isolation_refused(&r, &part, lwk_cfg.lwk_isolate, text, err, sizeof(err)))) {
		snprintf(lwk_req.remote_error, sizeof(lwk_req.remote_error), "%s", err);
		slurm_error("lwk: job %u: %s", part.job, err);
		return 0;
	}
	lwk_part_env(&part, role_of(sp), NULL, env, sizeof(env));
	for (char *save = NULL, *line = strtok_r(env, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');

		if (!eq)
			continue;
		*eq = '\0';
		if (spank_setenv(sp, line, eq + 1, 1) != ESPANK_SUCCESS) {
			slurm_error("lwk: cannot set %s", line);
			return -1;
		}
	}
	return 0;
}

/*
 * In each App task, as the user, just before it execs (slurmstepd placed
 * it in task_post_fork first): which isolation its App cores got, as the
 * kernel shows it.
 */
int lwk_remote_lwk_task_init(spank_t sp)
{
	char text[8192];

	if (!part_ready || role_of(sp) != LWK_ROLE_APP)
		return 0;
	lwk_cgroup_text_read("/proc/self/cgroup", text, sizeof(text));
	if (spank_setenv(sp, "SLURM_LWK_ISOLATION",
			 lwk_part_isolation_of(lwk_cfg.cgroup_root, text), 1) != ESPANK_SUCCESS) {
		slurm_error("lwk: cannot set SLURM_LWK_ISOLATION");
		return -1;
	}
	return 0;
}

/* A task's CPU affinity (what Slurm's task/affinity bound it to) into
 * mask; all CPUs when it cannot be read. */
static void affinity_of(pid_t pid, struct lwk_cpuset *mask)
{
	size_t size = CPU_ALLOC_SIZE(LWK_MAX_CPUS);
	cpu_set_t *set = CPU_ALLOC(LWK_MAX_CPUS);

	lwk_cpuset_zero(mask);
	if (!set || sched_getaffinity(pid, size, set)) {
		for (unsigned int c = 0; c < LWK_MAX_CPUS; c++)
			lwk_cpuset_set(mask, c);
	} else {
		for (unsigned int c = 0; c < LWK_MAX_CPUS; c++)
			if (CPU_ISSET_S(c, size, set))
				lwk_cpuset_set(mask, c);
	}
	if (set)
		CPU_FREE(set);
}

static int set_affinity(pid_t pid, const struct lwk_cpuset *mask)
{
	size_t size = CPU_ALLOC_SIZE(LWK_MAX_CPUS);
	cpu_set_t *set = CPU_ALLOC(LWK_MAX_CPUS);
	int rc;

	if (!set)
		return -1;
	CPU_ZERO_S(size, set);
	for (int c = lwk_cpuset_first(mask); c >= 0; c = lwk_cpuset_next(mask, c))
		CPU_SET_S((unsigned int)c, size, set);
	rc = sched_setaffinity(pid, size, set);
	CPU_FREE(set);
	return rc;
}

/* The step's tasks as slurmstepd forks and binds them, placed together
 * once the last one is bound (post_fork).  Only this process's main
 * thread calls post_fork. */
struct forked_task {
	pid_t pid;
	uint32_t task;
	struct lwk_cpuset mask; /* Slurm's binding */
};
static struct forked_task *forked;
static uint32_t nforked;

/* Task's cgroup by role, its App partition, mem= charged.  A refusal
 * kills the task (-1). */
static int place_task(const struct lwk_node_roots *r, enum lwk_part_role role, uint32_t task,
		      pid_t pid)
{
	char path[64], text[8192], err[512], where[800];

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	lwk_cgroup_text_read(path, text, sizeof(text));
	slurm_debug("lwk: task %u (pid %d) is in %s", task, (int)pid, text);
	if (lwk_part_place(r, &part, role, text, pid, where, sizeof(where), err, sizeof(err))) {
		/* What the job or the site's configuration makes impossible
		 * was refused before the fork (user_init); what is left is a
		 * cgroup write refused, which the job's user can cause (v1
		 * cpusets of their own below the step's, past what the walk
		 * takes).  The task, not yet past Slurm's release, is killed:
		 * the job fails, and the node, which a failed batch step
		 * would drain, stays. */
		slurm_error("lwk: task %u (pid %d): %s: the task is killed", task, (int)pid, err);
		kill(pid, SIGKILL);
		return -1;
	}
	if (task == 0)
		slurm_info("lwk: job %u: %s tasks placed in cgroup %s on %s", part.job,
			   role == LWK_ROLE_APP ? "App" : "delegation", where, node);
	if (role == LWK_ROLE_APP && strcmp(part.backend, "mckernel")) {
		char kind[16], why[600];

		/* What the job or the site makes impossible was refused in
		 * user_init; what is left is a race with another step, or
		 * the kernel's refusal under lwk_isolate=partition. */
		if (lwk_part_isolate_task(r, &part, lwk_cfg.lwk_isolate, text, kind, sizeof(kind), why,
					  sizeof(why), err, sizeof(err))) {
			/* As for the placement above: the job fails, the node
			 * stays. */
			slurm_error("lwk: task %u (pid %d): %s: the task is killed", task, (int)pid, err);
			kill(pid, SIGKILL);
			return -1;
		}
		if (task == 0)
			slurm_info("lwk: job %u: App cores on %s: isolation %s%s%s%s", part.job, node,
				   kind, why[0] ? " (" : "", why, why[0] ? ")" : "");
	}
	/* mem= counts in the job's memory, after Slurm set its limit for
	 * this step.  A failure is said, never the task's: it would drain
	 * the node in the batch step. */
	if (lwk_part_charge(r, &part, text, where, sizeof(where), err, sizeof(err)))
		slurm_error("lwk: job %u: %s", part.job, err);
	else if (where[0])
		slurm_info("lwk: job %u: %s", part.job, where);
	return 0;
}

/* Slurm's binding of the placed tasks carried onto their side of the
 * partition (lwk/bind.h): the placement left a task bound to CPUs of
 * the other side with all of its side's, next to tasks bound to one
 * CPU each.  Said for the tasks whose CPUs changed sides. */
static void carry_binding(enum lwk_part_role role, const bool *placed)
{
	const struct lwk_cpuset *side = role == LWK_ROLE_APP ? &part.plan.app_cpus : &part.plan.os_cpus;
	struct lwk_cpuset *masks = calloc(nforked, sizeof(*masks));
	struct lwk_cpuset *out = calloc(nforked, sizeof(*out));
	char from[256], to[256];

	/* A task killed in its placement binds nothing: an empty mask
	 * counts no CPU as used. */
	for (uint32_t i = 0; masks && out && i < nforked; i++)
		if (placed[i])
			masks[i] = forked[i].mask;
	if (masks && out)
		lwk_bind_carry(side, masks, nforked, out);
	for (uint32_t i = 0; masks && out && i < nforked; i++) {
		struct lwk_cpuset now, kept = forked[i].mask;

		if (!placed[i])
			continue;
		affinity_of(forked[i].pid, &now);
		if (lwk_cpuset_equal(&now, &out[i]))
			continue;
		if (set_affinity(forked[i].pid, &out[i])) {
			slurm_error("lwk: job %u: task %u (pid %d): cannot bind it to its CPUs: %m", part.job,
				    forked[i].task, (int)forked[i].pid);
			continue;
		}
		lwk_cpuset_and(&kept, side);
		if (!lwk_cpuset_count(&kept)) {
			lwk_cpulist_format(&forked[i].mask, from, sizeof(from));
			lwk_cpulist_format(&out[i], to, sizeof(to));
			slurm_info("lwk: job %u: task %u: Slurm bound it to CPUs %s, of the %s side: bound "
				   "to %s CPUs %s instead", part.job, forked[i].task, from,
				   role == LWK_ROLE_APP ? "OS" : "App", role == LWK_ROLE_APP ? "App" : "OS", to);
		}
	}
	free(masks);
	free(out);
}

int lwk_remote_lwk_post_fork(spank_t sp)
{
	struct lwk_node_roots r;
	pid_t pid = 0;
	uint32_t task = 0, step = 0, ntasks = 0;
	enum lwk_part_role role;
	bool *placed;

	spank_get_item(sp, S_JOB_STEPID, &step);
	/* The extern step's one process (PrologFlags=Contain) is Slurm's
	 * sleep, no task of the job's. */
	if (!part_ready || step == SLURM_EXTERN_CONT)
		return 0;
	roots(sp, &r);
	/* The task's pid is what a refusal below kills: never 0 (kill(0)
	 * would signal slurmstepd's own process group). */
	if (spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS || pid <= 0) {
		slurm_error("lwk: job %u: slurmstepd gave no task pid: the task is not placed",
			    part.job);
		return -1;
	}
	spank_get_item(sp, S_TASK_ID, &task);
	spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ntasks);
	role = role_of(sp);
	/*
	 * slurmstepd binds task i (task/affinity) just before this call for
	 * it, and task i+1 after it, within the CPUs of the step's cgroup
	 * at that time: a cgroup narrowed to one side of the partition now
	 * would refuse the binding of a later task to a CPU of the other
	 * side ("task_g_set_affinity: Invalid argument", the launch fails).
	 * The tasks wait for slurmstepd's go until the last one is forked:
	 * they are placed together, after the last one is bound.
	 */
	if (!forked && ntasks >= 1)
		forked = calloc(ntasks, sizeof(*forked));
	if (!forked || nforked >= ntasks) {
		/* No room to wait (or no task count): placed now. */
		place_task(&r, role, task, pid);
		return 0;
	}
	forked[nforked].pid = pid;
	forked[nforked].task = task;
	affinity_of(pid, &forked[nforked].mask);
	nforked++;
	if (task + 1 < ntasks)
		return 0;
	placed = calloc(nforked, sizeof(*placed));
	for (uint32_t i = 0; i < nforked; i++)
		if (place_task(&r, role, forked[i].task, forked[i].pid) == 0 && placed)
			placed[i] = true;
	if (placed)
		carry_binding(role, placed);
	free(placed);
	free(forked);
	forked = NULL;
	nforked = 0;
	return 0;
}
