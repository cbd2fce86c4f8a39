/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * casas-internal: what the files of spank/casas/ share among themselves;
 * nothing outside casas/ includes it (the glue and the others use
 * casas/casasnode.h).  The files, each over the ones before it:
 *   record.c      the record: its text (pure), its file, the list of jobs
 *   liveness.c    what is gone: a process, a probe, a recorded job
 *   apply.c       the job's cgroup: where it is, its CPUs and memory nodes
 *   replan.c      the node's re-plan, under the node lock
 *   membership.c  a job joins, launches a step, reapplies, leaves
 *   probe.c       the probe and its hold on the job's dies
 */
#ifndef LWK_CASAS_INTERNAL_H
#define LWK_CASAS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "casas/casasnode.h"

/* An error into err (errlen bytes, both in scope): the value -1. */
#define ERR(...) (snprintf(err, errlen, __VA_ARGS__), -1)

#define say lwk_log_append

/* ---- record.c */

/* <state_root>/<node>/casas */
void lwk_casas_dir(const struct lwk_node_roots *r, char *buf, size_t len);

/* Make <state_root>/<node>/casas (root's, 0755).  0 or -1 with err. */
int lwk_casas_make_dirs(const struct lwk_node_roots *r, char *err, size_t errlen);

/* Write rec's record whole or not at all.  0 or -1 with err. */
int lwk_casas_store(const struct lwk_node_roots *r, const struct lwk_casas_record *rec,
		    char *err, size_t errlen);

/* The jobs with a record here, at most max, by job id. */
int lwk_casas_record_jobs(const struct lwk_node_roots *r, uint32_t *jobs, int max);

/* ---- liveness.c */

/* The start time of process pid in <proc>/<pid>/stat: 0 when gone. */
unsigned long long lwk_casas_proc_start(const char *proc, unsigned int pid);

/* The probe holding rec has ended without giving the hold back. */
bool lwk_casas_probe_is_gone(const struct lwk_node_roots *r, const struct lwk_casas_record *rec);

/*
 * Which recorded jobs are gone, decided before the node lock is taken:
 * alive() may ask slurmctld (up to MessageTimeout each when it is down),
 * and --lwk setups, joins, reapplies and epilogs on the node wait for
 * that lock.  A record written meanwhile is not in the list: alive.
 */
struct gone_jobs {
	int n;
	uint32_t ids[LWK_CASAS_MAX_JOBS];
};

/* Drop from rec the launches whose process is gone (a step killed while
 * it started its tasks).  How many. */
unsigned int lwk_casas_drop_gone_launchers(const struct lwk_node_roots *r,
					   struct lwk_casas_record *rec);

void lwk_casas_find_gone(const struct lwk_node_roots *r, bool (*alive)(uint32_t), uint32_t leaving,
			 struct gone_jobs *g);
bool lwk_casas_is_gone(const struct gone_jobs *g, uint32_t job);

/* ---- apply.c */

/* The job's CPUs (mems false) or memory nodes on its cgroup tree.  0 or
 * -1 with err. */
int lwk_casas_apply(const struct lwk_node_roots *r, const struct lwk_casas_record *rec, bool mems,
		    const struct lwk_cpuset *set, char *err, size_t errlen);

/* Has Slurm made the job's cpuset cgroup yet (v1 makes it as the first
 * step starts)?  true also when it cannot tell (the write will say). */
bool lwk_casas_cgroup_made(const struct lwk_node_roots *r, const struct lwk_casas_record *rec);

/* Steps of the job start their tasks (rec->launchers): all of Slurm's
 * CPUs (rec->allowed_cpus) on the job's cgroup and on each launching
 * step's tree, the job's other steps others (the decision; NULL or
 * empty: left as they are); the whole tree when a launcher's step is
 * not known.  0 or -1 with err. */
int lwk_casas_apply_launching(const struct lwk_node_roots *r, const struct lwk_casas_record *rec,
			      const struct lwk_cpuset *others, char *err, size_t errlen);

/* A step whose tasks are bound while others still start theirs: its
 * tree gets the decision (rec->cpus).  0 or -1 with err. */
int lwk_casas_narrow_step(const struct lwk_node_roots *r, const struct lwk_casas_record *rec,
			  const char *step, char *err, size_t errlen);

/* From a job's first failed narrowing on: the take-back and the tries
 * after it end within LWK_CASAS_TAKE_BACK_S, the refusal's kill within
 * LWK_CASAS_STOP_S (at least one round of it, 1 s at most), all under
 * the node lock. */
#define LWK_CASAS_TAKE_BACK_S 2.0
#define LWK_CASAS_STOP_S 4.0

/* On cgroup v1, where Slurm 22.05 gives the job's user the step's
 * directories, a job whose CPUs could not be narrowed: its cgroup tree
 * made root's and the cgroups its user made in it removed
 * (lwk_cgroup_take_back), so that its user can no longer undo the next
 * write or move a process back in.  true when anything changed (then
 * try again).  The caller holds the node lock. */
bool lwk_casas_take_back(const struct lwk_node_roots *r, const struct lwk_casas_record *rec,
			 double deadline, char *log, size_t loglen);

/* A job whose CPUs could not be narrowed to its share (rec): its record
 * says refused and why (err), and when its user is the cause (a cgroup
 * below its own that Slurm does not make, on v1 one the take-back could
 * not remove) its processes are
 * killed but slurmstepd, which then ends the job.  The caller holds the
 * node lock and stores the record. */
void lwk_casas_refuse(const struct lwk_node_roots *r, struct lwk_casas_record *rec,
		      const char *err, double deadline, char *log, size_t loglen);

/* Take <casas dir>/.mems.lock, held by every cpuset.mems write.  The fd,
 * or -1. */
int lwk_casas_mems_lock(const struct lwk_node_roots *r);

/* Each job's cgroup gets the memory nodes its record has now, under the
 * .mems.lock; called after the node lock is released. */
void lwk_casas_bind_memory(const struct lwk_node_roots *r, char *log, size_t loglen);

/* ---- replan.c */

/* The split of every contention-aware job on the node; the caller holds
 * the node lock.  Gone jobs (g, found before the lock) are dropped
 * first.  0, or -1: out of memory, no topology or no split, or a job's
 * CPUs not written (the others still are). */
int lwk_casas_replan_locked(const struct lwk_node_roots *r, const struct gone_jobs *g, char *log,
			    size_t loglen);

#endif
