/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * State shared by the SPANK glue files.  One plugin instance lives in
 * each process that loads it (srun, sbatch, salloc, slurmd, slurmstepd),
 * so these are plain globals filled in by slurm_spank_init and the
 * option callbacks.
 */
#ifndef LWK_PLUGIN_H
#define LWK_PLUGIN_H

#include <stdbool.h>
#include <slurm/spank.h>

#include "common/config.h"
#include "common/options.h"

/* What this job asked for, parsed by the option callbacks. */
struct lwk_job_request {
	bool lwk_given, syncmon_given, casas_given;
	struct lwk_opts lwk;
	struct lwk_syncmon_opts syncmon;
	struct lwk_casas_opts casas;
	/* First error met while parsing on the remote side, where a
	 * callback must not fail (that would drain the node). */
	char remote_error[512];
};

extern struct lwk_config lwk_cfg;
extern struct lwk_job_request lwk_req;

/* lwk_spank_options.c */
int lwk_options_register(spank_t sp);

/* lwk_local.c: srun (S_CTX_LOCAL), sbatch/salloc (S_CTX_ALLOCATOR) */
int lwk_local_post_opt(spank_t sp);

/* lwk_state.c: this node's name (slurmd -N, else the short host name) */
void lwk_node_name(char *buf, size_t len);

/* lwk_state.c: where the plugin's state of this node's jobs lives,
 * from the plugstack arguments (uid and gid left 0) */
struct lwk_node_roots;
void lwk_node_roots_of(struct lwk_node_roots *r, const char *node);

/* lwk_jobscript.c: prolog/epilog (S_CTX_JOB_SCRIPT) */
int lwk_jobscript_epilog(spank_t sp);
/* slurmd start: tear down the partitions of jobs that are gone */
void lwk_sweep_partitions(const char *node);

/* lwk_remote.c: slurmstepd (S_CTX_REMOTE) */
int lwk_remote_post_opt(spank_t sp);
int lwk_remote_user_init(spank_t sp);
int lwk_remote_task_init_privileged(spank_t sp);
int lwk_remote_task_init(spank_t sp);

/* lwk_remote_lwk.c: the --lwk partition in slurmstepd */
void lwk_remote_lwk_setup(spank_t sp, const char *step);
/* A step without --lwk of a job partitioned here: on the OS cores. */
void lwk_remote_lwk_attach(spank_t sp, const char *step);
/* Has the job its --lwk partition on this node? */
bool lwk_remote_lwk_partitioned(spank_t sp);
int lwk_remote_lwk_user_init(spank_t sp);
int lwk_remote_lwk_post_fork(spank_t sp);
int lwk_remote_lwk_task_init(spank_t sp);
/* The OS CPUs of the job's partition on this node, or NULL. */
const struct lwk_cpuset *lwk_remote_lwk_os_cpus(void);

/* lwk_remote_casas.c: --contention-aware in slurmstepd */
void lwk_remote_casas_setup(spank_t sp, const char *step);
int lwk_remote_casas_user_init(spank_t sp);
int lwk_remote_casas_post_fork(spank_t sp);
void lwk_remote_casas_exit(void);

/* lwk_jobscript.c: slurmd start: drop the die split records of jobs that
 * are gone and re-plan the others */
void lwk_sweep_casas(const char *node);

#endif
