/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm-lwk: the SPANK entry points.  Each switches on where it runs
 * and hands off to the file for that context:
 *
 *   sbatch, salloc (allocator) and srun (local)  -> lwk_local.c
 *   slurmstepd (remote)                          -> lwk_remote.c
 *   job epilog on each node (job script)         -> lwk_jobscript.c
 *
 * The state these files share is in lwk_state.c.  Everything that
 * decides lives in the parts below (common/, node/, lwk/, syncmon/,
 * casas/, sweep/), which know nothing of SPANK.  Only a negative return is a
 * failure for Slurm.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "lwk_plugin.h"
#include "syncmon/control.h"

SPANK_PLUGIN(lwk, 1);

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	char err[512];

	if (lwk_config_parse(ac, av, &lwk_cfg, err, sizeof(err))) {
		slurm_error("%s", err);
		return -1;
	}
	if (spank_context() == S_CTX_SLURMD) {
		/* slurmd starts: samplers of jobs lost in a crash left state. */
		char node[256];
		int n;

		lwk_node_name(node, sizeof(node));
		n = lwk_syncmon_sweep(lwk_cfg.state_dir, node);
		if (n > 0)
			slurm_info("lwk: removed the state of %d job(s) whose sampler is gone", n);
		lwk_sweep_partitions(node);
		lwk_sweep_casas(node);
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

int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (spank_context() != S_CTX_REMOTE || lwk_req.remote_error[0])
		return 0;
	if (lwk_req.casas_given)
		return lwk_remote_casas_post_fork(sp);
	return lwk_req.lwk_given ? lwk_remote_lwk_post_fork(sp) : 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	(void)sp;
	(void)ac;
	(void)av;
	if (spank_context() == S_CTX_REMOTE)
		lwk_remote_casas_exit();
	return 0;
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	char err[512];

	if (spank_context() != S_CTX_JOB_SCRIPT)
		return 0;
	/* Slurm 22.05 does not call slurm_spank_init before the epilog:
	 * read the plugstack arguments here. */
	if (lwk_config_parse(ac, av, &lwk_cfg, err, sizeof(err))) {
		slurm_error("%s", err);
		return 0; /* a failing epilog drains the node */
	}
	return lwk_jobscript_epilog(sp);
}
