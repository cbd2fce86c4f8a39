/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Hugepages reserved on one NUMA node, through
 * <sysfs>/devices/system/node/node<N>/hugepages/hugepages-<kB>kB/nr_hugepages,
 * and given back.  The kernel may reserve fewer pages than asked when the
 * node's memory is fragmented: memory is compacted first, and the result
 * says how many pages were really added, so that release gives back
 * exactly those (other jobs' reservations on the node stay).
 */
#ifndef LWK_HUGEPAGES_H
#define LWK_HUGEPAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cpulist.h"

struct lwk_hugepages {
	int node;
	unsigned long page_kb;
	long before; /* nr_hugepages before */
	long wanted; /* pages asked for */
	long added;  /* pages the kernel really added */
};

/* Pages of page_kb on NUMA node now (nr_hugepages), or -1. */
long lwk_hugepages_count(const char *sysfs, int node, unsigned long page_kb);
/* Add `pages` pages on the node; r says what happened.  Adding fewer
 * than asked is not an error here (the caller reports it); -1 only when
 * the files cannot be used. */
int lwk_hugepages_reserve(const char *sysfs, int node, unsigned long page_kb, long pages,
			  struct lwk_hugepages *r, char *err, size_t errlen);
/* Give back r->added pages (or what is left of them). */
int lwk_hugepages_release(const char *sysfs, const struct lwk_hugepages *r, char *err,
			  size_t errlen);

/*
 * mem= outside the job's memory: hugepages come out of a node's free
 * memory, and the node where the OS runs (its daemons, slurmd and
 * slurmstepd, the page cache, the kernel's own allocations) must keep a
 * floor of it free: the larger of LWK_OS_FLOOR_MIN and 1/LWK_OS_FLOOR_DIV
 * of the node's memory.
 */
#define LWK_OS_FLOOR_MIN (256ULL << 20)
#define LWK_OS_FLOOR_DIV 32
uint64_t lwk_hugepages_os_floor(uint64_t node_total);
/* MemTotal and MemFree of a NUMA node, bytes (node<N>/meminfo); -1. */
int lwk_hugepages_node_mem(const char *sysfs, int node, uint64_t *total, uint64_t *free_b);
/* Does the node hold any of these CPUs (node<N>/cpulist)?  True when the
 * list cannot be read: the floor is then kept there too. */
bool lwk_hugepages_node_has(const char *sysfs, int node, const struct lwk_cpuset *cpus);
/*
 * Can `bytes` of hugepages come from the node now, leaving the floor
 * when the OS runs there (os_node)?  0, or -1 with a message for the
 * user naming mem=, what it asks of the node and what is available.
 * A node whose meminfo cannot be read is not judged here (0).
 */
int lwk_hugepages_fit(const char *sysfs, int node, bool os_node, uint64_t bytes, char *err,
		      size_t errlen);

#endif
