/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The option table, registered with spank_option_register(), and the
 * callback that parses a value into lwk_req.
 *
 * Locally (srun, sbatch, salloc) a bad value makes the callback fail,
 * so the command exits before a job exists.  Remotely (slurmstepd) the
 * same parser runs again, because the value arrives through the job's
 * environment and must not be trusted; there a failing callback would
 * make Slurm drain the node, so the error is kept and reported by
 * failing the job's tasks instead (see lwk_remote.c and on_error=).
 */
#include <stdio.h>
#include <string.h>

#include "lwk_plugin.h"

enum { OPT_LWK, OPT_SYNCMON, OPT_CASAS, OPT_COUNT };

static const struct lwk_option_grammar *const grammars[OPT_COUNT] = {
	[OPT_LWK] = &lwk_grammar_lwk,
	[OPT_SYNCMON] = &lwk_grammar_syncmon,
	[OPT_CASAS] = &lwk_grammar_casas,
};

static int option_cb(int val, const char *optarg, int remote)
{
	void *opts;
	bool *given;
	char err[512];

	switch (val) {
	case OPT_LWK:
		opts = &lwk_req.lwk;
		given = &lwk_req.lwk_given;
		break;
	case OPT_SYNCMON:
		opts = &lwk_req.syncmon;
		given = &lwk_req.syncmon_given;
		break;
	case OPT_CASAS:
		opts = &lwk_req.casas;
		given = &lwk_req.casas_given;
		break;
	default:
		return -1;
	}
	if (lwk_option_parse(grammars[val], optarg, opts, err, sizeof(err)) == 0) {
		*given = true;
		return 0;
	}
	*given = false;
	slurm_error("%s", err);
	if (!remote)
		return -1;
	if (!lwk_req.remote_error[0])
		snprintf(lwk_req.remote_error, sizeof(lwk_req.remote_error), "%s", err);
	return 0;
}

int lwk_options_register(spank_t sp)
{
	static struct spank_option table[OPT_COUNT];
	const bool offered[OPT_COUNT] = {
		[OPT_LWK] = lwk_cfg.offer_lwk,
		[OPT_SYNCMON] = lwk_cfg.offer_syncmon,
		[OPT_CASAS] = lwk_cfg.offer_casas,
	};
	spank_context_t ctx = spank_context();

	for (int i = 0; i < OPT_COUNT; i++) {
		spank_err_t rc;

		if (!offered[i])
			continue;
		table[i] = (struct spank_option){
			.name = (char *)grammars[i]->name,
			.arginfo = (char *)grammars[i]->arginfo,
			.usage = (char *)grammars[i]->usage,
			.has_arg = 2, /* optional: --lwk alone means defaults */
			.val = i,
			.cb = option_cb,
		};
		rc = spank_option_register(sp, &table[i]);
		/* Prolog/epilog and slurmd have no use for options; only a
		 * failure where users pass them matters. */
		if (rc != ESPANK_SUCCESS &&
		    (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR || ctx == S_CTX_REMOTE)) {
			slurm_error("lwk: cannot register --%s: %s", grammars[i]->name,
				    spank_strerror(rc));
			return -1;
		}
	}
	return 0;
}
