/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef LWK_BIND_H
#define LWK_BIND_H

#include <stddef.h>

#include "common/cpulist.h"

/*
 * Slurm's CPU binding of a step's tasks (task/affinity: --cpu-bind, or
 * its automatic binding) carried onto the side of the partition the
 * tasks run on (side: the App CPUs, or the OS CPUs for helpers).
 * Slurm binds within the whole node, which it gave the job: a task keeps
 * the CPUs of its mask that are on side; a task bound only to CPUs of
 * the other side gets as many of side's CPUs (at most all), those the
 * fewest tasks have, the lowest first; a task Slurm left unbound (its
 * mask holds all of side) gets side.  masks[i] in, out[i] out.
 */
void lwk_bind_carry(const struct lwk_cpuset *side, const struct lwk_cpuset *masks, size_t n,
		    struct lwk_cpuset *out);

#endif
