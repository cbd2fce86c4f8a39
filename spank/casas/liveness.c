/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --contention-aware: what is gone.  A process (named for good by its
 * pid and start time), the probe holding a job, the recorded jobs that
 * no longer run (asked before the node lock).
 */
#define _GNU_SOURCE
#include "casas/internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The start time of process pid (clock ticks after boot, field 22 of
 * <proc>/<pid>/stat): 0 when it is gone.  With the pid it names one
 * process for good: a pid reused later starts later. */
unsigned long long lwk_casas_proc_start(const char *proc, unsigned int pid)
{
	char path[512], buf[1024], *p;
	unsigned long long start = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%u/stat", proc, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* After the command's ")" (it may hold spaces and parentheses):
	 * state is field 3, starttime field 22. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			 &start) != 1)
		return 0;
	return start;
}

/* The probe holding rec, or waiting for its turn (its prober), has
 * ended without giving the hold back: its slurmstepd was killed, or the
 * step ended between the join and the probe.  A record of an older
 * plugin (no prober) is trusted. */
bool lwk_casas_probe_is_gone(const struct lwk_node_roots *r, const struct lwk_casas_record *rec)
{
	return rec->prober_pid &&
	       lwk_casas_proc_start(r->proc, rec->prober_pid) != rec->prober_start;
}

unsigned int lwk_casas_drop_gone_launchers(const struct lwk_node_roots *r,
					   struct lwk_casas_record *rec)
{
	unsigned int dropped = 0;

	for (unsigned int i = 0; i < rec->nlaunchers;) {
		const struct lwk_casas_launcher *l = &rec->launchers[i];

		if (lwk_casas_proc_start(r->proc, l->pid) == l->start) {
			i++;
			continue;
		}
		rec->launchers[i] = rec->launchers[--rec->nlaunchers];
		dropped++;
	}
	return dropped;
}

/* The recorded jobs alive() says are gone (none without alive), but
 * leaving, which is not asked about (its record goes anyway): called
 * before the node lock is taken (casas/internal.h says why). */
void lwk_casas_find_gone(const struct lwk_node_roots *r, bool (*alive)(uint32_t), uint32_t leaving,
			 struct gone_jobs *g)
{
	uint32_t ids[LWK_CASAS_MAX_JOBS];
	int n = alive ? lwk_casas_record_jobs(r, ids, LWK_CASAS_MAX_JOBS) : 0;

	g->n = 0;
	for (int i = 0; i < n; i++)
		if ((!leaving || ids[i] != leaving) && !alive(ids[i]))
			g->ids[g->n++] = ids[i];
}

/* job is one of g (none when g is NULL). */
bool lwk_casas_is_gone(const struct gone_jobs *g, uint32_t job)
{
	for (int i = 0; g && i < g->n; i++)
		if (g->ids[i] == job)
			return true;
	return false;
}
