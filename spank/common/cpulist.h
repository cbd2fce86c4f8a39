/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Linux "cpulist" sets ("0-3,8,10-11"), as found in sysfs, cpusets and
 * Slurm's S_JOB_ALLOC_CORES.  A fixed-size bitmap: the bound is the
 * kernel's own NR_CPUS ceiling, so a hostile list can never make us
 * allocate or index past it.
 */
#ifndef LWK_CPULIST_H
#define LWK_CPULIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LWK_MAX_CPUS 8192

struct lwk_cpuset {
	uint64_t bits[LWK_MAX_CPUS / 64];
};

void lwk_cpuset_zero(struct lwk_cpuset *s);
void lwk_cpuset_set(struct lwk_cpuset *s, unsigned int cpu);
bool lwk_cpuset_isset(const struct lwk_cpuset *s, unsigned int cpu);
unsigned int lwk_cpuset_count(const struct lwk_cpuset *s);
/* Lowest member, or -1 when empty. */
int lwk_cpuset_first(const struct lwk_cpuset *s);
/* Next member after cpu, or -1. */
int lwk_cpuset_next(const struct lwk_cpuset *s, int cpu);
bool lwk_cpuset_equal(const struct lwk_cpuset *a, const struct lwk_cpuset *b);
void lwk_cpuset_or(struct lwk_cpuset *dst, const struct lwk_cpuset *src);
void lwk_cpuset_and(struct lwk_cpuset *dst, const struct lwk_cpuset *src);

/*
 * Parse a cpulist.  Accepts what the kernel prints (ranges, commas, an
 * optional trailing newline, the empty list) and strides "0-10:2" as
 * the kernel's bitmap_parselist does.  Members must be below max
 * (at most LWK_MAX_CPUS).  Returns 0, or -1 with errno = EINVAL or
 * ERANGE and nothing else written than a zeroed set.
 */
int lwk_cpulist_parse(const char *str, unsigned int max, struct lwk_cpuset *out);

/*
 * Print a set in the kernel's compact form.  Returns the length that
 * the full string needs (like snprintf); the output is always
 * NUL-terminated when len > 0.
 */
size_t lwk_cpulist_format(const struct lwk_cpuset *s, char *buf, size_t len);

#endif
