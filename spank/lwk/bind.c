/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --lwk: Slurm's binding of a step's tasks on the job's side of the
 * partition.  See lwk/bind.h.
 */
#include <stdlib.h>

#include "lwk/bind.h"

void lwk_bind_carry(const struct lwk_cpuset *side, const struct lwk_cpuset *masks, size_t n,
		    struct lwk_cpuset *out)
{
	unsigned int *use = calloc(LWK_MAX_CPUS, sizeof(*use));
	unsigned int width = lwk_cpuset_count(side);

	/* First the tasks that keep CPUs of theirs: what they use counts. */
	for (size_t i = 0; i < n; i++) {
		out[i] = masks[i];
		lwk_cpuset_and(&out[i], side);
		for (int c = lwk_cpuset_first(&out[i]); use && c >= 0; c = lwk_cpuset_next(&out[i], c))
			use[c]++;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned int want = lwk_cpuset_count(&masks[i]);

		if (lwk_cpuset_count(&out[i]))
			continue;
		if (!use || !want || want >= width) {
			out[i] = *side;
			continue;
		}
		/* want CPUs of side, each time the least used (the lowest
		 * of those), counted as used at once. */
		for (unsigned int k = 0; k < want; k++) {
			int best = -1;

			for (int c = lwk_cpuset_first(side); c >= 0; c = lwk_cpuset_next(side, c))
				if (!lwk_cpuset_isset(&out[i], (unsigned int)c) &&
				    (best < 0 || use[c] < use[best]))
					best = c;
			lwk_cpuset_set(&out[i], (unsigned int)best);
			use[best]++;
		}
	}
	free(use);
}
