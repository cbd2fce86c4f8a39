/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The job epilog on each node (S_CTX_JOB_SCRIPT, as root): stop what the
 * job started here and return it.  Runs for every job, so it must cost
 * one stat() when the job used nothing.  slurmd calls it only if the
 * plugin was in plugstack.conf when slurmd started.
 */
#include <stdint.h>
#include <string.h>

#include "lwk_plugin.h"
#include "syncmon_ctl.h"

int lwk_jobscript_epilog(spank_t sp)
{
	uint32_t job = 0;
	char node[256], log[4096];
	int rc;

	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS || !job)
		return 0;
	lwk_node_name(node, sizeof(node));
	rc = lwk_syncmon_stop(lwk_cfg.state_dir, node, job, 5000, log, sizeof(log));
	if (rc < 0) {
		slurm_error("lwk: job %u on %s: cannot stop the sampler", job, node);
		return 0; /* never fail an epilog for this: the node would drain */
	}
	/* What the sampler had to say goes to the slurmd log. */
	for (char *save = NULL, *line = strtok_r(log, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		slurm_info("lwk: job %u on %s: %s", job, node, line);
	return 0;
}
