/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What jobs that are gone left on a node, across the parts: see gone.h. */
#include "sweep/gone.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "casas/casasnode.h"
#include "lwk/part.h"
#include "syncmon/control.h"

/*
 * Undo what jobs that are gone left on the node (a teardown that could
 * not undo everything, a slurmd started before the plugin was
 * configured): else every later --lwk job would be refused there while
 * the node looks idle.  Outside the node lock, which the teardowns take;
 * lwk_node_other_job judges again under it.
 */
void lwk_sweep_gone(const struct lwk_node_roots *r, uint32_t job, bool (*alive)(uint32_t),
		    char *log, size_t loglen)
{
	char path[4400], one[2048];
	uint32_t *jobs = malloc(4096 * sizeof(*jobs));
	int n = jobs ? lwk_state_jobs(r->state_root, r->node, jobs, 4096) : 0;

	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s/%" PRIu32, r->state_root, r->node, jobs[i]);
		if (jobs[i] == job || !lwk_part_state_holds(path) || alive(jobs[i]))
			continue;
		snprintf(path, sizeof(path), "%s/%s/%" PRIu32 "/lwk.state", r->state_root, r->node,
			 jobs[i]);
		if (access(path, F_OK) == 0) {
			lwk_part_teardown(r, jobs[i], one, sizeof(one));
			lwk_log_append(log, loglen, "lwk: swept job %" PRIu32 ", gone: %s", jobs[i],
				       one[0] ? one : "nothing to undo");
		}
		/* Its sampler, if one outlived it. */
		lwk_syncmon_stop(r->state_root, r->node, jobs[i], 0, NULL, 0);
	}
	free(jobs);
	lwk_casas_leave(r, 0, alive, one, sizeof(one));
}
