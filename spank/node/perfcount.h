/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Counting a whole job with perf_event_open: one event per CPU bound to
 * the job's cgroup (PERF_FLAG_PID_CGROUP: every thread of the cgroup,
 * threads started later included), or one per task with inherit.  The
 * kernel multiplexes events when counters run out; each reading is
 * scaled by time enabled / time running, and says so.
 *
 * Event names resolve through libpfm4 where built in; otherwise, and as
 * the fallback, the generic perf events by their perf(1) names.
 */
#ifndef LWK_PERFCOUNT_H
#define LWK_PERFCOUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/cpulist.h"

#define LWK_PERF_MAX_FDS 1024

struct lwk_perf_event {
	uint32_t type;
	uint64_t config;
	char name[64];
	bool generic; /* resolved from the built-in table, not libpfm4 */
};

struct lwk_perf_counter {
	int n;
	int fds[LWK_PERF_MAX_FDS];
};

struct lwk_perf_reading {
	uint64_t raw;     /* sum of the counts */
	uint64_t scaled;  /* sum of count * enabled / running */
	uint64_t enabled; /* ns, summed over the fds */
	uint64_t running; /* ns, summed over the fds */
};

int lwk_perf_resolve(const char *name, struct lwk_perf_event *ev, char *err, size_t errlen);
/* The attributes a counter of ev is opened with: the job's user mode
 * only, except for the software clocks. */
struct perf_event_attr;
void lwk_perf_attr(const struct lwk_perf_event *ev, struct perf_event_attr *a, bool inherit);
/* count * enabled / running without overflow; 0 when it never ran. */
uint64_t lwk_perf_scale(uint64_t count, uint64_t enabled, uint64_t running);

/* One event per CPU of cpus, counting the processes of the cgroup
 * directory (v2, or the v1 perf_event hierarchy).  Fails with the
 * kernel's reason: ENOENT/EOPNOTSUPP for an event the CPU lacks. */
int lwk_perf_open_cgroup(struct lwk_perf_counter *c, const struct lwk_perf_event *ev,
			 const char *cgroup_dir, const struct lwk_cpuset *cpus, char *err,
			 size_t errlen);
/* One event following pid and, with inherit, the threads and children
 * it creates from now on. */
int lwk_perf_open_task(struct lwk_perf_counter *c, const struct lwk_perf_event *ev, pid_t pid,
		       bool inherit, char *err, size_t errlen);
/* One more thread (tid) to the counter, with inherit its future threads
 * and children too.  Fails with errno ESRCH for a thread gone since. */
int lwk_perf_add_task(struct lwk_perf_counter *c, const struct lwk_perf_event *ev, pid_t tid,
		      bool inherit, char *err, size_t errlen);
int lwk_perf_read(const struct lwk_perf_counter *c, struct lwk_perf_reading *r);
void lwk_perf_close(struct lwk_perf_counter *c);

#endif
