/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm-lwk: the SPANK entry points.  Each switches on where it runs
 * and hands off to the file for that context:
 *
 *   sbatch, salloc (allocator) and srun (local)  -> lwk_local.c
 *   slurmstepd (remote)                          -> lwk_remote.c
 *
 * Everything that decides lives in modules that know nothing of SPANK
 * (options.c, config.c, topology.c).  Only a negative return is a
 * failure for Slurm.
 */
#include <slurm/spank.h>

#include "lwk_plugin.h"

SPANK_PLUGIN(lwk, 1);

struct lwk_config lwk_cfg;
struct lwk_job_request lwk_req;

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	char err[512];

	if (lwk_config_parse(ac, av, &lwk_cfg, err, sizeof(err))) {
		slurm_error("%s", err);
		return -1;
	}
	/* In every context: sbatch ignores the static spank_options table,
	 * and slurmstepd needs the options to receive their values. */
	return lwk_options_register(sp);
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	switch (spank_context()) {
	case S_CTX_LOCAL:
	case S_CTX_ALLOCATOR:
		return lwk_local_post_opt(sp);
	case S_CTX_REMOTE:
		return lwk_remote_post_opt(sp);
	default:
		return 0;
	}
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return spank_context() == S_CTX_REMOTE ? lwk_remote_user_init(sp) : 0;
}

int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return spank_context() == S_CTX_REMOTE ? lwk_remote_task_init_privileged(sp) : 0;
}
