/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef LWK_SLURMCG_H
#define LWK_SLURMCG_H

#include <stddef.h>
#include <stdint.h>

/*
 * Slurm's own cgroups of a job that has ended, left behind when its
 * slurmstepd was killed (it removes them itself when it exits): on v1
 * job_<job> under uid_<n> under slurm or slurm_<node> of each controller,
 * on v2 job_<job> under slurmd's <...>slurmstepd.scope.  Each is removed,
 * deepest first, when it holds no process (rmdir refuses otherwise, so
 * nothing running is touched).  Returns how many job cgroups were
 * removed; what could not be is said in log.  For the job epilog, when
 * every step of the job on the node has ended.
 */
int lwk_slurm_job_cgroups_remove(const char *cgroup_root, uint32_t job, char *log, size_t loglen);

#endif
