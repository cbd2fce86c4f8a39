/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * srun (local) and sbatch/salloc (allocator).  Each option's value was
 * already checked by its callback; here come the rules across options,
 * so that a job which cannot work is refused before it exists.
 */
#include "lwk_plugin.h"

static void say(const char *option, const struct lwk_option_grammar *g, const void *opts)
{
	char buf[16384];

	lwk_option_format(g, opts, buf, sizeof(buf));
	slurm_verbose("lwk: --%s %s", option, buf);
}

int lwk_local_post_opt(spank_t sp)
{
	char err[512];

	(void)sp;
	if (lwk_options_combination_check(lwk_req.lwk_given, lwk_req.syncmon_given,
					  lwk_req.casas_given, err, sizeof(err))) {
		slurm_error("%s", err);
		return -1;
	}
	if (lwk_req.lwk_given)
		say("lwk", &lwk_grammar_lwk, &lwk_req.lwk);
	if (lwk_req.syncmon_given)
		say("sync-monitor", &lwk_grammar_syncmon, &lwk_req.syncmon);
	if (lwk_req.casas_given)
		say("contention-aware", &lwk_grammar_casas, &lwk_req.casas);
	return 0;
}
