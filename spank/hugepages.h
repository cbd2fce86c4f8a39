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

#include <stddef.h>

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

#endif
