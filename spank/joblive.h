/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef LWK_JOBLIVE_H
#define LWK_JOBLIVE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Is job still allocated on this host?  Yes when a slurmstepd of it runs
 * here ("slurmstepd: [<job>.<step>]", root's).  Otherwise slurmctld is
 * asked (lwk_job_allocated_here): running here and no task of it left
 * without a slurmstepd, or no answer, is yes; no libslurm in the
 * process is no (the slurmstepd alone decides, as before).
 */
bool lwk_job_alive(uint32_t job);

enum {
	LWK_ALLOC_NO_API = -2,	/* libslurm's API is not loaded in this process */
	LWK_ALLOC_UNKNOWN = -1,	/* slurmctld did not answer                     */
	LWK_ALLOC_NO = 0,	/* gone, ended, completing, or not on node      */
	LWK_ALLOC_YES = 1,	/* running or suspended on node (uid: its user) */
};

/* slurmctld's word on job (one RPC, through the process's libslurm). */
int lwk_job_allocated_here(uint32_t job, const char *node, uid_t *uid);

/* For a tool: load libslurm's API from lib (slurmd's libslurmfull) and
 * initialise it (slurm.conf).  0, or -1 when it cannot. */
int lwk_job_alive_load_slurm(const char *lib);

#endif
