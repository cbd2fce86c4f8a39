/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One --sync-monitor sample: the job's processes and the node's totals
 * at one tick, as one "k" line of doc/syncmon-format.md, and what the
 * sampler keeps from one tick to the next, allocated once.  The ticks,
 * the output and the sampler's process are syncmon/sampler.c.
 */
#ifndef LWK_SYNCMON_SAMPLE_H
#define LWK_SYNCMON_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/options.h"
#include "node/procfs.h"
#include "node/procstat.h"
#include "node/taskiter.h"
#include "node/taskstats.h"

struct lwk_sample_proc; /* a job process as last read */

/* The caller sets o, job, node, cgroup (or NULL) and proc_root, and
 * opens ns and the source (lwk_sample_source_open); the rest is the
 * samples' own. */
struct lwk_sampling {
	struct lwk_syncmon_opts o;
	uint32_t job;
	const char *node, *cgroup, *proc_root;
	/* The job cgroup gives the job's CPU total (v2's cpu.stat, v1's
	 * cpuacct; not v1's freezer), as the sampler found at its start. */
	bool cgroup_cpu;
	uint64_t cgroup_cpu_us;	  /* its last total read */
	uint64_t cgroup_cpu_base; /* the totals of the job cgroups before it */
	dev_t cgroup_dev;	  /* which job cgroup was read: made anew, */
	ino_t cgroup_ino;	  /* it has another inode (0: none yet) */
	size_t slurm_own;	  /* Slurm's own processes at the last listing */
	bool relist;		  /* list the job's pids at the next tick */
	struct lwk_taskstats ts;
	bool use_taskstats;
	struct lwk_taskiter *ti;  /* the batch source, when used (use_bpf) */
	bool use_bpf;
	bool ti_read;		  /* the batch was read this tick */
	bool ti_retry;		  /* the map refused a pid: give the list again */
	uint64_t ti_failures;	  /* reads of the batch that failed */
	char ti_error[128];	  /* why the first one failed */
	char fallback[512];	  /* why a faster source was not used ("" when none) */
	struct lwk_proctab *tab;
	struct lwk_nodestat ns;
	uint64_t prev_busy, prev_total, prev_forks;
	pid_t *pids;
	size_t npids;
	struct lwk_sample_proc *known; /* by index into pids */
	uint64_t *not_job;	  /* pids seen not to be the job's (no cgroup) */
	pid_t *fresh;		  /* this tick's list, compared with pids */
	long clk_tck, page_kb;
	uint64_t empty_since; /* first full scan that found no job process; 0: some */
	char *line;
	size_t line_cap;
};

/*
 * The clock ticks, the page size and all the memory of the samples
 * (pid lists, the proctab, the line).  Returns -1 when an allocation
 * failed (errno says why), else 0.
 */
int lwk_sampling_alloc(struct lwk_sampling *s);

/* Read the job cgroup's CPU total into cgroup_cpu_us, keeping in
 * cgroup_cpu_base what the job cgroups before a making anew had
 * counted; a failed read keeps the last values. */
void lwk_sample_cgroup_cpu(struct lwk_sampling *s);

/*
 * Open the per-process source that s->o.source asks for: bpf, taskstats
 * or proc; auto takes the fastest that works (bpf, then taskstats, then
 * proc) and says in s->fallback why a faster one was not used.  Returns
 * -1 with the reason in err only when source=bpf was asked for and
 * cannot work (the job's tasks fail with it); taskstats asked for and
 * missing falls back to proc, as it always did.  As root, before the
 * sampler gives up any capability.
 */
int lwk_sample_source_open(struct lwk_sampling *s, char *err, size_t errlen);
void lwk_sample_source_close(struct lwk_sampling *s);

/* The name of the source in use: "bpf", "taskstats" or "proc". */
const char *lwk_sample_source_name(const struct lwk_sampling *s);

/* With bpf, its walk: "cgroup" (the job cgroup's tasks) or "tasks"
 * (every task on the node), and in *why the reason it is not the
 * cgroup's; "" for the other sources. */
const char *lwk_sample_source_walk(const struct lwk_sampling *s, const char **why);

/*
 * Build the line of tick k (its ideal time, when it was taken, how late,
 * whether it flushes, whether it scans everything) in s->line; returns
 * its length, and *cost_at is where its cost goes.
 */
size_t lwk_sample_take(struct lwk_sampling *s, uint64_t k, uint64_t t_ideal, uint64_t t,
		       uint64_t late, bool flush, bool full, size_t *cost_at);

#endif
