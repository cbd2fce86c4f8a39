/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef LWK_JOBLIVE_H
#define LWK_JOBLIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <slurm/slurm.h>

/*
 * Is job still allocated on this host?  Yes when a slurmstepd of it runs
 * here ("slurmstepd: [<job>.<step>]", root's).  Otherwise slurmctld is
 * asked (lwk_job_allocated_here): running here and no task of it left
 * without a slurmstepd is yes; not running here, or its tasks left here
 * without a slurmstepd, is gone; no answer, or no libslurm in the
 * process to ask with, is unknown.
 */
enum { LWK_LIVE_GONE = 0, LWK_LIVE_YES = 1, LWK_LIVE_UNKNOWN = 2 };
int lwk_job_liveness(uint32_t job);

/* lwk_job_liveness() != LWK_LIVE_GONE: unknown jobs are kept. */
bool lwk_job_alive(uint32_t job);

enum {
	LWK_ALLOC_NO_API = -2,	/* libslurm's API is not loaded in this process */
	LWK_ALLOC_UNKNOWN = -1,	/* slurmctld did not answer                     */
	LWK_ALLOC_NO = 0,	/* gone, ended, completing, or not on node      */
	LWK_ALLOC_YES = 1,	/* running or suspended on node (uid: its user) */
};

/*
 * libslurm's functions as this build's slurm/slurm.h declares them (one
 * binary per Slurm release; joblive.c checks these against the
 * declarations at compile time):
 *   - hostlist_t is the struct, used by pointer, from 23.11 (a pointer
 *     typedef up to 23.02: slurm/slurm.h, slurm-23-11-0-1);
 *   - slurm_load_job takes a slurm_step_id_t by value from 26.05, a job
 *     id before (slurm/slurm.h and slurm_load_job in src/api/job_info.c,
 *     slurm-26-05-3-1; SLURM_BACKWARD_COMPAT's wrapper makes the same
 *     key: SLURM_STEP_ID_INITIALIZER with job_id set).
 * A call through the old prototype on 26.05 would hand libslurm a job id
 * where it reads a 24-byte struct: another job, or garbage.
 */
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
typedef hostlist_t *lwk_hostlist_t;
#else
typedef hostlist_t lwk_hostlist_t;
#endif
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
typedef slurm_step_id_t lwk_job_key_t;
#else
typedef uint32_t lwk_job_key_t;
#endif
/* The key slurm_load_job takes for job, and the job id of a key. */
lwk_job_key_t lwk_job_key_of(uint32_t job);
uint32_t lwk_job_key_id(lwk_job_key_t key);
/* The job id of a record slurm_load_job returned: step_id.job_id from
 * 25.11, where job_id is kept "for backwards compatibility only"
 * (slurm_job_info_t in slurm/slurm.h, slurm-25-11-0-1). */
uint32_t lwk_job_info_id(const slurm_job_info_t *j);

typedef int (*lwk_load_job_fn)(job_info_msg_t **, lwk_job_key_t, uint16_t);
typedef void (*lwk_free_job_fn)(job_info_msg_t *);
typedef lwk_hostlist_t (*lwk_hl_create_fn)(const char *);
typedef int (*lwk_hl_find_fn)(lwk_hostlist_t, const char *);
typedef void (*lwk_hl_destroy_fn)(lwk_hostlist_t);
struct lwk_slurm_api {
	lwk_load_job_fn load_job;
	lwk_free_job_fn free_job;
	lwk_hl_create_fn hl_create;
	lwk_hl_find_fn hl_find;
	lwk_hl_destroy_fn hl_destroy;
};
/* Tests only: libslurm's functions to use instead of the process's. */
extern const struct lwk_slurm_api *lwk_slurm_api_override;

/* slurmctld's word on job (one RPC, through the process's libslurm). */
int lwk_job_allocated_here(uint32_t job, const char *node, uid_t *uid);

/* For a tool: load libslurm's API from lib (slurmd's libslurmfull) and
 * initialise it (slurm.conf).  0, or -1 with why in err: it cannot, or
 * lib (symbolic links followed) or its directory is not root's only. */
int lwk_job_alive_load_slurm(const char *lib, char *err, size_t errlen);

/* From now on, in this process, ask slurmctld from a child given ms to
 * answer (0: in this process again), through libslurm's public
 * slurm_init() first.  For "slurmstepd spank epilog" (a job script
 * context), which has not loaded the client plugins an RPC needs: a
 * failure to load them ends the child, not the epilog (which would
 * drain the node), and the answer is "cannot tell". */
void lwk_job_alive_ask_apart(int ms);

/* Whether a question asked apart got no answer (after which this
 * process asks no more): -1 with why, else 0. */
int lwk_job_alive_apart_failure(char *why, size_t len);

/* lib's real path into resolved when it and its directory are root's
 * and not group- or world-writable: 0, else -1 with why in err. */
int lwk_lib_is_safe(const char *lib, char *resolved, size_t len, char *err, size_t errlen);

#endif
