/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef LWK_JOBLIVE_H
#define LWK_JOBLIVE_H

#include <stdbool.h>
#include <stdint.h>

/* Is a slurmstepd of job running on this host (its process title,
 * "slurmstepd: [<job>.<step>]")? */
bool lwk_job_alive(uint32_t job);

#endif
