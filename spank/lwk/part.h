/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The --lwk partition of one job on one node, backend linux: set up once
 * per job per node (whichever step comes first), used by every task of
 * the job, torn down by the job epilog or a sweep.
 *
 * Setup, under an flock on <state>/<node>/<job>/lwk.lock:
 *   1. the plan (lwk/plan.c) from the job's CPUs on the node;
 *   2. IRQ affinity moved off the App CPUs (node/irqaff.c);
 *   3. hugepages reserved on each App NUMA node for mem= (node/hugepages.c);
 *   4. the state file lwk.state, one line per thing done, written as it
 *      is done, so that a teardown after a crash undoes exactly that.
 * A failed setup undoes what it did before it returns.  A second setup
 * of the same job reads the state and does nothing else.
 *
 * Placement, of each task by slurmstepd after Slurm moved it into its
 * cgroup and set its affinity, before it execs (slurm_spank_task_post_fork),
 * by the task's role:
 *   app         (the tasks of the job's srun steps): cpus = App CPUs,
 *               mems = App NUMA nodes, an isolated remote partition
 *               where the kernel allows it (lwk/isolate.c; else a plain
 *               cpuset, said in the log and SLURM_LWK_ISOLATION);
 *   delegation  (the batch script and all it runs outside steps: the
 *               job's Linux-side helpers): cpus = OS CPUs, memory limit
 *               deleg_mem, CPU quota deleg_cpu.
 * Where Slurm made job cgroups (task/cgroup), the knobs go on Slurm's own
 * cgroup of the step (v2: job_<id>/step_<s>/user, s<SLUID>/... on
 * 26.05, the parent of the task leaves; v1: job_<id>/step_<s>), so Slurm keeps tracking, signalling and
 * removing it; the kernel then resets the tasks' affinity to the new
 * CPUs.  Where Slurm made none (proctrack/linuxproc), the plugin makes
 * /slurm-lwk/<node>/job_<id>/app and .../delegation and moves the task
 * there; the teardown kills what is left in them and removes them.
 *
 * No SPANK here: the glue passes plain values; every root path (sysfs,
 * proc, cgroupfs, state) can be redirected for tests.
 *
 * The part's files, one a role (record, state, owncgroup, charge,
 * teardown, owner, setup, place), share lwk/part_int.h, which lists them.
 */
#ifndef LWK_PART_H
#define LWK_PART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "node/cgroup.h"
#include "node/statedir.h"
#include "lwk/plan.h"
#include "common/config.h"
#include "common/options.h"
#include "common/topology.h"

/* What was set up: the state file, read back. */
struct lwk_part {
	uint32_t job;
	struct lwk_plan plan;
	char backend[16];	/* linux or mckernel */
	char mcexec[256];	/* mckernel: the proxy the tasks run */
	bool mck_booted;
	unsigned int irq_moved, irq_refused;
	char irqbalance[200];	/* setup: what irqbalance was told ("" none runs) */
	long huge_wanted[LWK_MAX_NUMA]; /* pages of plan.page_kb per node */
	long huge_added[LWK_MAX_NUMA];
	long huge_before[LWK_MAX_NUMA]; /* asked, result not recorded: the count before, else -1 */
	bool ready; /* setup finished (else a crash cut it short) */
};

enum lwk_part_role { LWK_ROLE_APP, LWK_ROLE_DELEGATION };

/*
 * Set up the partition of `job` for the plan of job_cpus on topology t.
 * 1: set up now; 0: it already was (p read from the state); -1: error
 * in err, for the user, and nothing left behind.  Refused while another
 * job is on the node (lwk_node_other_job, under the node lock); what jobs
 * alive() (lwk_job_alive in production) says are gone left is swept
 * first by sweep (lwk_sweep_gone, which reaches every part; required:
 * without it a gone job's leftovers would refuse every later job),
 * its log joined to a refusal's message.
 */
typedef void lwk_sweep_fn(const struct lwk_node_roots *r, uint32_t job, bool (*alive)(uint32_t),
			  char *log, size_t loglen);
int lwk_part_setup(const struct lwk_node_roots *r, uint32_t job, const struct lwk_topology *t,
		   const struct lwk_cpuset *job_cpus, const struct lwk_opts *o, bool whole_dies,
		   bool (*alive)(uint32_t), lwk_sweep_fn *sweep, struct lwk_part *p, char *err,
		   size_t errlen);

/* What the state directory dir of a job holds besides a setup's lock:
 * a phrase for a message ("has a --lwk partition there"), or NULL. */
const char *lwk_part_state_holds(const char *dir);

/* A finished setup of job on this node: 1 (p filled), 0 none, -1 error.
 * Later steps use it before anything else: with McKernel the App CPUs
 * are offline to Linux by then. */
int lwk_part_load(const struct lwk_node_roots *r, uint32_t job, struct lwk_part *p);

/*
 * Place process pid (a task of the job; its /proc/<pid>/cgroup text is
 * proc_cgroup) in its role.  where gets the cgroup set up (a path below
 * the cgroup root).  0 or -1 with err.
 */
int lwk_part_place(const struct lwk_node_roots *r, const struct lwk_part *p,
		   enum lwk_part_role role, const char *proc_cgroup, pid_t pid, char *where,
		   size_t wherelen, char *err, size_t errlen);

/*
 * Before the step's tasks exist (the step's slurmstepd, as the job's
 * user: reads only), from the slurmstepd's own cgroups (proc_cgroup):
 * would lwk_part_isolate refuse the step's App cgroup?  Another cgroup
 * than the job's holds App CPUs exclusively; or, with
 * lwk_isolate=partition, the kernel cannot make one or another step of
 * the job runs.  0, or -1 with the reason for the job's output.
 */
int lwk_part_isolation_refused(const struct lwk_node_roots *r, const struct lwk_part *p, int mode,
			       const char *proc_cgroup, char *err, size_t errlen);
/* The same judged for the App cgroup app of the job whose cgroup level
 * (or own cgroup) is job (isolate.c). */
int lwk_part_isolation_judge(const struct lwk_node_roots *r, const struct lwk_part *p,
			     const char *job, const char *app, int mode, char *err, size_t errlen);

/*
 * An App task, placed (its /proc/<pid>/cgroup text is proc_cgroup):
 * the App cgroup it is in made an isolated partition, lwk_part_isolate
 * below.  0, or -1 with err.
 */
int lwk_part_isolate_task(const struct lwk_node_roots *r, const struct lwk_part *p, int mode,
			  const char *proc_cgroup, char *kind, size_t kindlen, char *why,
			  size_t whylen, char *err, size_t errlen);

/* What a task in the cgroups of proc_cgroup (its /proc/self/cgroup
 * text) runs in: "partition" when its cgroup or the one above it is an
 * isolated partition (v2), else "cpuset".  Read from the kernel. */
const char *lwk_part_isolation_of(const char *cgroup_root, const char *proc_cgroup);

/*
 * The App cgroup at path (below the cgroup root; the step's cgroup that
 * holds the App tasks) made an isolated remote partition, as mode
 * (enum lwk_isolate, plugstack lwk_isolate=) allows: kind gets
 * "partition", or "cpuset" with the reason in why (the kernel cannot,
 * lwk_isolate=cpuset, another step of the job shares the App cores).
 * Under the job's lock; each write recorded in the state first
 * (lwk/isolate.c).  -1 with err when the job must fail: another cgroup
 * holds App CPUs exclusively (nothing is written), or
 * lwk_isolate=partition and no partition can be made.
 */
int lwk_part_isolate(const struct lwk_node_roots *r, const struct lwk_part *p, const char *path,
		     int mode, char *kind, size_t kindlen, char *why, size_t whylen, char *err,
		     size_t errlen);

/*
 * Can the tasks of job be placed on this node?  Judged before any task
 * exists, the way lwk_part_place will judge each task: from the cgroups
 * of the step's slurmstepd (proc_cgroup: its /proc/self/cgroup text,
 * read once Slurm put it in the step's cgroups, where its tasks go too),
 * or, with proc_cgroup NULL, from the cgroup hierarchy alone.  0, or -1
 * with the reason in err.
 */
int lwk_part_placeable(const struct lwk_node_roots *r, uint32_t job, const char *proc_cgroup,
		       char *err, size_t errlen);

/*
 * Does another job than `job` use this node?  Its trace: a state
 * directory <state_root>/<node>/<other>/ holding more than a setup's
 * lock (a partition, a sampler), a die split record
 * <state_root>/<node>/casas/<other>, or a sibling of the job's own
 * cgroup (v2 and each v1 hierarchy; on v1 also under the other uid_<n>
 * directories) that is a job's and has processes.  The job's own cgroup
 * is the one the caller (the step's slurmstepd) is in, read from
 * <proc>/self/cgroup, whatever Slurm named it.  0: none; 1: `what`
 * names the other job ("job 12 has a --lwk partition there"); 2: a trace
 * of a job alive() says is gone (what the setup's sweep of gone jobs
 * could not undo: a node problem, said in `what`).  Call it under the
 * node lock.
 */
int lwk_node_other_job(const struct lwk_node_roots *r, uint32_t job, bool (*alive)(uint32_t),
		       char *what, size_t len);

/*
 * Undo everything the state of `job` records: kill what is left in the
 * plugin's own cgroups and remove them, give back the hugepages, restore
 * the IRQs; then remove the state.  What happened, a line each, goes to
 * log.  1 torn down, 0 nothing was set up, -1 something could not be
 * undone (said in log; the state is kept for a later sweep).
 */
int lwk_part_teardown(const struct lwk_node_roots *r, uint32_t job, char *log, size_t loglen);

/*
 * Tear down the partitions of this node's jobs that have no process
 * left (alive() says false): what a killed slurmd or slurmstepd left.
 * Returns how many were torn down.
 */
int lwk_part_sweep(const struct lwk_node_roots *r, bool (*alive)(uint32_t job), char *log,
		   size_t loglen);

/*
 * mem= in the job's memory: hugepages (and McKernel's memory) are not
 * counted by the job's memory cgroup, so a job could hold them plus its
 * whole --mem.  Where Slurm limits the job's memory (its job cgroup's
 * memory.max, v1 memory.limit_in_bytes, found from a task's
 * /proc/<pid>/cgroup text), lower that limit by what was reserved, but
 * never below the delegation limit (deleg_mem): the job's helpers need
 * it.  Slurm writes its limit again as each step starts, so this runs
 * for each task after placement.  Recorded in the state before it is
 * written ("memcharge <path> <Slurm's limit> <lowered>"); the teardown
 * puts Slurm's limit back where the cgroup is still there.  0 (what:
 * what was done, empty when nothing), or -1 with err.
 */
int lwk_part_charge(const struct lwk_node_roots *r, const struct lwk_part *p,
		    const char *proc_cgroup, char *what, size_t whatlen, char *err, size_t errlen);

/* State file text <-> struct (pure; the parser is fuzzed). */
size_t lwk_part_format(const struct lwk_part *p, char *buf, size_t len);
int lwk_part_parse(const char *text, struct lwk_part *p, char *err, size_t errlen);

/* The SLURM_LWK_* variables for the tasks, "NAME=value\n" each. */
size_t lwk_part_env(const struct lwk_part *p, enum lwk_part_role role, const char *isolation,
		    char *buf, size_t len);

#endif
