/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The --sync-monitor sampler's run, for lwk-syncmon's main: it sets
 * itself up as root (CPUs, signals, its pid and log in the state
 * directory, the output file opened as the job's user), samples the
 * job's processes and the node at every tick of the global grid, and
 * writes the header, the samples and the footer of doc/syncmon-format.md.
 */
#ifndef LWK_SYNCMON_SAMPLER_H
#define LWK_SYNCMON_SAMPLER_H

#include <stdint.h>
#include <sys/types.h>

/* What lwk-syncmon's command line says. */
struct lwk_sampler_args {
	uint32_t job;
	const char *node;
	uid_t uid;
	gid_t gid;
	const char *dir;	/* absolute output directory (opened as uid) */
	const char *state;	/* the job's state directory: syncmon.log, syncmon.pid */
	const char *options;	/* the --sync-monitor value, or NULL */
	const char *cgroup;	/* the job's cgroup directory, or NULL */
	const char *proc_root;	/* "/proc", or a test tree */
	const char *cpus;	/* CPUs to run on, or NULL */
	uint64_t orphan_after;	/* s without a job process here before it stops */
	int ready_fd;		/* the starter's pipe, or -1 (see --ready-fd) */
	uint64_t memory_max;	/* bytes of data once the source is open (RLIMIT_DATA) */
	uint64_t cpu_max;	/* hundredths of % of one CPU, on average */
	unsigned fifo;		/* SCHED_FIFO priority (1-99), 0 the normal class */
};

/*
 * Run until SIGTERM or SIGINT, or until the job has had no process on
 * the node for orphan_after seconds.  Returns the exit status: 0, 2 for
 * a bad --options or --cpus, 1 when it could not start sampling, 3 when
 * source=bpf was asked for and cannot work (the reason also goes to
 * ready_fd: the starter fails the job with it).
 */
int lwk_sampler_run(const struct lwk_sampler_args *a);

#endif
