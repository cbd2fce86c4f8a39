/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef LWK_SLURMCG_H
#define LWK_SLURMCG_H

#include <stddef.h>
#include <stdint.h>

/*
 * Slurm's own cgroups of a job that has ended, left behind when its
 * slurmstepd was killed (it removes them itself when it exits): on v1
 * job_<job> under uid_<n> under slurm or slurm_<node> of each controller,
 * on v2 job_<job>, or the job's SLUID (26.05's default name: sluid, from
 * SLURM_JOB_SLUID; NULL where there is none), under slurmd's
 * <...>slurmstepd.scope in its slice (system.slice, or 25.11's
 * CgroupSlice).  What the job left running in them is killed first (the
 * job has ended: its slurmstepd would have, and nobody else will; only
 * processes still in the job's cgroup are signalled, see
 * lwk_cgroup_kill_tree), then each is removed, deepest first.  Returns
 * how many job cgroups were removed; what could not be is said in log.
 * For the job epilog, when slurmctld has ended every step of the job.
 */
int lwk_slurm_job_cgroups_remove(const char *cgroup_root, uint32_t job, const char *sluid,
				 char *log, size_t loglen);

#endif
