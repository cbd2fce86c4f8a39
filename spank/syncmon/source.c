/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Where a sample's per-process numbers come from (syncmon/sample.h):
 * a BPF iterator (one read for the whole job: a walk of the job
 * cgroup's tasks, or of every task on the node), taskstats (one
 * netlink round trip per process) or /proc/<pid>/stat kept open (one
 * pread per process), fastest first.
 */
#include "syncmon/sample.h"

#include <stdio.h>
#include <string.h>

#define MAX_PIDS 65536 /* as sample.c */

/* Append "what: why" to the fallback note. */
static void note(struct lwk_sampling *s, const char *why)
{
	size_t n = strlen(s->fallback);

	snprintf(s->fallback + n, sizeof(s->fallback) - n, "%s%s", n ? "; " : "", why);
}

static void open_taskstats(struct lwk_sampling *s)
{
	char err[512];

	s->use_taskstats = lwk_taskstats_open(&s->ts, err, sizeof(err)) == 0;
	if (!s->use_taskstats) {
		/* "lwk: taskstats: ..." -> "taskstats: ..." */
		note(s, strncmp(err, "lwk: ", 5) ? err : err + 5);
	}
}

int lwk_sample_source_open(struct lwk_sampling *s, char *err, size_t errlen)
{
	char why[512];

	s->fallback[0] = '\0';
	s->use_bpf = s->use_taskstats = false;
	switch (s->o.source) {
	case LWK_SOURCE_PROC:
		return 0;
	case LWK_SOURCE_TASKSTATS:
		open_taskstats(s);
		return 0;
	case LWK_SOURCE_BPF:
	case LWK_SOURCE_AUTO:
	default:
		break;
	}
	s->ti = lwk_taskiter_open(MAX_PIDS, s->cgroup, why, sizeof(why));
	if (s->ti) {
		s->use_bpf = true;
		return 0;
	}
	if (s->o.source == LWK_SOURCE_BPF) {
		snprintf(err, errlen, "--sync-monitor source=bpf cannot work on this node: %s", why);
		return -1;
	}
	note(s, why);
	open_taskstats(s);
	return 0;
}

void lwk_sample_source_close(struct lwk_sampling *s)
{
	if (s->ti)
		lwk_taskiter_close(s->ti);
	s->ti = NULL;
	s->use_bpf = false;
	if (s->use_taskstats)
		lwk_taskstats_close(&s->ts);
	s->use_taskstats = false;
}

const char *lwk_sample_source_walk(const struct lwk_sampling *s, const char **why)
{
	*why = "";
	return s->use_bpf ? lwk_taskiter_walk(s->ti, why) : "";
}

const char *lwk_sample_source_name(const struct lwk_sampling *s)
{
	return s->use_bpf ? "bpf" : s->use_taskstats ? "taskstats" : "proc";
}
