/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What jobs that are gone left on a node, whichever part left it: an
 * --lwk partition (torn down), a sampler (stopped), a --contention-aware
 * record (dropped, the die split re-planned).  The one place that reaches
 * into every part, above them: the parts never call each other.
 */
#ifndef LWK_SWEEP_GONE_H
#define LWK_SWEEP_GONE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "node/statedir.h"

/* Before a --lwk setup of job (passed to lwk_part_setup): sweep what
 * the jobs alive() says are gone left, job itself excepted; one log line
 * for each job swept. */
void lwk_sweep_gone(const struct lwk_node_roots *r, uint32_t job, bool (*alive)(uint32_t),
		    char *log, size_t loglen);

#endif
